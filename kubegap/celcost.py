"""What a CEL expression may cost: an estimate at load, a budget at every evaluation.

Neither runtime can be stopped mid-expression (cel-expr-python exposes no cost limit or cancellation,
cel-python has no step counter), so the guard works the way Kubernetes' static estimator does
(k8s.io/apiserver/pkg/apis/cel/config.go and apiextensions validation rules): every operation costs one
unit, and the body of a comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) is paid once per item
of the list it walks, so nested comprehensions multiply. The estimate is a polynomial in the list size N:

- at load, N is `ASSUMED_ITEMS`, and an expression whose estimate exceeds `ESTIMATE_LIMIT` is refused
  (Kubernetes refuses a CRD rule over 10,000,000 the same way). Two nested comprehensions pass, three do
  not;
- before each evaluation, N is the longest list or map the expression can see, and an estimate over the
  runtime's budget (Kubernetes' per-call limit, 1,000,000, for cel-expr; 20,000 for the far slower
  cel-python) is an error result instead of an evaluation.

Simplifications, all on the side of counting more: a list membership test (`in`) and the list helpers
(`joined`, `matchesAny`) cost N; string functions cost one unit whatever the string's length.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubegap.integers import INT64_MAX, INT64_MIN

ASSUMED_ITEMS = 256  # more than a pod template's containers, env or args normally hold
ESTIMATE_LIMIT = 10_000_000  # per expression, as apiextensions' StaticEstimatedCostLimit
RUNTIME_BUDGET = 1_000_000  # per evaluation of one expression, as apiserver's PerCallLimit (cel-expr)
# cel-python, a tree-walking interpreter, runs about 40,000 units a second where cel-expr runs millions
# (benchmarks/bench_celcost.py): its budget buys under a second of work, not the same units.
SLOW_RUNTIME_BUDGET = 20_000

# `str.isascii` held once: compiled, `text.isascii()` looks the method up on the type at every call, and
# the survey asks it of every text and key of every binding
_ISASCII: Final = str.isascii
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_LIST_FUNCTIONS = frozenset({"joined", "matchesAny"})
_TOKEN = re.compile(
    r"""(?P<string>[rRbB]{0,2}(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
    |(?P<number>\d[\w.]*)
    |(?P<name>[A-Za-z_]\w*)
    |(?P<open>[(\[{])
    |(?P<close>[)\]}])
    |(?P<space>\s+)
    |(?P<op>.)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(slots=True, unsafe_hash=True)
class Cost:
    """Cost units as a polynomial in the list size N: `terms[k]` is the coefficient of N**k."""

    terms: tuple[int, ...]

    @property
    def degree(self) -> int:
        return len(self.terms) - 1

    def at(self, items: int) -> int:
        return sum(coefficient * items**power for power, coefficient in enumerate(self.terms))

    def describe(self, items: int) -> str:
        return f"estimated cost {self.at(items):,} for lists of {items:,} items"


def total(costs: Iterable[Cost]) -> Cost:
    """The cost of running all of `costs`: one polynomial, the sum of theirs, so it is evaluated once."""
    terms: list[int] = []
    for cost in costs:
        terms += [0] * (len(cost.terms) - len(terms))
        for power, coefficient in enumerate(cost.terms):
            terms[power] += coefficient
    return Cost(tuple(terms))


def _tokens(source: str) -> Iterator[tuple[str, str]]:
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup
        if kind is not None and kind != "space":
            yield kind, match.group()


_CLOSING = {"(": ")", "[": "]", "{": "}"}


def self_contained(source: str) -> bool:
    """Whether `source` stands on its own inside brackets: its brackets close in order, and no quote or
    comment is left open. A larger expression that compiles then proves it compiles alone
    (kubegap.compiled); `a) || (b` compiles only inside brackets. Where unsure, False."""
    stack: list[str] = []
    previous = ""
    for kind, text in _tokens(source):
        if kind == "open":
            stack.append(_CLOSING[text])
        elif kind == "close":
            if not stack or stack.pop() != text:
                return False
        elif kind == "op" and (text in "\"'" or text == previous == "/"):
            return False  # a quote no string closes, or a comment, which may hide a bracket
        previous = text if kind == "op" else ""
    return not stack


@functools.lru_cache(maxsize=1024)  # at load, most texts are estimated in their batch and again alone
def estimate(source: str) -> Cost:
    """The expression's cost polynomial; `source` must already have compiled."""
    tokens = list(_tokens(source))
    terms: list[int] = [0]
    # One entry per open bracket: (walks the list size N, constant multiplier, commas seen).
    stack: list[list[int]] = []
    literal_sizes: dict[int, int] = {}  # index of a `]` closing a list literal -> its item count

    def pay(extra_power: int = 0) -> None:
        power = sum(entry[0] for entry in stack) + extra_power
        factor = 1
        for entry in stack:
            factor *= entry[1]
        terms.extend([0] * (power + 1 - len(terms)))
        terms[power] += factor

    for index, (kind, text) in enumerate(tokens):
        if kind == "open":
            walks, times = _walk(tokens, index, literal_sizes)
            pay()  # the call, the index or the literal itself
            stack.append([walks, times, 0])
            if walks or times > 1:
                pay()  # each iteration costs at least one unit, however cheap its body
            if text == "(" and index and tokens[index - 1][1] in _LIST_FUNCTIONS:
                pay(1)
        elif kind == "close":
            if stack:
                entry = stack.pop()
                if text == "]" and _is_literal(tokens, _opening(tokens, index)):
                    literal_sizes[index] = entry[2] + 1 if tokens[index - 1][1] != "[" else 0
        elif text == "," and stack:
            stack[-1][2] += 1
        elif kind == "op" and text != ":":
            pay()
        elif kind == "name" and text == "in":
            pay(1)  # a scan of the list on its right
    return Cost(tuple(terms))


def _walk(tokens: list[tuple[str, str]], index: int, literal_sizes: dict[int, int]) -> tuple[int, int]:
    """(1, 1) when the bracket at `index` opens a comprehension over a list of unknown size N, (0, k)
    over a list literal of k items, (0, 1) for any other bracket."""
    if tokens[index][1] != "(" or index < 2 or tokens[index - 2] != ("op", "."):
        return 0, 1
    name = tokens[index - 1]
    if name[0] != "name" or name[1] not in _MACROS:
        return 0, 1
    if index - 3 in literal_sizes:
        return 0, max(literal_sizes[index - 3], 1)
    return 1, 1


def _opening(tokens: list[tuple[str, str]], close: int) -> int:
    depth = 0
    for index in range(close, -1, -1):
        kind = tokens[index][0]
        depth += kind == "close"
        depth -= kind == "open"
        if depth == 0:
            return index
    return 0


def _is_literal(tokens: list[tuple[str, str]], open_index: int) -> bool:
    """A `[` that starts a list rather than indexing what stands before it."""
    return open_index == 0 or tokens[open_index - 1][0] not in ("name", "close", "string", "number")


def longest(value: Any) -> int:
    """The length of the longest list or map anywhere in `value`: the N a comprehension may walk."""
    return survey(value)[0]


def survey(value: Any) -> tuple[int, bool]:
    """`longest(value)`, and whether CEL takes `value` as it is: dicts with text keys, lists, and scalars,
    with every integer within int64 and all text valid Unicode. Only then does the Python fast path answer
    (kubegap.fastcel): cel-expr converts a variable whole on first use and fails on an integer past int64
    anywhere in it (measured), and a lone surrogate, which a JSON string may hold, is no UTF-8 text."""
    best = 0
    plain = True
    stack: list[Any] = [(value,)]  # collections of values to look at; the root's is not measured
    while stack:
        for each in stack.pop():
            kind = type(each)
            # facts are plain dicts and lists of scalars: exact type tests first
            # typed names where the type is known: compiled code then calls the type's own operations
            if kind is str:
                text: str = each
                if plain and not _ISASCII(text):
                    plain = _utf8(text)
            elif kind is dict:
                mapping: dict[Any, Any] = each
                size = len(mapping)  # compared, not `max()`: a call into Python from compiled code
                if size > best:
                    best = size
                if plain:  # each key looked at in place: joining them made a text per map (15% slower)
                    for key in mapping:
                        if type(key) is not str or not (_ISASCII(key) or _utf8(key)):
                            plain = False
                            break
                stack.append(mapping.values())
            elif kind is list:
                items: list[Any] = each
                size = len(items)
                if size > best:
                    best = size
                stack.append(items)
            elif kind is int:
                number: int = each
                if not INT64_MIN <= number <= INT64_MAX:
                    plain = False
            elif kind is float or kind is bool or each is None:
                continue
            else:
                plain = False
                if isinstance(each, Mapping):
                    best = max(best, len(each))
                    stack.append(each.values())
                elif isinstance(each, list | tuple):
                    best = max(best, len(each))
                    stack.append(each)
    return best, plain


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True

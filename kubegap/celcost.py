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

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

ASSUMED_ITEMS = 256  # more than a pod template's containers, env or args normally hold
ESTIMATE_LIMIT = 10_000_000  # per expression, as apiextensions' StaticEstimatedCostLimit
RUNTIME_BUDGET = 1_000_000  # per evaluation of one expression, as apiserver's PerCallLimit (cel-expr)
# cel-python, a tree-walking interpreter, runs about 40,000 units a second where cel-expr runs millions
# (benchmarks/bench_celcost.py): its budget buys under a second of work, not the same units.
SLOW_RUNTIME_BUDGET = 20_000

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


@dataclass(frozen=True, slots=True)
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


def _tokens(source: str) -> Iterator[tuple[str, str]]:
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup
        if kind is not None and kind != "space":
            yield kind, match.group()


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
    best = 0
    stack = [value]
    push = stack.append
    while stack:
        item = stack.pop()
        kind = type(item)
        # facts are plain dicts and lists of scalars: exact type tests, and scalars never pushed, halve
        # the time of the abstract-type checks every value would otherwise take
        if kind is dict or kind is list or kind is tuple:
            best = max(best, len(item))
            for each in item.values() if kind is dict else item:
                if type(each) not in _SCALARS:
                    push(each)
        elif kind in _SCALARS:
            continue
        elif isinstance(item, Mapping):
            best = max(best, len(item))
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            best = max(best, len(item))
            stack.extend(item)
    return best


_SCALARS = frozenset({str, int, float, bool, type(None)})

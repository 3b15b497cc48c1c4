"""CEL compiled to Python over plain values: a fast path that answers only where it is sure.

Converting an object's facts into CEL values is most of what a CEL call costs (kubegap.batch), and it is
paid again for every object. A program compiled to Python reads the facts as they are. It gives the
answer CEL gives, or raises; then the CEL runtime evaluates the same program, so every error, and every
case the fast path does not know, keeps the runtime's answer and message:

- operators and functions check their operands' CEL types and leave anything doubtful to the runtime
  (kubegap.celops); the commonest (a key, `has`, a range, a bool, `==` against a literal of the same
  type, an ordering against a number, a text key `in` a map) test an operand that reads a variable in
  place, and call celops only when it is not what CEL expects; `!` and `== true` on what can only be a
  bool (a relation, `&&`, a macro that answers one) need no test at all;
- `&&`, `||`, `?:` and the macros run left to right and stop early. Where nothing raises, that is CEL's
  answer (CEL's commutative `&&` and `||` differ only where one side errs, and that raises here). Except
  around comprehensions: cel-python evaluates every operand of `&&` and `||`, and an error inside a
  comprehension (`map`, `filter`, `exists_one`, a range that is no list) escapes them where cel-expr's
  answer stands (measured; `all`, `exists` and `?:` contain it). So an operand of `&&` or `||` holding a
  comprehension is always evaluated, and must not raise;
- an expression using CEL the fast path does not know (kubegap.celparse) is not compiled at all.

The bundled policies' programs are written ahead into kubegap/fastahead.py, which mypyc compiles with the
per-object path; any other program is compiled to Python when its policies load.

`tests/test_fastcel.py` compares it with the runtime on every bundled example and on generated values.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kubegap import cel, celops, fastahead
from kubegap.celparse import RELATIONS, Tree, Unsupported, parse

FastProgram = Callable[[Mapping[str, Any]], Any]

_OPERATORS = {
    "+": "add",
    "-": "subtract",
    "*": "multiply",
    "/": "divide",
    "%": "modulo",
    "==": "equal",
    "!=": "not_equal",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
    "in": "contained",
}
# name, whether it is called on a target, arity -> the celops function
_FUNCTIONS = {
    ("size", False, 1): "size",
    ("size", True, 0): "size",
    ("string", False, 1): "string",
    ("int", False, 1): "integer",
    ("double", False, 1): "double",
    ("startsWith", True, 1): "starts_with",
    ("endsWith", True, 1): "ends_with",
    ("contains", True, 1): "contains",
    ("matches", True, 1): "matches",
    ("matches", False, 2): "matches",
    ("durationText", False, 1): "duration_text",
    ("matchesAny", False, 2): "matches_any",
    ("joined", False, 1): "joined",
}
# every celops function a program may call, bound as a global of the program (one lookup, not two)
_USED = frozenset(
    {*_OPERATORS.values(), *_FUNCTIONS.values()}
    | {"has", "index", "mapping", "negate", "minus", "boolean", "listed"}
)
_BOOLEAN_CALLS = frozenset({"starts_with", "ends_with", "contains", "matches", "matches_any"})
# A literal's types whose `==` against a value of the same type is Python's (kubegap.celops.equal)
_SAME_TYPE = frozenset({"str", "bool", "int", "float"})
_ORDERINGS = frozenset({"<", "<=", ">", ">="})


def enabled() -> bool:
    """`KUBEGAP_CEL_FAST=0` leaves every program to the runtime: to tell a fast-path answer from CEL's."""
    return os.environ.get("KUBEGAP_CEL_FAST", "1") != "0"


def compile_fast(source: str) -> FastProgram | None:
    """`source` as a Python function of the bindings; None where it uses CEL the fast path does not know."""
    # A bundled policy's program, written ahead and compiled with the rest (below), found by its CEL text:
    # parsing and writing the six bundled programs again was 20 ms of every command's start.
    ahead = fastahead.PROGRAMS.get(digest(source))
    if ahead is not None:
        return ahead
    body = write(source)
    if body is None:
        return None
    namespace: dict[str, Any] = {f"o_{name}": getattr(celops, name) for name in _USED}
    try:  # the text is written from a parsed tree: names are prefixed, literals written by repr()
        with warnings.catch_warnings():
            # Python warns on its stderr about a literal indexed by a name (CEL `[1].a`, `null.a`): such a
            # program only errs, so it is left to the runtime instead (the warning becomes a SyntaxError)
            warnings.simplefilter("error", SyntaxWarning)
            exec(compile(f"def program(A):\n{body}", "<kubegap.fastcel>", "exec"), namespace)
    except (SyntaxError, RecursionError, MemoryError):  # or nested deeper than Python's parser takes
        return None
    program: FastProgram = namespace["program"]
    return program


def write(source: str) -> str | None:
    """The body of `source`'s Python function of the bindings `A`, indented; None where it uses CEL the fast
    path does not know."""
    try:
        writer = _Writer()
        body = writer.expr(parse(source), frozenset())
    except (Unsupported, RecursionError):
        return None
    lines = [f"    b_{name} = A[{name!r}]" for name in sorted(writer.bindings)]
    return "\n".join([*lines, f"    return {body}", ""])


def digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def ahead_module(sources: Iterable[str], compiled: Iterable[str]) -> str:
    """The text of kubegap/fastahead.py: the programs of `sources` (the bundled policies' scope programs,
    kubegap.batch) as functions of a module, so that mypyc compiles them with the per-object path (setup.py).
    Compiled, they take about half the time of the same text run by the interpreter, and call celops'
    functions directly (docs/speed.md). The body of each is `write`'s, byte for byte, found by the digest
    of its CEL text: a program whose text has changed since is compiled at run time, as any other policy's
    (and tests/test_fastcel.py fails while the module differs from what `write` gives today). `compiled`
    are the expressions cel-expr compiled as the policies loaded, which need no proof at load
    (kubegap.compiled), by their digests too."""
    bodies = {digest(s): b for s in sources if (b := write(s)) is not None}
    lines = [
        '"""The bundled policies\' CEL programs as Python, written ahead so that mypyc compiles them',
        "(kubegap.fastcel.ahead_module) by `python -m kubegap.fastcel`. Not to be edited:",
        'tests/test_fastcel.py fails while this text differs from what the bundled policies give."""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Callable, Mapping",
        "from typing import Any",
        "",
        *(f"from kubegap.celops import {name} as o_{name}" for name in sorted(_USED)),
        "",
    ]
    names = {}
    for index, (key, body) in enumerate(sorted(bodies.items())):
        names[key] = f"program_{index}"
        lines += ["", f"def program_{index}(A: Mapping[str, Any]) -> Any:", body.rstrip("\n"), ""]
    lines += ["", "# the digest of each program's CEL text (kubegap.fastcel.digest) -> its function"]
    lines += ["PROGRAMS: dict[str, Callable[[Mapping[str, Any]], Any]] = {"]
    lines += [f'    "{key}": {name},' for key, name in names.items()]
    lines += ["}", ""]
    lines += ["# the digests of the expressions cel-expr compiled as the bundled policies loaded"]
    lines += ["COMPILED: frozenset[str] = frozenset(", "    {"]
    lines += [f'        "{key}",' for key in sorted({digest(s) for s in compiled})]
    lines += ["    }", ")", ""]
    return "\n".join(lines)


def run(program: FastProgram, bindings: Mapping[str, Any]) -> Any:
    """The program's value; raises `celops.Unsure` where only the runtime can tell."""
    try:
        return program(bindings)  # bindings hold no tuples (kubegap.celcost.survey): neither does the value
    except celops.Unsure:
        raise
    except Exception as err:  # any other failure in Python is an error or a doubt in CEL: ask the runtime
        raise celops.Unsure from err


class _Writer:
    def __init__(self) -> None:
        self.bindings: set[str] = set()

    def expr(self, tree: Tree, local: frozenset[str]) -> str:
        kind = tree[0]
        if kind == "lit":
            return repr(tree[1])
        if kind == "id":
            if tree[1] in local:
                return f"c_{tree[1]}"
            self.bindings.add(tree[1])
            return f"b_{tree[1]}"
        if kind == "sel":
            return f"{self.expr(tree[1], local)}[{tree[2]!r}]"  # a list or a string raises TypeError
        if kind == "has":
            target = self.expr(tree[1], local)
            if _simple(tree[1]):
                return (
                    f"({tree[2]!r} in {target} if type({target}) is dict else o_has({target}, {tree[2]!r}))"
                )
            return f"o_has({target}, {tree[2]!r})"
        if kind == "index":
            bound = _bound_once(tree)
            if bound is not None:  # `[e].map(v, body)[0]`, as kubegap.batch binds a unit's values
                value, variable, body = bound
                each = f"for c_{variable} in ({self.expr(value, local)},)"
                return f"[{self.expr(body, local | {variable})} {each}][0]"
            target, key = self.expr(tree[1], local), self.expr(tree[2], local)
            if _simple(tree[1]) and tree[2][0] == "lit" and type(tree[2][1]) is str:
                return f"({target}[{key}] if type({target}) is dict else o_index({target}, {key}))"
            return f"o_index({target}, {key})"
        if kind == "list":
            return f"[{', '.join(self.expr(t, local) for t in tree[1])}]"
        if kind == "map":
            pairs = ", ".join(f"({self.expr(k, local)}, {self.expr(v, local)})" for k, v in tree[1])
            return f"o_mapping(({pairs},))" if pairs else "{}"
        if kind == "not":
            if _is_boolean(tree[1]):  # a bool by construction: no check to make
                return f"(not {self.expr(tree[1], local)})"
            return f"o_negate({self.expr(tree[1], local)})"
        if kind == "neg":
            return f"o_minus({self.expr(tree[1], local)})"
        if kind in ("and", "or"):
            chain = _chain(tree, kind)
            parts = [self.boolean(t, local) for t in chain]
            if any(_has_macro(t) for t in chain[1:]):  # every operand, as cel-python (see the module text)
                return f"{'all' if kind == 'and' else 'any'}(({', '.join(parts)},))"
            return f"({f' {kind} '.join(parts)})"
        if kind == "cond":
            test, then, otherwise = (self.expr(t, local) for t in tree[1:])
            return f"({then} if {self.boolean(tree[1], local, test)} else {otherwise})"
        if kind == "op":
            return self.operator(tree, local)
        if kind == "call":
            return self.call(tree, local)
        if kind == "macro":
            return self.macro(tree, local)
        raise Unsupported(kind)

    def boolean(self, tree: Tree, local: frozenset[str], written: str | None = None) -> str:
        """`tree` where CEL needs a bool: checked, unless it cannot be anything else."""
        text = written if written is not None else self.expr(tree, local)
        if _is_boolean(tree):
            return text
        if _simple(tree):
            return f"({text} if {text} is True or {text} is False else o_boolean({text}))"
        return f"o_boolean({text})"

    def operator(self, tree: Tree, local: frozenset[str]) -> str:
        symbol, left, right = tree[1], self.expr(tree[2], local), self.expr(tree[3], local)
        called = f"o_{_OPERATORS[symbol]}({left}, {right})"
        literal = type(tree[3][1]).__name__ if tree[3][0] == "lit" else None
        if symbol in ("==", "!=") and literal == "bool" and _is_boolean(tree[2]):
            # a bool by construction against a bool (`appliesTo == true`, as kubegap.batch writes): itself,
            # or its negation
            return f"({left})" if (symbol == "==") == tree[3][1] else f"(not {left})"
        # `==` against a literal of the same type, and a number ordered against one of its own type, are
        # Python's (kubegap.celops.equal, less and the rest)
        same = (symbol in ("==", "!=") and literal in _SAME_TYPE) or (
            symbol in _ORDERINGS and literal in ("int", "float")
        )
        if same and _simple(tree[2]):
            return f"({left} {symbol} {right} if type({left}) is {literal} else {called})"
        if symbol == "in" and _simple(tree[3]):  # a text key of a map: a literal's, or a variable's
            text = tree[2][0] == "lit" and type(tree[2][1]) is str
            if text or _simple(tree[2]):
                tested = "" if text else f" and type({left}) is str"
                return f"({left} in {right} if type({right}) is dict{tested} else {called})"
        return called

    def call(self, tree: Tree, local: frozenset[str]) -> str:
        name, target, args = tree[1], tree[2], tree[3]
        found = _FUNCTIONS.get((name, target is not None, len(args)))
        if found is None:
            raise Unsupported(f"function {name}")
        if found == "contains" and not _converted(target, local):
            raise Unsupported("contains() on text the expression may have built")
        values = [self.expr(t, local) for t in ((target,) if target is not None else ()) + args]
        return f"o_{found}({', '.join(values)})"

    def macro(self, tree: Tree, local: frozenset[str]) -> str:
        name, target, variable, args = tree[1:]
        items = self.expr(target, local)  # evaluated outside the variable's scope, as in CEL
        items = (
            f"({items} if type({items}) is list else o_listed({items}))"
            if _simple(target)
            else f"o_listed({items})"
        )
        inner = local | {variable}
        each = f"for c_{variable} in {items}"
        if name == "map":
            return f"[{self.expr(args[0], inner)} {each}]"
        test = self.boolean(args[0], inner)
        if name == "filter":
            return f"[c_{variable} {each} if {test}]"
        if name == "exists":
            return f"any({test} {each})"
        if name == "all":
            return f"all({test} {each})"
        return f"(sum(1 {each} if {test}) == 1)"  # exists_one


def _simple(tree: Tree) -> bool:
    """Whether `tree` reads a variable or selects from one: written twice, it costs no call. Such an operand
    is tested in place (`x if type(x) is list else o_listed(x)`), and celops called only for the rest:
    most operands are what CEL expects, and a call costs more than the test. (A literal is left to celops:
    Python warns on `1 is True`, and the program would not compile.)"""
    while tree[0] == "sel":
        tree = tree[1]
    kind: str = tree[0]
    return kind == "id"


def _bound_once(tree: Tree) -> tuple[Tree, str, Tree] | None:
    """(e, v, body) of `[e].map(v, body)[0]`: body with v bound to e, read without a list or an index."""
    target, key = tree[1], tree[2]
    if key != ("lit", 0) or type(key[1]) is not int or target[0] != "macro" or target[1] != "map":
        return None
    items, variable, args = target[2], target[3], target[4]
    if items[0] != "list" or len(items[1]) != 1 or len(args) != 1:
        return None
    return items[1][0], variable, args[0]


def _converted(tree: Tree, local: frozenset[str]) -> bool:
    """Whether `tree` reads a literal or a binding. cel-python's `contains` fails on text that `+` built (it
    becomes a Python str, measured); such text can come only from the expression or a macro's variable."""
    while tree[0] in ("sel", "index"):
        tree = tree[1]
    return tree[0] == "lit" or (tree[0] == "id" and tree[1] not in local)


def _has_macro(tree: Any) -> bool:
    """Whether a comprehension is anywhere in `tree` (a node, or a tuple of nodes or of pairs)."""
    if type(tree) is not tuple:
        return False
    return (bool(tree) and tree[0] == "macro") or any(_has_macro(t) for t in tree)


def _chain(tree: Tree, kind: str) -> list[Tree]:
    """`a && b && c` as [a, b, c]: one flat Python `and`, not nested ones (Python's parser nests only so
    deep)."""
    out = []
    stack = [tree]
    while stack:
        item = stack.pop()
        if item[0] == kind:
            stack.extend((item[2], item[1]))
        else:
            out.append(item)
    return out


def _is_boolean(tree: Tree) -> bool:
    kind = tree[0]
    if kind in ("and", "or", "not", "has"):
        return True
    if kind == "op":
        return tree[1] in RELATIONS
    if kind == "macro":
        return tree[1] in ("all", "exists", "exists_one")
    if kind == "call":
        return _FUNCTIONS.get((tree[1], tree[2] is not None, len(tree[3]))) in _BOOLEAN_CALLS
    return kind == "lit" and type(tree[1]) is bool


class _Recording:
    """cel-expr under another name, noting each expression it compiles: by that name, kubegap.compiled takes
    nothing as compiled ahead, and so compiles every expression it must prove."""

    name = "recording"

    def __init__(self) -> None:
        self._backend = cel.backend("cel-expr")
        self.cost_budget = self._backend.cost_budget
        self.compiled: list[str] = []

    def compile(self, source: str) -> cel.Program:
        program = self._backend.compile(source)
        self.compiled.append(source)
        return program

    def convert(self, value: Any) -> Any:
        return self._backend.convert(value)

    def activation(self, bindings: Mapping[str, Any]) -> Any:
        return self._backend.activation(bindings)


def ahead_text() -> str:
    """What kubegap/fastahead.py holds for the bundled policies, as the default settings load them."""
    from kubegap import policy
    from kubegap.compiled import compile_policies
    from kubegap.config import Settings
    from kubegap.evaluate import build_engine

    settings, recording = Settings(), _Recording()
    compile_policies(policy.load(settings.policy_dirs), settings, recording)
    programs = build_engine(settings).scope_programs.values()
    return ahead_module((p.source for p in programs), recording.compiled)


def main() -> None:
    """Writes kubegap/fastahead.py anew (`python -m kubegap.fastcel`). The text is made before the file is
    opened: making it imports the module it replaces."""
    text = ahead_text()
    path = Path(__file__).with_name("fastahead.py")
    path.write_text(text)
    print(f"kubegap: wrote {path} ({len(text):,} characters)", file=sys.stderr)


if __name__ == "__main__":
    main()

"""The load-time check of what each policy expression reads, against the facts contract (`contract.py`).

Both CEL runtimes see the facts as dynamic maps, so neither can refuse `container.colectiveTimeout` when it
compiles; at run time it would be an `error` on every object. This walks the parsed expression instead
(cel-python's grammar, which both runtimes' policies keep to) and follows every path from a variable:
field selection, indexing with a string literal, `has()`, and the bound variable of `all`, `exists`,
`exists_one`, `map` and `filter`, typed by the list or map it walks. `params`, `paramsText` and
`variables` are checked against the policy's own parameters and variables; `object`, the raw Kubernetes
object, is not checked. An expression cel-python cannot parse is left to the compiler's error.
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubegap.errors import PolicyError
from kubegap.facts.contract import SCOPES
from kubegap.facts.declare import STRING, ListOf, MapOf, Record, Scalar, Type

if TYPE_CHECKING:
    from kubegap.policy import Policy

_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_CEL_TYPES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "type", "dyn"})
_UNCHECKED = "object"  # the raw Kubernetes object: any shape
# Nodes whose one child carries the value through unchanged.
_THROUGH = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
    | {"primary", "paren_expr"}
)


@dataclass(slots=True, unsafe_hash=True)
class _Names:
    """`params`, `paramsText`, `variables`: fixed names with values the contract does not type."""

    what: str  # "parameter", "variable"
    names: frozenset[str]
    value: Type | None


_Seen = Type | _Names | None  # None: a value whose type is not known here (dyn)


class _Walk:
    def __init__(self, scope: str, known: Mapping[str, _Seen]) -> None:
        self.scope, self.known = scope, known
        self.problems: list[str] = []

    def value(self, node: Any, bound: Mapping[str, _Seen]) -> tuple[_Seen, str | None]:
        """The type of what `node` yields and its text as a path (`container.env`), both None when unknown."""
        kids = [c for c in node.children if hasattr(c, "data")]
        kind = node.data
        if kind in _THROUGH and len(node.children) == 1 and len(kids) == 1:
            return self.value(kids[0], bound)
        if kind == "ident":
            return self._name(str(node.children[0]), bound)
        if kind == "member_dot":
            target, text = self.value(node.children[0], bound)
            return self._select(target, text, str(node.children[1]))
        if kind == "member_index":
            return self._index(node, bound)
        if kind == "member_dot_arg":
            return self._method(node, bound)
        for kid in kids:
            self.value(kid, bound)
        return None, None

    def _name(self, name: str, bound: Mapping[str, _Seen]) -> tuple[_Seen, str | None]:
        if name in bound:
            return bound[name], name
        if name in self.known:
            return self.known[name], name
        if name in _CEL_TYPES or name == _UNCHECKED:
            return None, None
        if name == "variables":
            self.problems.append("reads variables, which only validations see")
        elif any(name in variables for variables in SCOPES.values()):
            self.problems.append(f"reads {name}, which {self.scope}-scope expressions do not see")
        else:
            hint = _hint(name, [*bound, *self.known, _UNCHECKED])
            self.problems.append(f"reads {name}, which is not a variable{hint}")
        return None, None

    def _select(self, target: _Seen, text: str | None, name: str) -> tuple[_Seen, str | None]:
        path = f"{text}.{name}" if text else name
        if target is None or isinstance(target, MapOf):
            return (target.value if target else None), path
        if isinstance(target, _Names):
            if name in target.names:
                return target.value, path
            self.problems.append(
                f"reads {path}: the policy has no {target.what} {name}{_hint(name, target.names)}"
            )
        elif isinstance(target, Record):
            found = target.field(name)
            if found is not None:
                return found.type, path
            self.problems.append(
                f"reads {path}, which the facts contract does not declare ({target.name}: no field {name})"
                + _hint(name, target.names())
            )
        else:
            self.problems.append(f"reads {path}, but {text} is a {target.describe()}, which has no fields")
        return None, None

    def _index(self, node: Any, bound: Mapping[str, _Seen]) -> tuple[_Seen, str | None]:
        target, text = self.value(node.children[0], bound)
        self.value(node.children[1], bound)
        key = _string_literal(node.children[1])
        if isinstance(target, Record | _Names) and key is not None:
            return self._select(target, text, key)
        where = (f"{text}[{key!r}]" if key is not None else f"{text}[...]") if text else None
        if isinstance(target, ListOf):
            return target.item, where
        if isinstance(target, MapOf):
            return target.value, where
        return None, None

    def _method(self, node: Any, bound: Mapping[str, _Seen]) -> tuple[_Seen, str | None]:
        target, _ = self.value(node.children[0], bound)
        method, args = str(node.children[1]), _arguments(node.children[2] if len(node.children) > 2 else None)
        variable = _bare_name(args[0]) if method in _MACROS and len(args) >= 2 else None
        if variable is None:
            for arg in args:
                self.value(arg, bound)
            return None, None
        inner = {**bound, variable: _element(target)}
        body = [self.value(arg, inner)[0] for arg in args[1:]]
        if method == "filter":
            return target, None
        if method == "map":
            return (
                ListOf(body[-1]) if isinstance(body[-1], Scalar | Record | ListOf | MapOf) else None
            ), None
        return None, None


def _element(target: _Seen) -> _Seen:
    """What a comprehension's variable holds: a list's items, or a map's keys (strings)."""
    if isinstance(target, ListOf):
        return target.item
    return STRING if isinstance(target, MapOf | Record) else None


def _arguments(node: Any) -> list[Any]:
    return [] if node is None else [c for c in node.children if hasattr(c, "data")]


def _leaf(node: Any) -> Any:
    """The single node at the bottom of a chain of pass-through nodes."""
    while node.data in _THROUGH and len(node.children) == 1 and hasattr(node.children[0], "data"):
        node = node.children[0]
    return node


def _bare_name(node: Any) -> str | None:
    leaf = _leaf(node)
    return str(leaf.children[0]) if leaf.data == "ident" else None


def _string_literal(node: Any) -> str | None:
    leaf = _leaf(node)
    if leaf.data != "literal" or getattr(leaf.children[0], "type", "") != "STRING_LIT":
        return None
    try:
        value = ast.literal_eval(str(leaf.children[0]))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def _hint(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"; did you mean {close[0]}?" if close else " (docs/facts.md lists the facts)"


@functools.cache
def _parser() -> Any:
    from celpy.celparser import CELParser

    return CELParser()


@functools.lru_cache(maxsize=1024)
def _tree(expression: str) -> Any:
    """The parse tree, None where cel-python cannot parse it (the compiler then names the error)."""
    from celpy.celparser import CELParseError

    try:
        return _parser().parse(expression)
    except CELParseError:
        return None


def problems(
    expression: str,
    scope: str,
    params: Iterable[str],
    variables: Iterable[str] | None,
    globbed: Iterable[str] = (),
) -> list[str]:
    """What `expression`, evaluated at `scope`, reads that is not there; [] when all is declared.
    `variables`: the policy variables it sees, None where `variables` is not bound (appliesTo, variables);
    `globbed`: the policy's `globs` parameters."""
    tree = _tree(expression)
    if tree is None:
        return []
    params = frozenset(params)
    known: dict[str, _Seen] = {
        **SCOPES[scope],
        "params": _Names("parameter", params, None),
        "paramsText": _Names("parameter", params, STRING),
        "globbed": _Names("globs parameter", frozenset(globbed), ListOf(STRING)),
    }
    if variables is not None:
        known["variables"] = _Names("variable", frozenset(variables), None)
    walk = _Walk(scope, known)
    walk.value(tree, {})
    return list(dict.fromkeys(walk.problems))


def _expressions(policy: Policy) -> Iterator[tuple[str, str, str, tuple[str, ...] | None]]:
    """(where, expression, scope, visible variable names or None) of every expression of the policy."""
    scopes = sorted({v.scope for v in policy.validations})
    for scope in scopes if policy.applies_to else ():
        yield "appliesTo", policy.applies_to or "", scope, None
    for variable in policy.variables:
        yield f"variable {variable.name}", variable.expression, variable.scope, None
    for v in policy.validations:
        names = tuple(x.name for x in policy.variables if x.scope == v.scope)
        for label, text in (
            ("", v.expression),
            (" appliesTo", v.applies_to),
            (" messageExpression", v.message_expression),
            (" fieldPathExpression", v.field_path_expression),
        ):
            if text:
                yield f"validation {v.name}{label}", text, v.scope, names


# CEL string literals, so that a word inside one is not taken for code: raw ones (no escapes) first, then
# the others, triple-quoted or not, each with an optional bytes prefix.
_STRING_LITERAL = re.compile(
    r"""(?:[bB]?[rR]|[rR][bB])(?:'''.*?'''|\"\"\".*?\"\"\"|'[^'\n]*'|"[^"\n]*")"""
    r"""|[bB]?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")""",
    re.DOTALL,
)
_OBJECT = re.compile(r"(?<![.\w])object\b")


def reads_object(policy: Policy) -> bool:
    """Whether some expression names `object`, the raw Kubernetes object, outside a string literal: only
    then is the object converted for CEL and its depth bounded. A comprehension variable named `object`
    counts too, which costs only that walk."""
    return any(names_object(text) for _, text, _, _ in _expressions(policy))


def names_object(expression: str) -> bool:
    return _OBJECT.search(_outside_strings(expression)) is not None


@functools.lru_cache(maxsize=1024)  # the engine and its batches ask of the same texts as they load
def _outside_strings(expression: str) -> str:
    return _STRING_LITERAL.sub("", expression)


# A role, a field path (`path`, `envPaths`, `trainerPath`), or a unit's facts taken whole or by a key
# computed at run time (`container[k]`): all that twin templates' units differ in (kubegap.facts.twins).
_PLACE = re.compile(
    r"(?<!\w)(?:role|\w*[pP]ath\w*)\b|(?<![.\w])(?:template|container|node|pool|claim)\b(?!\s*\.)"
)


def reads_place(policy: Policy) -> bool:
    """Whether a verdict of the policy (its appliesTo, variables, validations and their appliesTo, not its
    messages and field paths) may read where a unit is rather than what it holds: only a policy that
    does not has its verdict on a twin template's units taken from the first twin's."""
    verdicts = (
        t
        for w, t, _, _ in _expressions(policy)
        if not w.endswith((" messageExpression", " fieldPathExpression"))
    )
    return any(names_place(text) for text in verdicts)


def names_place(expression: str | None) -> bool:
    """Whether the expression may read a unit's role or a field path (`_PLACE`), outside string literals."""
    return expression is not None and _PLACE.search(_outside_strings(expression)) is not None


def check(policy: Policy) -> None:
    """Refuse a policy whose expressions read a fact, parameter or variable that is not there."""
    params = [p.name for p in policy.params]
    globbed = [p.name for p in policy.params if p.type == "globs"]
    for where, text, scope, names in _expressions(policy):
        found = problems(text, scope, params, names, globbed)
        if found:
            raise PolicyError(
                f"{policy.source}: policy {policy.id}, {where}: "
                + "; ".join(found)
                + f"\n  expression: {text}"
            )

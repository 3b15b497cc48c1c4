"""The quick way from a composed YAML node tree to data, for `kubegap.yamlguard.load`.

PyYAML's SafeConstructor pays for generality on every node: a generic dispatch, a memo of every
constructed object (for aliases), generators that fill mappings later (for recursion) and a merge-key pass
per mapping. A manifest is almost always a plain tree of plain scalars, so `build` makes its data in one
iterative walk that also checks the depth limit. It only accepts what it is sure of: on anything else
(a tag other than the plain ones, a duplicate or non-scalar key, a merge key, a number out of range, a
scalar its tag cannot read, nesting past the limit) it raises `Unsure` and the caller runs the careful
path, which builds the same data or reports the error exactly as before. A document whose text has
both `&` and `*` comes here only when `is_tree` finds no node reached twice (an `&&` in a shell command
and a `*` in a cron schedule make no alias); a real alias takes the careful path with its alias limits.

`resolver_hooks` makes the resolver cheaper too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubegap import integers
from kubegap.yamltags import MAP, SEQ, STR, TAG, Resolve

NULL, BOOL, INT, FLOAT = (TAG + name for name in ("null", "bool", "int", "float"))
_SHORT = 18  # a decimal this short always fits int64 (as in kubegap.integers)


class Unsure(Exception):
    """The quick walk cannot vouch for this document: take the careful path."""


def build(root: Node, constructor: Any, max_depth: int) -> Any:
    """The data of a node tree (no aliases), or Unsure. `constructor` is the loader: it reads the rare
    scalars (floats, non-decimal integers) exactly as the careful path would."""
    if root.__class__ is ScalarNode:
        return _scalar(root, constructor)
    top = _empty(root)
    stack: list[tuple[Node, Any, int]] = [(root, top, 1)]
    while stack:
        node, out, depth = stack.pop()
        if depth > max_depth:
            raise Unsure
        if out.__class__ is dict:
            _fill_mapping(node, out, depth + 1, stack, constructor)
        else:
            _fill_sequence(node, out, depth + 1, stack, constructor)
    return top


def is_tree(root: Node) -> bool:
    """Whether no node is reached twice: no alias (nor recursion) to honour. Stops at the first repeat, so
    an alias bomb costs one visit per unique node."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            return False
        seen.add(id(node))
        if node.__class__ is MappingNode:
            for pair in node.value:
                stack.extend(pair)
        elif node.__class__ is SequenceNode:
            stack.extend(node.value)
    return True


def _fill_mapping(
    node: Node, out: dict[Any, Any], depth: int, stack: list[tuple[Node, Any, int]], constructor: Any
) -> None:
    for key_node, value_node in node.value:
        if key_node.__class__ is not ScalarNode:
            raise Unsure  # an unhashable key: the careful path words the error
        # `<<` and `=` carry the merge and value tags, which _scalar leaves to the careful path.
        key = key_node.value if key_node.tag == STR else _scalar(key_node, constructor)
        if key in out:
            raise Unsure  # a duplicate key: the careful path names both lines
        if value_node.__class__ is ScalarNode:
            out[key] = value_node.value if value_node.tag == STR else _scalar(value_node, constructor)
        else:
            out[key] = child = _empty(value_node)
            stack.append((value_node, child, depth))


def _fill_sequence(
    node: Node, out: list[Any], depth: int, stack: list[tuple[Node, Any, int]], constructor: Any
) -> None:
    for item in node.value:
        if item.__class__ is ScalarNode:
            out.append(item.value if item.tag == STR else _scalar(item, constructor))
        else:
            out.append(child := _empty(item))
            stack.append((item, child, depth))


def _empty(node: Node) -> dict[Any, Any] | list[Any]:
    if node.__class__ is MappingNode and node.tag == MAP:
        return {}
    if node.__class__ is SequenceNode and node.tag == SEQ:
        return []
    raise Unsure


def _scalar(node: ScalarNode, constructor: Any) -> Any:
    tag, value = node.tag, node.value
    if tag == STR:
        return value
    if tag == NULL:
        return None
    if tag == BOOL:
        if (flag := constructor.bool_values.get(value.lower())) is None:
            raise Unsure
        return flag
    if tag == INT:
        if len(value) <= _SHORT and value.isdigit() and value.isascii() and (value[0] != "0" or value == "0"):
            return int(value)
        return _read(constructor.construct_yaml_int, node, integers.in_range)
    if tag == FLOAT:
        return _read(constructor.construct_yaml_float, node, None)
    raise Unsure


def _read(construct: Callable[[Node], Any], node: ScalarNode, check: Callable[[Any], Any] | None) -> Any:
    if len(node.value) > integers.MAX_CHARACTERS:
        raise Unsure  # the careful path reports the number-range error without converting
    try:
        value = construct(node)
        return value if check is None else check(value)
    except (ValueError, IndexError):  # number-range or unreadable: the careful path words it
        raise Unsure from None


def resolver_hooks(base: type[Any], resolvers: dict[Any, list[Any]]) -> dict[str, Any]:
    """A `resolve` for the loader class that gives the resolver's answers with less work per node.

    libyaml's composer asks for the tag of every node. Collections, quoted scalars and plain scalars whose
    first character starts no implicit resolver (most keys and strings) are answered at once; the rest
    go through the resolver's regular expressions once per distinct short text (manifests repeat
    `name`, `true`, `8` and the like thousands of times), remembered in a bounded table. The answer is
    `BaseResolver.resolve`'s for the class's `resolvers`, with no path or wildcard resolver (refused here):
    the first of the resolvers for the text's first character whose expression matches, else a string.
    It is a compiled object (kubegap.yamltags) held as a static method, as a compiled function would not
    bind to the loader: compiled, the composer's calls (139 for a manifest of the lint corpus) run no Python.

    The composer also calls `descend_resolver(parent, index)` and `ascend_resolver()` around every node,
    which only track path resolvers. None are registered, so both become C built-ins that accept those
    arguments and do nothing that matters (`slice(parent, index)`, `tuple()`): two fewer Python calls per
    node, about 5% of a load.
    """
    if base.yaml_path_resolvers or resolvers.get(None):
        raise AssertionError("path or wildcard resolvers would change the answers")
    return {
        "resolve": staticmethod(Resolve(resolvers)),
        "descend_resolver": staticmethod(slice),
        "ascend_resolver": staticmethod(tuple),
    }

"""YAML mechanics for manifests: strict safe loading with guards, Helm leftovers, node positions.

`load(text)` parses the text of a single document and either returns its data (`None` for an empty
document) or raises `LoadError` with a short rule id and the position in the file:

- only plain YAML types are built (mappings, sequences, strings, numbers, booleans, null); any other tag,
  from `!!python/object` to `!!binary`, `!!set` or `!!timestamp`, is a `yaml-syntax` error. Unquoted
  dates stay strings, so every value is JSON data as policies expect;
- a key repeated in one mapping is a `duplicate-key` error naming both lines (PyYAML would keep the last);
- aliases may not multiply the document: a copy of every aliased node counts, and more than
  `MAX_ALIAS_NODES` extra nodes (or an alias inside its own anchor) is an `alias-limit` error. Shared
  aliases load in microseconds but blow up every consumer that walks the data (CVE-2019-11253);
- an integer is kept as the API server keeps it (`kubegap.integers`: int64, else float64); one beyond
  float64, such as 100,000 digits, is a `number-range` error;
- nesting deeper than `MAX_DEPTH` mappings/sequences is a `too-deep` error (libyaml stops at 1,000, the
  pure-Python loader overflows the stack near 500, and CEL bindings have crashed on deep input).

The libyaml parser is used when PyYAML has it; the pure-Python fallback reads the same documents slower,
except that it rejects tab-indented JSON.

`template_leftover(text)` finds Helm leftovers; `position(text, path)` finds where a field path is.

YAML 1.1 and the API server: both read `on`/`off`/`yes`/`no` as booleans and `0755` as octal (493). They
differ on `y`/`n` (booleans for the API server, strings here) and base-60 values like `1:30` (a string
for the API server, 90 here); tests/test_yaml_kubectl.py checks this against kubectl. Quote such values.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubegap import integers, yamlbuild
from kubegap.enginerules import TOO_DEEP
from kubegap.errors import KubegapError
from kubegap.yamltags import TAG

MAX_DEPTH = 100
MAX_ALIAS_NODES = 100_000

_PLAIN_TAGS = frozenset(TAG + name for name in ("null", "bool", "int", "float", "str", "seq", "map"))
# Timestamps stay strings (metadata dates must reach policies as text); `=` is a plain string too
# (PyYAML resolves it to a `value` tag it cannot construct).
_DROPPED_RESOLVERS = frozenset({TAG + "timestamp", TAG + "value"})
_MERGE_TAG = TAG + "merge"
_TOO_DEEP = f"nesting is deeper than {MAX_DEPTH} levels"


class LoadError(KubegapError):
    """A document that cannot be loaded; `line` and `column` are 1-based, in the file."""

    def __init__(self, rule: str, message: str, line: int | None, column: int | None) -> None:
        super().__init__(message)
        self.rule, self.message, self.line, self.column = rule, message, line, column


class _DuplicateKey(yaml.MarkedYAMLError):
    pass


def _reject_tag(loader: yaml.constructor.SafeConstructor, node: Node) -> Any:
    message = f"tag {node.tag!r} is not allowed: manifests hold plain YAML types only"
    raise yaml.constructor.ConstructorError(None, None, message, node.start_mark)


class _StrictConstructor(yaml.constructor.SafeConstructor):
    """Mixed in before the safe constructor: same types minus the exotic ones, duplicate keys rejected."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        own = node.value  # flatten_mapping deletes `<<` pairs from this very list and may rebind node.value
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        if node.value is not own or len(mapping) < len(own):
            _raise_on_duplicate(self, own)
        return mapping


def _construct_int(constructor: yaml.constructor.SafeConstructor, node: ScalarNode) -> int | float:
    """Integers as the API server keeps them (kubegap.integers); one out of every range is an error at
    its position, not a ValueError from CPython's 4,300-digit limit."""
    if len(node.value) > integers.MAX_CHARACTERS:
        raise _Problem("number-range", str(integers.too_long(node.value)), node.start_mark)
    try:
        return integers.in_range(constructor.construct_yaml_int(node))
    except ValueError as err:
        raise _Problem("number-range", str(err), node.start_mark) from None
    except IndexError:  # `!!int` on an empty value
        raise _unreadable(node) from None


def _readable(construct: Callable[..., Any]) -> Callable[..., Any]:
    """A scalar constructor whose failure on an explicitly tagged value (`!!bool maybe`, `!!float abc`)
    is an error at the value's position rather than a KeyError or ValueError from inside PyYAML."""

    def read(constructor: yaml.constructor.SafeConstructor, node: ScalarNode) -> Any:
        try:
            return construct(constructor, node)
        except (KeyError, ValueError, IndexError):
            raise _unreadable(node) from None

    return read


def _unreadable(node: ScalarNode) -> yaml.constructor.ConstructorError:
    message = f"{node.value[:40]!r} cannot be read as {node.tag.rsplit(':', 1)[-1]}"
    return yaml.constructor.ConstructorError(None, None, message, node.start_mark)


def _raise_on_duplicate(
    constructor: yaml.constructor.BaseConstructor, pairs: list[tuple[Node, Node]]
) -> None:
    first: dict[Any, Node] = {}
    for key_node, _ in pairs:
        key = constructor.constructed_objects[key_node]
        if key in first:
            # The first occurrence travels as the context mark so that `load` can shift both lines.
            raise _DuplicateKey(None, first[key].start_mark, f"duplicate key {key!r}", key_node.start_mark)
        first[key] = key_node


def _strict(base: type[Any]) -> type[Any]:
    resolvers = {
        first: [(tag, regexp) for tag, regexp in entries if tag not in _DROPPED_RESOLVERS]
        for first, entries in base.yaml_implicit_resolvers.items()
    }
    constructors: dict[str | None, Callable[..., Any]] = {
        tag: fn for tag, fn in base.yaml_constructors.items() if tag in _PLAIN_TAGS
    }
    constructors[None] = _reject_tag
    constructors[yamlbuild.INT] = _construct_int
    for tag in (yamlbuild.BOOL, yamlbuild.FLOAT):
        constructors[tag] = _readable(constructors[tag])
    attrs = {
        "yaml_implicit_resolvers": resolvers,
        "yaml_constructors": constructors,
        "yaml_multi_constructors": {},
        **yamlbuild.resolver_hooks(base, resolvers),
    }
    return type(f"Strict{base.__name__}", (_StrictConstructor, base), attrs)


PURE_LOADER = _strict(yaml.SafeLoader)
FAST_LOADER = _strict(yaml.CSafeLoader) if yaml.__with_libyaml__ else PURE_LOADER


def load(text: str, *, line: int = 1, pure: bool = False) -> Any:
    """The data of one document whose text starts at `line` of its file; raises LoadError."""
    loader = None
    try:
        loader = (PURE_LOADER if pure else FAST_LOADER)(text)  # the pure reader checks characters here
        node = loader.get_single_node()
        if node is None:
            return None
        # Without both an anchor and an alias the graph is a tree; `&&` and `*` in strings are common.
        data = _data(loader, node, "&" in text and "*" in text)
        _remember(text, node)
        return data
    except _Problem as exc:
        raise exc.at(line) from None
    except _DuplicateKey as exc:
        first = exc.context_mark.line + line if exc.context_mark else "?"
        second = exc.problem_mark.line + line if exc.problem_mark else "?"
        message = f"{exc.problem} at line {second}, first at line {first}: remove one of them"
        raise _Problem("duplicate-key", message, exc.problem_mark).at(line) from None
    except yaml.MarkedYAMLError as exc:
        raise _syntax_problem(exc).at(line) from None
    except yaml.reader.ReaderError as exc:
        where = text.count("\n", 0, exc.position) + line
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        raise LoadError("yaml-syntax", f"unacceptable character {char}: {exc.reason}", where, None) from None
    except RecursionError:
        raise LoadError(TOO_DEEP, _TOO_DEEP, line, None) from None
    finally:
        if loader is not None:
            loader.dispose()


def _data(loader: Any, node: Node, aliased: bool) -> Any:
    """The quick walk when the graph is a tree (kubegap.yamlbuild); the careful path for a graph with
    aliases, and for any tree the quick walk is unsure of (it builds the same data or reports the error)."""
    if not aliased or yamlbuild.is_tree(node):
        try:
            return yamlbuild.build(node, loader, MAX_DEPTH)
        except yamlbuild.Unsure:
            pass
    if aliased:
        _check_graph(node)
    else:
        _check_tree(node)
    return loader.construct_document(node)


class _Problem(Exception):
    """A LoadError whose position is still relative to the document text (a 0-based yaml Mark)."""

    def __init__(self, rule: str, message: str, mark: yaml.Mark | None) -> None:
        super().__init__(message)
        self.rule, self.message, self.mark = rule, message, mark

    def at(self, line: int) -> LoadError:
        if self.mark is None:
            return LoadError(self.rule, self.message, None, None)
        return LoadError(self.rule, self.message, self.mark.line + line, self.mark.column + 1)


def _syntax_problem(exc: yaml.MarkedYAMLError) -> _Problem:
    mark = exc.problem_mark or exc.context_mark
    message = "; ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
    if "maximum nesting depth" in message:  # libyaml's own cap, far above ours
        return _Problem(TOO_DEEP, _TOO_DEEP, mark)
    return _Problem("yaml-syntax", message, mark)


def _too_deep(node: Node) -> _Problem:
    return _Problem(TOO_DEEP, _TOO_DEEP, node.start_mark)


def _check_tree(root: Node) -> None:
    # Only collections are pushed: scalars cannot nest, and skipping them keeps this walk cheap.
    stack: list[tuple[Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(node)
        deeper = depth + 1
        if node.__class__ is MappingNode:
            for key, value in node.value:
                if value.__class__ is not ScalarNode:
                    stack.append((value, deeper))
                if key.__class__ is not ScalarNode:
                    stack.append((key, deeper))
        elif node.__class__ is SequenceNode:
            stack.extend((item, deeper) for item in node.value if item.__class__ is not ScalarNode)


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _check_graph(root: Node) -> None:
    """Depth and alias expansion over a graph with shared nodes, memoized per node (O(unique nodes))."""
    done: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded node count, collection height)
    open_: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        ident = id(node)
        if not finished:
            if ident in done:
                continue
            if ident in open_:
                raise _Problem(
                    "alias-limit", "an alias refers to its own anchor (recursive data)", node.start_mark
                )
            open_.add(ident)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))
            continue
        open_.discard(ident)
        measures = [done[id(child)] for child in _children(node)]
        size = 1 + sum(m[0] for m in measures)
        height = 0 if isinstance(node, ScalarNode) else 1 + max((m[1] for m in measures), default=0)
        done[ident] = (size, height)
        if height > MAX_DEPTH:
            raise _too_deep(node)
        # Every unique node below this one is already in `done`, so this underestimates the copies.
        if size - len(done) > MAX_ALIAS_NODES:
            message = (
                f"aliases expand to more than {MAX_ALIAS_NODES:,} extra nodes (a 'billion laughs' document?)"
            )
            raise _Problem("alias-limit", message, node.start_mark)


# Go-template actions that only Helm charts use: data fields and chart helpers. Other `{{ }}` text is left
# alone when the document loads, since rendered manifests carry it legitimately (Argo Workflows
# placeholders, Prometheus alert templates such as `{{ $labels.instance }}`).
_HELM_ACTION = re.compile(
    r"\{\{-?\s*(?:[^}]*?\$?\.(?:Values|Release|Chart|Capabilities|Files|Template)\b"
    r"|(?:include|tpl|toYaml|template|define|required)\b)"
)
_COMMENT_START = re.compile(r"(?:^|\s)#", re.MULTILINE)


def template_leftover(text: str, *, line: int = 1, helm_only: bool) -> tuple[int, int, str] | None:
    """The first `{{` outside a comment as (line, column, snippet), 1-based in the file; or None.

    With `helm_only`, only Helm-specific actions count (for documents that load); without it any `{{`
    counts (for documents that failed to load: the template is the likely cause).
    """
    start = text.find("{{")
    while start >= 0:
        line_start = text.rfind("\n", 0, start) + 1
        if not _COMMENT_START.search(text, line_start, start) and (
            not helm_only or _HELM_ACTION.match(text, start)
        ):
            end = text.find("}}", start, start + 200)
            snippet = text[start : end + 2] if end >= 0 else text[start : start + 40]
            return text.count("\n", 0, start) + line, start - line_start + 1, snippet.replace("\n", " ")
        start = text.find("{{", start + 2)
    return None


def position(text: str, path: Sequence[str | int]) -> tuple[int, int] | None:
    """0-based (line, column) in `text` of the key (or sequence item) at `path`, or of its nearest
    existing parent; None when the text does not compose. Composed graphs are cached per text."""
    return position_in(_compose(text), path)


def position_in(root: Node | None, path: Sequence[str | int]) -> tuple[int, int] | None:
    """`position` in a graph `compose` gave, for a caller that holds it."""
    if root is None:
        return None
    node, mark = root, root.start_mark
    for part in path:
        step = _step(node, part)
        if step is None:
            break
        key, node = step
        mark = (key or node).start_mark
    return mark.line, mark.column


# The graphs of the last documents loaded: a finding is located soon after its document is read, so
# positions cost a walk, not a second parse. Bounded by count and by the length of their texts (a graph
# takes about 25 times its text, measured), so that a long stream keeps memory flat; the latest graph is
# kept whatever its size. Kept few: lint's fix reports load many texts of their own, and with four times
# as many graphs alive the text report took about 5% more CPU. (Lint holds its batches' graphs itself.)
_NODES: OrderedDict[str, Node | None] = OrderedDict()
_NODES_KEPT = 16
_NODES_TEXT_KEPT = 4 * 1024 * 1024
_nodes_text = 0  # the length of the texts whose graphs _NODES keeps
_nodes_lock = threading.Lock()  # the MCP server lints in several threads


def _remember(text: str, node: Node | None) -> None:
    global _nodes_text
    with _nodes_lock:
        if text not in _NODES:
            _nodes_text += len(text)
        _NODES[text] = node
        _NODES.move_to_end(text)
        while len(_NODES) > 1 and (len(_NODES) > _NODES_KEPT or _nodes_text > _NODES_TEXT_KEPT):
            _nodes_text -= len(_NODES.popitem(last=False)[0])


def compose(text: str) -> Node | None:
    """The node graph of one document's text (cached), for tools that edit the text by position; None
    when the text does not compose."""
    return _compose(text)


def kept(text: str) -> Node | None:
    """The graph of `text` where it is still kept from its loading (or composing); else None."""
    with _nodes_lock:
        return _NODES.get(text)


def _compose(text: str) -> Node | None:
    with _nodes_lock:
        if text in _NODES:
            _NODES.move_to_end(text)
            return _NODES[text]
    # No guards: a path walk visits one node per step, so shared or deep nodes cost nothing here.
    loader = FAST_LOADER(text)
    node: Node | None = None
    try:
        node = loader.get_single_node()
    except (yaml.YAMLError, RecursionError):
        node = None
    finally:
        loader.dispose()
    _remember(text, node)
    return node


def _step(node: Node, part: str | int, merges: int = 0) -> tuple[Node | None, Node] | None:
    """(key node or None, value node) one step down from `node`."""
    if isinstance(node, SequenceNode):
        items: list[Node] = node.value
        return (None, items[part]) if isinstance(part, int) and 0 <= part < len(items) else None
    if not isinstance(node, MappingNode):
        return None
    wanted = str(part)
    pairs: list[tuple[Node, Node]] = node.value
    # own keys first, one comparison each (a finding's place is looked up key by key, 7 steps a finding)
    for key, value in pairs:
        if key.value == wanted and isinstance(key, ScalarNode) and key.tag != _MERGE_TAG:
            return key, value
    if merges >= 10:
        return None
    for key, value in pairs:  # then the keys brought in by `<<: *anchor`
        if isinstance(key, ScalarNode) and key.tag == _MERGE_TAG:
            for source in value.value if isinstance(value, SequenceNode) else [value]:
                found = _step(source, part, merges + 1)
                if found is not None:
                    return found
    return None

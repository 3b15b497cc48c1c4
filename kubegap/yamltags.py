"""The tag of each node libyaml's composer asks a kubegap loader about (kubegap.yamlbuild.resolver_hooks).

Compiled (setup.py), apart from the walk from nodes to data: that walk reads the attributes of PyYAML's
node objects, which the interpreter's attribute caches read faster than compiled code does (the walk
took 34.5 µs a manifest compiled against 30.5 µs interpreted); this only reads text and dicts.
"""

from __future__ import annotations

from typing import Any, Final

from yaml.nodes import ScalarNode, SequenceNode

TAG: Final = "tag:yaml.org,2002:"  # the prefix of YAML's own tags
STR: Final = TAG + "str"
SEQ: Final = TAG + "seq"
MAP: Final = TAG + "map"
_REMEMBERED: Final = 4096  # resolved texts kept per loader class, each of at most _REMEMBERED_LENGTH
_REMEMBERED_LENGTH: Final = 64  # characters: at most 256K characters kept


class Resolve:
    """The tag of a node the composer asks about (kubegap.yamlbuild.resolver_hooks), as `resolve(kind, value,
    implicit)`; `implicit` is a pair of bools for a scalar, one bool for a collection (PyYAML's composer)."""

    def __init__(self, resolvers: dict[Any, list[Any]]) -> None:
        self.resolvers = resolvers
        self.first = frozenset(char for char, entries in resolvers.items() if entries)
        self.known: dict[str, str] = {}

    def __call__(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is not ScalarNode:
            return SEQ if kind is SequenceNode else MAP
        text: str = value
        start = text[:1]
        if not implicit[0] or start not in self.first:
            return STR
        known = self.known
        tag = known.get(text)
        if tag is None:
            tag = STR
            for candidate, regexp in self.resolvers[start]:
                if regexp.match(text):
                    tag = candidate
                    break
            if len(text) <= _REMEMBERED_LENGTH and len(known) < _REMEMBERED:
                known[text] = tag
        return tag

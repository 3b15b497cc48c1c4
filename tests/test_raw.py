"""kubegap.raw: reading fields of any type without a crash; exact-type shortcuts agree with the abstract
tests they stand in for."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kubegap import raw


class _Frozen(Mapping[str, Any]):
    """A mapping that is no dict, as a caller other than a parser may hand in."""

    def __init__(self, **items: Any) -> None:
        self._items = items

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class _Items(list[Any]):
    pass


def _spec(obj: Any, path: tuple[str | int, ...]) -> Any:
    """What `dig` promises: keys into mappings, indexes into lists, None where a step is missing."""
    value = obj
    for part in path:
        if isinstance(part, str) and isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(part, int) and isinstance(value, list) and 0 <= part < len(value):
            value = value[part]
        else:
            return None
    return value


TREE = {
    "spec": {
        "containers": [{"name": "a", "args": ["x", "y"]}, None, "text", 3],
        "frozen": _Frozen(inner={"k": "v"}, items=_Items(["p", "q"])),
        "ordered": OrderedDict(key=[1, 2]),
        "flag": True,
        "none": None,
    }
}
PATHS = [
    ("spec", "containers", 0, "name"),
    ("spec", "containers", 0, "args", 1),
    ("spec", "containers", 0, "args", 2),  # past the end
    ("spec", "containers", -1),  # no negative index
    ("spec", "containers", 1, "name"),  # None
    ("spec", "containers", 2, "name"),  # text
    ("spec", "containers", 3, 0),  # a number
    ("spec", "containers", "0"),  # a key into a list
    ("spec", 0),  # an index into a mapping
    ("spec", "frozen", "inner", "k"),
    ("spec", "frozen", "items", 1),  # a list's subclass
    ("spec", "frozen", "items", 5),
    ("spec", "ordered", "key", 0),
    ("spec", "flag", "x"),
    ("spec", "none", "x"),
    ("spec", "containers", True),  # a bool is an int index, as before
    (),
]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: ".".join(map(str, p)) or "root")
def test_dig_agrees_with_its_promise_on_every_kind_of_value(path: tuple[str | int, ...]) -> None:
    assert raw.dig(TREE, path) == _spec(TREE, path)


@pytest.mark.parametrize(
    "value", [{}, {"a": 1}, OrderedDict(), _Frozen(a=1), None, "text", [1], 3, 2.5, True, _Items()]
)
def test_mapping_is_the_value_exactly_when_it_is_a_mapping(value: Any) -> None:
    assert raw.is_mapping(value) == isinstance(value, Mapping)
    read = raw.mapping(value)
    assert isinstance(read, dict)  # what compiled code reads directly
    if isinstance(value, dict):
        assert read is value  # a parser's own, read in place
    elif isinstance(value, Mapping):
        assert read == dict(value) and read is not value  # another mapping, read as a copy
    else:
        assert read == {}

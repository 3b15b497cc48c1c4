"""The vocabulary the facts contract (`contract.py`) is written in, and the check that a value keeps to it.

Types are what CEL sees: `bool`, `int`, `double` and `string` scalars (CEL never mixes int and double, so
the contract says which), lists, maps with keys chosen by the object (`env`, `annotations`), and records
whose keys are fixed by kubegap. A record field is either always there or `optional`: absent when there
is nothing to say, tested with `has()`, never null.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True, unsafe_hash=True)
class Scalar:
    name: str  # bool | int | double | string

    def describe(self) -> str:
        return self.name


@dataclass(slots=True, unsafe_hash=True)
class ListOf:
    item: Type

    def describe(self) -> str:
        return f"list of {self.item.describe()}"


@dataclass(slots=True, unsafe_hash=True)
class MapOf:
    """A map whose keys come from the object (variable names, annotation keys): any key may be read."""

    value: Type
    keys: str  # what a key is, for the reference

    def describe(self) -> str:
        return f"map of {self.keys} to {self.value.describe()}"


@dataclass(slots=True, unsafe_hash=True)
class Field:
    name: str
    type: Type
    meaning: str
    unit: str = ""
    optional: bool = False  # absent when there is nothing to say; read it behind `has()`
    globbed: bool = False  # a list of names that `globs` parameters are matched against (kubegap.globbed)


@dataclass(slots=True, unsafe_hash=True)
class Record:
    """A map whose keys kubegap fixes: reading any other key is an error the policy loader reports."""

    name: str  # for messages and the reference: "container", "a duration"
    fields: tuple[Field, ...]

    def describe(self) -> str:
        return self.name

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    def names(self) -> list[str]:
        return [f.name for f in self.fields]


Type = Scalar | ListOf | MapOf | Record

BOOL, INT, DOUBLE, STRING = Scalar("bool"), Scalar("int"), Scalar("double"), Scalar("string")
_PYTHON: Mapping[str, tuple[type, ...]] = {
    "bool": (bool,),
    "int": (int,),
    "double": (float,),
    "string": (str,),
}


def fact(
    name: str, kind: Type, meaning: str, unit: str = "", *, optional: bool = False, globbed: bool = False
) -> Field:
    return Field(name, kind, meaning, unit, optional, globbed)


def record(name: str, *fields: Field) -> Record:
    return Record(name, fields)


def extend(base: Record, name: str, *fields: Field) -> Record:
    """`base` with more fields: a duration that also says whether it is a default."""
    return Record(name, base.fields + fields)


def problems(value: Any, kind: Type, path: str) -> list[str]:
    """Where `value` departs from `kind`: an undeclared key, a missing one, a wrong type."""
    if isinstance(kind, Scalar):
        wanted = _PYTHON[kind.name]
        ok = isinstance(value, wanted) and (kind.name == "bool" or not isinstance(value, bool))
        return [] if ok else [f"{path}: {type(value).__name__} {value!r} is not a {kind.name}"]
    if isinstance(kind, ListOf):
        if not isinstance(value, list | tuple):
            return [f"{path}: {type(value).__name__} is not a list"]
        return [p for index, item in enumerate(value) for p in problems(item, kind.item, f"{path}[{index}]")]
    if not isinstance(value, Mapping):
        return [f"{path}: {type(value).__name__} is not a map"]
    if isinstance(kind, MapOf):
        found = [f"{path}: key {k!r} is not a string" for k in value if not isinstance(k, str)]
        return found + [p for k, v in value.items() for p in problems(v, kind.value, f"{path}[{k!r}]")]
    return _record_problems(value, kind, path)


def _record_problems(value: Mapping[str, Any], kind: Record, path: str) -> list[str]:
    found = [f"{path}.{k}: not declared in the facts contract" for k in value if kind.field(k) is None]
    for each in kind.fields:
        if each.name in value:
            found += problems(value[each.name], each.type, f"{path}.{each.name}")
        elif not each.optional:
            found.append(f"{path}.{each.name}: declared as always present, but missing")
    return found

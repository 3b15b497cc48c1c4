"""Records built by the thousand per object, rebuilt field by field.

The records kubegap builds per object (findings, the parts facts are read into, units) are slots
dataclasses, `@dataclass(slots=True, unsafe_hash=True)`. They are not frozen at run time: a frozen
dataclass sets each field through `object.__setattr__` (2.5 µs for a finding's 18 fields against 0.6 µs,
measured), and nothing in kubegap assigns to one once built. It is also the one form mypyc compiles as a
dataclass (setup.py): to mypyc, a decorator of kubegap's own makes a class whose `==` is identity, and a
frozen compiled record cannot be unpickled, as lint's and the audit's worker processes do.

Even compiled, the constructor `dataclass` writes is interpreted Python (0.2-0.6% of a typical object's
time for each record made several times per object, measured). Such a record writes its own instead
(`init=False` and an `__init__`), which mypyc compiles; per-object state that is never compared is a
plain class. A compiled class with its own constructor is made by calling it, also when unpickled: one
that travels between processes pickles by its constructor's arguments (`reduced`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter
from typing import Any, Final, TypeVar

_T = TypeVar("_T")


_Fields = tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]
_FIELDS: Final[dict[type, _Fields]] = {}


def fields_of(cls: type) -> _Fields:
    """A dataclass's field names, and what reads all their values at once: one `attrgetter`, in C. Walking
    `fields()` for each instance, as `dataclasses.replace` and pickling do, costs several times more."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = _fields(cls)
    return found


def reduced(obj: _T) -> tuple[type[_T], tuple[Any, ...]]:
    """`__reduce__` of a record whose constructor is written out: its constructor's arguments, where pickle's
    default makes an empty object and sets its fields. Lint's and the audit's worker processes send
    findings, and what they hold, back pickled."""
    cls = type(obj)
    return cls, fields_of(cls)[1](obj)


def _fields(cls: type) -> _Fields:
    if not all(f.init for f in fields(cls)):
        raise TypeError(f"{cls.__name__} has a field its constructor does not take")
    names = tuple(f.name for f in fields(cls))
    if len(names) > 1:
        return names, attrgetter(*names)
    if not names:
        return names, lambda obj: ()
    one = attrgetter(names[0])  # which gives the value, not a tuple of it
    return names, lambda obj: (one(obj),)


def changed(obj: _T, **changes: Any) -> _T:
    """`dataclasses.replace`, at a quarter of its cost (0.9 against 3.3 µs for a finding, measured): every
    failing finding is rebuilt with its price."""
    cls = type(obj)
    names, values = fields_of(cls)
    at = _INDEXES.get(cls)
    if at is None:  # a field's position by its name, looked up in a dict: `tuple.index` compared names
        at = _INDEXES[cls] = {name: index for index, name in enumerate(names)}
    new = list(values(obj))
    for name, value in changes.items():
        index = at.get(name)
        if index is None:
            raise ValueError(f"{cls.__name__} has no field {name!r}")
        new[index] = value
    return cls(*new)


_INDEXES: Final[dict[type, dict[str, int]]] = {}

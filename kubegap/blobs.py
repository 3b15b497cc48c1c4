"""Findings pickled as calls of their constructors: what worker processes send back (the audit's and
lint's) and what the audit's spool stores, each finding alone.

Pickle's own way with a slots dataclass walks `fields()` for every instance, on both sides. A report of
10,000 lint findings took 0.34 s to pickle and 0.35 s to read back that way, against 0.08 and 0.20 s
here (measured); the reading back is done by the one process that writes the report, after its workers.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import pickle
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from kubegap.impact import Inputs, Term
from kubegap.records import fields_of


class Blobs:
    """One reusable pickler: findings (and the audit workers' results) pickled by constructor arguments."""

    def __init__(self) -> None:
        self._buffer = io.BytesIO()
        self._pickler = pickle.Pickler(self._buffer, protocol=5)
        self._pickler.dispatch_table = _BY_ARGUMENTS

    def dumps(self, value: Any) -> bytes:
        self._buffer.seek(0)
        self._buffer.truncate()
        self._pickler.clear_memo()
        self._pickler.dump(value)
        return self._buffer.getvalue()


class _Reducers(dict[type, Callable[[Any], tuple[Any, ...]]]):
    """Pickles a dataclass as a call of its constructor with its field values. A slots dataclass's own
    __getstate__/__setstate__ walk `fields()` for every instance, and with a finding's cost-model inputs
    that was most of the time the spool took (one finding holds about ten dataclasses). The values are
    read by one `attrgetter`, in C."""

    def __missing__(self, cls: type) -> Callable[[Any], tuple[Any, ...]]:
        if issubclass(cls, enum.Enum):
            return self.setdefault(cls, _by_name)
        if not dataclasses.is_dataclass(cls):
            raise KeyError(cls)  # anything else pickles as it always does
        try:
            values = fields_of(cls)[1]
        except TypeError:  # a field the constructor does not take: pickled as it always is
            raise KeyError(cls) from None

        def reduce(obj: Any) -> tuple[Any, ...]:
            return cls, values(obj)

        self[cls] = reduce
        return reduce


def _by_name(member: enum.Enum) -> tuple[Any, ...]:
    """A finding's severity and result read back by name, in C: by value, `Enum.__call__` runs in Python
    for each (two per finding, 2 µs of the 14 µs a finding took to read back). A member without a name
    of its own (a combination of flags) goes by value, as pickle sends every member."""
    cls, name = type(member), member.name
    if name is not None and getattr(cls, name, None) is member:
        return getattr, (cls, name)
    return cls, (member.value,)


def _flat_inputs(inputs: Inputs) -> tuple[Any, ...]:
    """A finding's cost-model inputs (twice in each priced finding: now and once fixed) as one call over
    plain values, not six dataclasses: a workload's findings share them, and `_inputs` rebuilds each
    distinct one once. Reading a finding back took twice as long before (34-37 against 16 µs, measured)."""
    terms = (inputs.detection, inputs.restart, inputs.interval, inputs.runtime, inputs.save)
    flat = [value for term in terms for value in ((term.hours, term.source) if term else (None, None))]
    return _inputs, (inputs.gpus, inputs.failures_per_gpu_hour, inputs.tax, inputs.from_scratch, *flat)


@lru_cache(maxsize=256)
def _inputs(gpus: int, rate: float, tax: float, from_scratch: bool, *flat: Any) -> Inputs:
    detection, restart, interval, runtime, save = (
        Term(flat[at], flat[at + 1]) if flat[at + 1] is not None else None for at in range(0, 10, 2)
    )
    assert detection and restart and runtime and save  # only the interval may be missing
    return Inputs(gpus, rate, detection, restart, interval, runtime, save, tax, from_scratch)


_BY_ARGUMENTS = _Reducers({Inputs: _flat_inputs})

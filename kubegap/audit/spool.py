"""Findings of a running audit, kept on disk so memory stays flat however many objects fail.

A private temporary SQLite database (deleted on close) holds each finding once; reports read them back
in the order they need (by namespace for PolicyReports, worst first for text) without holding them all.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import groupby
from typing import Any

from kubegap.findings import Finding, Result
from kubegap.impact import Inputs, Term
from kubegap.records import fields_of

_ORDERS = {
    "listed": "seq",
    "namespace": "ns, seq",
    "worst": "rank DESC, ns, kind, name, seq",
}


class Spool:
    def __init__(self) -> None:
        # "" opens a temporary on-disk database that SQLite removes on close.
        self._db = sqlite3.connect("", check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute(
            "CREATE TABLE findings (seq INTEGER PRIMARY KEY, ns TEXT NOT NULL, kind TEXT, name TEXT,"
            " rank INTEGER, uid TEXT, blob BLOB)"
        )
        self.count = 0
        self._blobs = Blobs()

    def add(self, findings: Iterable[Finding], uid: str | None = None) -> None:
        self.add_rows([self._blobs.row(f) for f in findings], uid)

    def add_rows(self, rows: Iterable[Row], uid: str | None = None) -> None:
        """Findings already pickled by `Blobs.row` (an audit worker pickles them beside the evaluation)."""
        with_uid = [(ns, kind, name, rank, uid, blob) for ns, kind, name, rank, blob in rows]
        if with_uid:
            self._db.executemany(
                "INSERT INTO findings (ns, kind, name, rank, uid, blob) VALUES (?,?,?,?,?,?)", with_uid
            )
            self.count += len(with_uid)

    def findings(self, order: str = "listed") -> Iterator[Finding]:
        for _uid, finding in self.rows(order):
            yield finding

    def rows(self, order: str = "listed") -> Iterator[tuple[str | None, Finding]]:
        """(object uid, finding) pairs in the given order: listed, namespace or worst."""
        cursor = self._db.execute(f"SELECT uid, blob FROM findings ORDER BY {_ORDERS[order]}")
        while batch := cursor.fetchmany(1000):
            for uid, blob in batch:
                yield uid, pickle.loads(blob)

    def by_namespace(self) -> Iterator[tuple[str | None, Iterator[tuple[str | None, Finding]]]]:
        """Findings grouped by namespace (None: cluster-scoped objects), namespaces in sorted order."""
        for namespace, group in groupby(
            self.rows("namespace"), key=lambda row: row[1].object.namespace or ""
        ):
            yield namespace or None, group

    def close(self) -> None:
        self._db.close()


Row = tuple[str, str, str, int, bytes]  # namespace, kind, name, rank, pickled finding


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

    def row(self, finding: Finding) -> Row:
        o = finding.object
        return (o.namespace or "", o.kind, o.name, _rank(finding), self.dumps(finding))


def _rank(finding: Finding) -> int:
    """Failures and errors by severity; skips below every failure."""
    return finding.severity.rank + 1 if finding.result is not Result.SKIP else 0


class _Reducers(dict[type, Callable[[Any], tuple[Any, ...]]]):
    """Pickles a dataclass as a call of its constructor with its field values. A slots dataclass's own
    __getstate__/__setstate__ walk `fields()` for every instance, and with a finding's cost-model inputs
    that was most of the time the spool took (one finding holds about ten dataclasses). The values are
    read by one `attrgetter`, in C."""

    def __missing__(self, cls: type) -> Callable[[Any], tuple[Any, ...]]:
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

"""Findings of a running audit, kept on disk so memory stays flat however many objects fail.

A private temporary SQLite database (deleted on close) holds each finding once; reports read them back
in the order they need (by namespace for PolicyReports, worst first for text) without holding them all.
"""

from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Iterable, Iterator
from itertools import groupby

from kubegap.blobs import Blobs
from kubegap.findings import Finding, Result

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
        self.add_rows([row(self._blobs, f) for f in findings], uid)

    def add_rows(self, rows: Iterable[Row], uid: str | None = None) -> None:
        """Findings already pickled by `row` (an audit worker pickles them beside the evaluation)."""
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


def row(blobs: Blobs, finding: Finding) -> Row:
    o = finding.object
    return (o.namespace or "", o.kind, o.name, _rank(finding), blobs.dumps(finding))


def _rank(finding: Finding) -> int:
    """Failures and errors by severity; skips below every failure."""
    return finding.severity.rank + 1 if finding.result is not Result.SKIP else 0

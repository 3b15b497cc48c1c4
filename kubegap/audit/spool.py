"""Findings of a running audit, kept on disk so memory stays flat however many objects fail.

What it holds of a finding is what the audit's formats read (`Keep`): the finding itself, pickled, and
its JSON text (RULES.md §4) when the JSON format is asked for. Both are made where the finding is made,
in an audit worker while the others go on; the JSON report then writes the texts as they are, instead of
reading every finding back and encoding it after the last object (1.3 s of 10,000 objects' audit, all
on one core, docs/speed.md). An audit that writes JSON alone keeps no pickled finding at all.

Pickled findings go to a private temporary SQLite database, from which reports read them back in the
order they need (by namespace for PolicyReports, worst first for text) without holding them all. JSON
texts are only ever read in listing order, so they are appended to temporary files, one line each (the
encoder escapes every line break): a 50,000-object audit writes about 200 MB of them, and SQLite took
about an eighth of the audit process's time to store them. Each worker writes its own file, and the
spool keeps where each object's texts are, in listing order. All are deleted on close.
"""

from __future__ import annotations

import codecs
import os
import pickle
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby

from kubegap.blobs import Blobs
from kubegap.findings import Finding, Result
from kubegap.reports.json import finding_text
from kubegap.reports.registry import writable

_ORDERS = {
    "listed": "seq",
    "namespace": "ns, seq",
    "worst": "rank DESC, ns, kind, name, seq",
}


@dataclass(frozen=True, slots=True)
class Keep:
    """What the spool keeps of each finding: the finding, for the formats that read findings, and its JSON
    text, for the JSON format."""

    findings: bool = True
    json: bool = False

    @classmethod
    def for_formats(cls, formats: Iterable[str], policyreports: bool = False) -> Keep:
        """What the audit's formats read; writing PolicyReports to the cluster reads the findings."""
        wanted = set(formats)
        return cls(findings=policyreports or bool(wanted - {"json"}), json="json" in wanted)


FINDINGS = Keep()  # what every format reads
_PENDING = 512  # rows inserted together: about a page's findings, under a megabyte of texts
_BLOCK = 1 << 20  # bytes of JSON texts read at a time


# Where one object's JSON texts are: (the TextFile's key, offset, length in bytes)
Span = tuple[int, int, int]


class TextFile:
    """JSON texts appended to a temporary file, one line each, by the one process that writes it: the
    audit's own, or one opened for a worker before it forks, which the worker writes and the audit reads
    (kubegap.audit.workers). A worker's texts never travel back through its pipe: at 50,000 objects
    they are 215 MB, which the audit unpickled, encoded and wrote again (measured in docs/speed.md)."""

    def __init__(self, key: int) -> None:
        self.key = key
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self._staged: list[bytes] = []
        self._written = self._size = 0

    def append(self, texts: Iterable[str]) -> Span:
        # a lone surrogate (JSON input may hold one) is carried through as it came, as it is read
        data = "".join(f"{text}\n" for text in texts).encode("utf-8", "surrogatepass")
        start = self._size
        self._staged.append(data)
        self._size += len(data)
        if self._size - self._written >= _BLOCK:
            self.flush()
        return self.key, start, len(data)

    def flush(self) -> None:
        """Write what is staged: before a worker sends the spans, before the audit reads them."""
        if self._staged:
            os.pwrite(self._file.fileno(), b"".join(self._staged), self._written)
            self._staged, self._written = [], self._size

    def read(self, offset: int, length: int) -> Iterator[bytes]:
        # read by position: a worker's file is shared with the worker, and its position with it
        end = offset + length
        while offset < end and (block := os.pread(self._file.fileno(), min(_BLOCK, end - offset), offset)):
            offset += len(block)
            yield block

    def close(self) -> None:
        self._file.close()


class Spool:
    def __init__(self, keep: Keep = FINDINGS) -> None:
        self.keep = keep
        # "" opens a temporary on-disk database that SQLite removes on close.
        self._db = sqlite3.connect("", check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute(
            "CREATE TABLE findings (seq INTEGER PRIMARY KEY, ns TEXT NOT NULL, kind TEXT, name TEXT,"
            " rank INTEGER, uid TEXT, blob BLOB)"
        )
        # JSON texts: the audit's own file first, then one per worker; the texts in listing order are
        # these spans, each a run of one file's lines (a worker's chunk is one run).
        self._files = [TextFile(0)] if keep.json else []
        self._spans: list[list[int]] = []
        self.count = 0
        self._rows = Rows(keep)
        # Rows wait here and go in together: one INSERT call per object cost about 20 µs, as much as the
        # rows themselves (measured on the audit benchmark's objects). Read before any query.
        self._pending: list[tuple[str, str, str, int, str | None, bytes | None]] = []

    def add(self, findings: Iterable[Finding], uid: str | None = None) -> None:
        self.add_rows([self._rows.of(f) for f in findings], uid)

    def text_file(self) -> TextFile:
        """A file of JSON texts for a worker to write; `add_rows` takes the spans it tells of."""
        if not self.keep.json:
            raise RuntimeError("this audit's spool keeps no JSON texts")
        self._files.append(TextFile(len(self._files)))
        return self._files[-1]

    def add_rows(self, rows: Iterable[Row], uid: str | None = None, span: Span | None = None) -> None:
        """Findings already made into rows by `Rows.of` (an audit worker makes them beside the evaluation);
        `span`: where a worker wrote their JSON texts, which the rows then leave out."""
        rows = list(rows)
        self.count += len(rows)
        if self._files and rows:
            key, start, length = span or self._files[0].append(r[5] or "" for r in rows)
            last = self._spans[-1] if self._spans else None
            if last is not None and last[0] == key and last[1] + last[2] == start:
                last[2] += length  # a run of one file, as a worker's chunk is
            else:
                self._spans.append([key, start, length])
        if self.keep.findings:
            # SQLite takes only UTF-8: a lone surrogate is sorted by as U+FFFD (the finding keeps it)
            if uid is not None and not uid.isascii():
                uid = writable(uid)
            self._pending += [
                (ns, kind, name, rank, uid, blob)
                if ns.isascii() and name.isascii() and kind.isascii()
                else (writable(ns), writable(kind), writable(name), rank, uid, blob)
                for ns, kind, name, rank, blob, _ in rows
            ]
            if len(self._pending) >= _PENDING:
                self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._db.executemany(
                "INSERT INTO findings (ns, kind, name, rank, uid, blob) VALUES (?,?,?,?,?,?)", self._pending
            )
            self._pending = []

    def joined(self) -> Iterator[str]:
        """Every finding's JSON text in listing order, separated by ", " as the JSON report lists them, in
        pieces of about `_BLOCK` bytes. Read a block at a time, not a text at a time: the 215 MB of a
        50,000-object audit took 0.42 s to split, decode and join text by text, 0.16 s this way, and this is
        the audit's last, serial step (measured)."""
        if not self._files:
            raise RuntimeError("this audit's spool keeps no JSON texts")
        self._files[0].flush()
        # A line break is one byte of its own in UTF-8 and escaped inside JSON strings, so each one is the
        # end of a text; the decoder holds a character split between two blocks until the next.
        decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        held = ""
        for key, start, length in self._spans:
            for block in self._files[key].read(start, length):
                if held:
                    yield held
                held = decoder.decode(block.replace(b"\n", b", "))
        if held[:-2]:
            yield held[:-2]  # the last text's separator

    def findings(self, order: str = "listed") -> Iterator[Finding]:
        for _uid, finding in self.rows(order):
            yield finding

    def rows(self, order: str = "listed") -> Iterator[tuple[str | None, Finding]]:
        """(object uid, finding) pairs in the given order: listed, namespace or worst."""
        if not self.keep.findings:
            raise RuntimeError("this audit's spool keeps no findings, only their JSON texts")
        self._flush()
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
        for file in self._files:
            file.close()


# namespace, kind, name, rank, the finding pickled, its JSON text (each None where it is not kept)
Row = tuple[str, str, str, int, bytes | None, str | None]


class Rows:
    """Makes findings into spool rows, keeping what `keep` says: in an audit worker, or the audit. Given a
    `TextFile` (a worker's), their JSON texts are written there and the rows leave them out."""

    def __init__(self, keep: Keep, texts: TextFile | None = None) -> None:
        self._blobs = Blobs() if keep.findings else None
        self._json = keep.json
        self._texts = texts if keep.json else None

    def of(self, finding: Finding) -> Row:
        return self._row(finding, finding_text(finding) if self._json else None)

    def made(self, findings: Sequence[Finding]) -> tuple[tuple[Row, ...], Span | None]:
        """One object's findings as rows, and where their texts went if not in the rows."""
        if self._texts is None or not findings:
            return tuple(map(self.of, findings)), None
        span = self._texts.append(map(finding_text, findings))
        return tuple(self._row(f, None) for f in findings), span

    def _row(self, finding: Finding, text: str | None) -> Row:
        o = finding.object
        blob = self._blobs.dumps(finding) if self._blobs is not None else None
        return (o.namespace or "", o.kind, o.name, _rank(finding), blob, text)

    def flush(self) -> None:
        if self._texts is not None:
            self._texts.flush()


def _rank(finding: Finding) -> int:
    """Failures and errors by severity; skips below every failure."""
    return finding.severity.rank + 1 if finding.result is not Result.SKIP else 0

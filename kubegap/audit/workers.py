"""Audit worker processes: forked once the engine is built (so they inherit it, policies compiled once),
each evaluating chunks of objects while the audit process lists, resolves and records.

Each worker has its own task queue and result pipe, so a worker that dies is charged exactly the chunks it
held: those objects are "not evaluated" and a new worker takes its place. A queue's feeder thread sends the
chunks, so handing out work never blocks the audit while a worker is busy sending a result back.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import pickle
import queue
import signal
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from kubegap import forked
from kubegap.audit.spool import FINDINGS, Keep, Rows, TextFile
from kubegap.audit.verdict import Unevaluated, Verdict, judge_all
from kubegap.blobs import Blobs
from kubegap.evaluate import Context, Evaluator

log = logging.getLogger(__name__)

# Workers inherit the compiled engine by fork. Where there is none (Windows), `Workers` cannot start and
# the audit evaluates every object itself (kubegap.audit.runner).
_CONTEXT = multiprocessing.get_context("fork") if forked.CAN_FORK else None
_PARENT_CHECK = 5.0  # seconds between a waiting worker's checks that the audit is still alive
Chunk = list[tuple[Mapping[str, Any], Context | None]]
Outcome = Verdict | Unevaluated


@dataclass(eq=False)
class Ticket:
    """A chunk handed to a worker; `lost` says why its results will never come."""

    size: int
    slot: _Slot
    lost: str = ""


@dataclass(eq=False)
class _Slot:
    process: Any  # multiprocessing's fork Process
    tasks: Any  # multiprocessing Queue of pickled chunks (None: stop)
    results: Connection
    held: deque[Ticket] = field(default_factory=deque)

    def load(self) -> int:
        return sum(t.size for t in self.held)


class Workers:
    def __init__(
        self,
        engine: Evaluator,
        count: int,
        timeout: float,
        keep: Keep = FINDINGS,
        text_file: Callable[[], TextFile] | None = None,  # a file for each worker's JSON texts
    ) -> None:
        self.engine, self.timeout, self.keep, self.text_file = engine, timeout, keep, text_file
        self._blobs = Blobs()
        self._slots: list[_Slot] = []
        if _CONTEXT is None:
            raise OSError("this platform cannot fork worker processes")
        try:
            for _ in range(count):
                self._slots.append(self._spawn())
        except OSError:
            self.kill()
            raise

    def _spawn(self) -> _Slot:
        # Objects alive now are left out of garbage collection until the workers stop: a collection
        # writes to every object it visits, which would copy the pages the workers share with the audit
        # (the compiled engine): 30 MB less memory in all for two workers (docs/speed.md).
        gc.freeze()
        assert _CONTEXT is not None
        tasks = _CONTEXT.Queue()
        receive, send = _CONTEXT.Pipe(duplex=False)
        texts = self.text_file() if self.text_file is not None else None  # opened here, written there
        process = _CONTEXT.Process(
            target=_serve,
            args=(self.engine, self.timeout, self.keep, texts, tasks, send, os.getpid()),
            name="kubegap-audit-worker",
            daemon=True,  # stopped when the audit exits; a killed audit is noticed in _serve
        )
        process.start()
        send.close()  # the worker holds the only sending end: its death is an EOF here
        return _Slot(process, tasks, receive)

    def submit(self, chunk: Chunk) -> Ticket:
        """Raises RecursionError for an object nested too deep to pickle (JSON allows more depth)."""
        data = self._blobs.dumps(chunk)  # here, not in the queue's thread, which would drop it silently
        slot = min(self._slots, key=_Slot.load)
        ticket = Ticket(len(chunk), slot)
        slot.held.append(ticket)
        slot.tasks.put(data)
        return ticket

    def take(self, ticket: Ticket) -> list[Outcome] | str:
        """The chunk's outcomes in order, or why they were lost. Tickets are taken in the order submitted."""
        slot = ticket.slot
        if ticket.lost:
            return ticket.lost
        assert slot.held and slot.held[0] is ticket
        try:
            outcomes: list[Outcome] = pickle.loads(slot.results.recv_bytes())
        except (EOFError, OSError):
            self._replace(slot)
            return ticket.lost
        slot.held.popleft()
        return outcomes

    def _replace(self, slot: _Slot) -> None:
        """A worker died: every chunk it held is lost, and a new worker takes its place."""
        slot.process.join(1.0)
        how = _how(slot.process.exitcode)
        for held in slot.held:
            held.lost = f"the worker process evaluating them died ({how})"
        _discard(slot)
        self._slots.remove(slot)
        try:
            self._slots.append(self._spawn())
        except OSError as exc:  # no new process (a pid limit): the audit evaluates the rest itself
            log.warning("cannot start a new audit worker: %s", exc)

    def __len__(self) -> int:
        return len(self._slots)

    def close(self) -> None:
        """Stop every worker: politely when done, at once when the audit was interrupted."""
        for slot in self._slots:
            slot.tasks.put(None)
        for slot in self._slots:
            slot.process.join(5.0)
        self.kill()

    def kill(self) -> None:
        for slot in self._slots:
            if slot.process.is_alive():
                slot.process.terminate()
        for slot in self._slots:
            slot.process.join()
            _discard(slot)
        self._slots.clear()
        gc.unfreeze()


def _discard(slot: _Slot) -> None:
    slot.tasks.cancel_join_thread()  # chunks never read need not be flushed to a worker that is gone
    slot.tasks.close()
    slot.results.close()


def _how(code: int | None) -> str:
    if code is not None and code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def _serve(
    engine: Evaluator,
    timeout: float,
    keep: Keep,
    texts: TextFile | None,
    tasks: Any,
    results: Connection,
    parent: int,
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the audit's: it stops and reaps its workers
    blobs, rows = Blobs(), Rows(keep, texts)
    while os.getppid() == parent:  # else the audit died without stopping us (SIGKILL, SIGTERM)
        try:
            data = tasks.get(timeout=_PARENT_CHECK)
        except queue.Empty:
            continue
        if data is None:
            return
        chunk: Chunk = pickle.loads(data)
        outcomes = judge_all(engine, chunk, timeout, rows)
        rows.flush()  # the texts the outcomes tell of are written before the audit reads of them
        results.send_bytes(blobs.dumps(outcomes))

"""What the audit has handed to its worker processes, and the coverage effects queued behind it.

Everything is released in listing order: an object's result, then the gap of a list that failed after it,
so a report written with workers is the one a single process writes. Once a page is sent, at most `most`
objects (two pages) are in flight, so memory stays flat however large the cluster.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from kubegap.audit.coverage import Gap, KindCoverage
from kubegap.audit.workers import Outcome, Ticket, Workers
from kubegap.evaluate import Context
from kubegap.findings import ObjectRef


class Admitted(NamedTuple):
    """An object to evaluate, with what recording its result needs."""

    obj: dict[str, Any]
    uid: Any
    namespace: Any
    is_pod: bool
    context: Context | None


Settle = Callable[[KindCoverage, Admitted, Outcome], None]
Judge = Callable[[Admitted], Outcome]


@dataclass(eq=False)
class _Batch:
    """A chunk in a worker's hands (or evaluated here: `outcomes`); `done` counts its objects recorded."""

    entry: KindCoverage
    items: list[Admitted]
    ticket: Ticket | None
    outcomes: list[Outcome] | None = None
    done: int = 0


class Flight:
    def __init__(self, workers: Workers, judge: Judge, settle: Settle, most: int) -> None:
        self.workers, self.judge, self.settle, self.most = workers, judge, settle, most
        self._queue: deque[_Batch | Callable[[], None]] = deque()
        self._objects = 0

    def send(self, entry: KindCoverage, work: list[Admitted]) -> None:
        """One chunk per worker: the per-task cost (pickling, a wake-up) is paid per chunk, not per object."""
        size = max(1, -(-len(work) // len(self.workers)))
        for start in range(0, len(work), size):
            chunk = work[start : start + size]
            try:
                batch = _Batch(entry, chunk, self.workers.submit([(a.obj, a.context) for a in chunk]))
            except RecursionError:  # an object too deep to pickle: this process evaluates the chunk
                batch = _Batch(entry, chunk, None, [self.judge(a) for a in chunk])
            self._queue.append(batch)
            self._objects += len(chunk)
        while self._objects > self.most:
            self._next()

    def then(self, effect: Callable[[], None]) -> None:
        """An effect on the coverage, after what is in flight."""
        if self._queue:
            self._queue.append(effect)
        else:
            effect()

    def drain(self) -> None:
        while self._queue:
            self._next()

    def _next(self) -> None:
        head = self._queue[0]
        if not isinstance(head, _Batch):
            self._queue.popleft()
            head()
            return
        outcomes = head.outcomes if head.ticket is None else self.workers.take(head.ticket)
        assert outcomes is not None
        if isinstance(outcomes, str):
            _lost(head, outcomes)
        else:
            for admitted, outcome in zip(head.items[head.done :], outcomes[head.done :], strict=True):
                self.settle(head.entry, admitted, outcome)
                head.done += 1
        self._queue.popleft()
        self._objects -= len(head.items)

    def abandon(self) -> None:
        """Ctrl-C: the workers are gone; what they held is not evaluated, the queued effects still apply."""
        unrecorded: dict[int, tuple[KindCoverage, int]] = {}
        while self._queue:
            item = self._queue.popleft()
            if not isinstance(item, _Batch):
                item()
                continue
            entry, count = unrecorded.get(id(item.entry), (item.entry, 0))
            unrecorded[id(item.entry)] = (entry, count + len(item.items) - item.done)
        for entry, count in unrecorded.values():
            entry.not_evaluated += count
            entry.gaps.append(Gap(None, f"interrupted before {count} listed object(s) were evaluated"))


def _lost(batch: _Batch, why: str) -> None:
    """A chunk whose worker died: its objects are not evaluated, never a pass."""
    count, first, last = len(batch.items), batch.items[0].obj, batch.items[-1].obj
    names = ObjectRef.of(first).display() + (f" to {ObjectRef.of(last).display()}" if count > 1 else "")
    batch.entry.not_evaluated += count
    batch.entry.gaps.append(Gap(None, f"not evaluated: {count} object(s) ({names}): {why}"))
    batch.done = count

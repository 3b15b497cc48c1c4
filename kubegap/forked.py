"""Work over many files in worker processes: lint, its fix reports and `kubegap fix`.

The workers are forked once the engine is built, so they inherit it (and the task, a closure over it)
instead of receiving it pickled. Each takes runs of consecutive files, several per worker: the results
come back in the files' order, as one process gives them; a worker that finishes early takes the next
run; and each run's results are handed on while the workers go on with the rest.

The pool is a few pipes: the runs' numbers in one that every worker reads from (a pipe hands each read
of four bytes to one reader), and each worker's results in a pipe of its own. `concurrent.futures` did
the same with threads and queues, but importing it and starting its pool took the 10 ms before the
first fork that a lint of 2,000 files waited for (measured); here the workers are forked at once.
"""

from __future__ import annotations

import os
import pickle
import select
import selectors
import signal
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")

PARALLEL_MIN_FILES = 64  # fewer files are worked on in this process: starting workers would cost more
# Workers inherit the engine by fork; where there is none (Windows), the work stays in this process.
CAN_FORK = hasattr(os, "fork")
_RUNS_PER_JOB = 8
_NUMBER = 4  # bytes of a run's number in the runs' pipe: reads this short are never split between readers
_HEADER = 13  # a result's run number (4 bytes), its length (8) and whether it is an exception (1)
# a write this long is never split (POSIX; at least 512); read where there is fork, the module everywhere
_PIPE_BUF = getattr(select, "PIPE_BUF", 512) // _NUMBER * _NUMBER


class WorkerDied(RuntimeError):
    """A worker process ended before sending every result of the runs it took."""


def each_run(task: Callable[[Sequence[int]], T], total: int, jobs: int) -> Iterator[T]:
    """`task` over runs of the indexes `0 … total - 1`, results in order: in `jobs` worker processes when
    there are many files, else one call over them all in this process. An exception `task` raises in a
    worker is raised here, where its run's result would have come."""
    if not parallel(total, jobs):
        yield task(range(total))
        return
    work = runs(range(total), jobs)
    pool = _Pool(task, work, min(jobs, len(work)))
    try:
        yield from pool.results()
    except BaseException:  # a failure, Ctrl-C, or the caller stopped reading: the rest is not wanted
        pool.close(kill=True)
        raise
    pool.close(kill=False)


def parallel(total: int, jobs: int) -> bool:
    """Whether `total` files are worked on in `jobs` worker processes."""
    return jobs > 1 and total >= PARALLEL_MIN_FILES and CAN_FORK


def each_file(task: Callable[[int], T], total: int, jobs: int) -> Iterator[T]:
    """`task(0)`, …, `task(total - 1)` in order, each as soon as it and those before it are done."""
    for part in each_run(lambda run: [task(index) for index in run], total, jobs):
        yield from part


def runs(items: Sequence[T], jobs: int) -> list[Sequence[T]]:
    """Runs of consecutive items for `jobs` workers, several per worker, the last `jobs` runs' worth cut
    in quarters: the worker that takes the last run then finishes soon after the others, where with
    runs alike one waited up to a whole run (60 ms of a lint of the 2,000 corpus, measured)."""
    size = max(1, -(-len(items) // (jobs * _RUNS_PER_JOB)))
    small = max(min(size, 8), size // 4)  # not below 8 items: each run has its cost
    head = max(0, len(items) - size * jobs) // size * size  # whole runs before the short ones
    return [items[start : start + size] for start in range(0, head, size)] + [
        items[start : start + small] for start in range(head, len(items), small)
    ]


class _Pool:
    """`jobs` forked workers taking the runs of `work` in turn."""

    def __init__(self, task: Callable[[Sequence[int]], Any], work: list[Sequence[int]], jobs: int) -> None:
        self.work = work
        self.workers: dict[int, int] = {}  # result pipe's reading end -> the worker's pid
        numbers, self.numbers = os.pipe()
        # Every run's number, written as the pipe takes them (many runs fill it), each write whole numbers
        # of at most PIPE_BUF bytes, so that no reader gets part of a number.
        self.unsent = b"".join(n.to_bytes(_NUMBER, "little") for n in range(len(work)))
        try:
            for _ in range(jobs):
                results, results_in = os.pipe()
                try:
                    pid = os.fork()
                except OSError:  # no process to be had (a limit on processes): the pipe is not kept
                    os.close(results)
                    os.close(results_in)
                    raise
                if pid == 0:  # the worker: it keeps no end of the pipes but its two
                    _serve(task, work, numbers, results_in, [self.numbers, results, *self.workers])
                os.close(results_in)
                self.workers[results] = pid
        except BaseException:
            self.close(kill=True)
            raise
        finally:
            os.close(numbers)
        os.set_blocking(self.numbers, False)
        self._send()

    def results(self) -> Iterator[Any]:
        """Each run's result in the runs' order, as soon as it and those before it have come."""
        done: dict[int, tuple[bool, Any]] = {}
        pending = {fd: bytearray() for fd in self.workers}
        following = 0
        with selectors.DefaultSelector() as waiting:
            for fd in pending:
                waiting.register(fd, selectors.EVENT_READ)
            if self.numbers >= 0:
                waiting.register(self.numbers, selectors.EVENT_WRITE)
            while True:
                while following in done:
                    failed, value = done.pop(following)
                    if failed:
                        raise value
                    yield value
                    following += 1
                if following == len(self.work):
                    return
                if not self.workers:
                    raise WorkerDied("the worker processes ended without sending every run's result")
                for key, _ in waiting.select():
                    fd = int(key.fd)
                    if fd == self.numbers:
                        self._send()
                        if self.numbers < 0:
                            waiting.unregister(fd)
                        continue
                    chunk = os.read(fd, 1 << 20)
                    if chunk:
                        pending[fd] += chunk
                        _take(pending[fd], done)
                        continue
                    waiting.unregister(fd)  # the worker has ended: cleanly, unless it failed
                    self._reap(fd)

    def _send(self) -> None:
        """As many of the numbers left as the pipe takes now; the pipe is closed once all are sent, which
        tells the workers there is no more."""
        while self.unsent:
            try:
                sent = os.write(self.numbers, self.unsent[:_PIPE_BUF])
            except BlockingIOError:
                return
            self.unsent = self.unsent[sent:]
        os.close(self.numbers)
        self.numbers = -1

    def _reap(self, fd: int) -> None:
        pid = self.workers.pop(fd)
        os.close(fd)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise WorkerDied(f"a worker process ended before its runs were done ({_how(status)})")

    def close(self, kill: bool) -> None:
        """Reap the workers: stopped first where the results are not all wanted (one failed, or the
        caller stopped reading), else as they end once every run is taken."""
        if self.numbers >= 0:
            os.close(self.numbers)
            self.numbers = -1
        for fd, pid in list(self.workers.items()):
            if kill:  # one that has ended is still there to be reaped, so it can be sent the signal
                os.kill(pid, signal.SIGTERM)
            os.close(fd)
            os.waitpid(pid, 0)
        self.workers.clear()


def _take(buffer: bytearray, done: dict[int, tuple[bool, Any]]) -> None:
    """Every whole result in `buffer`, moved into `done` by run number."""
    while len(buffer) >= _HEADER:
        size = int.from_bytes(buffer[_NUMBER : _NUMBER + 8], "little")
        if len(buffer) < _HEADER + size:
            return
        number = int.from_bytes(buffer[:_NUMBER], "little")
        done[number] = (bool(buffer[_HEADER - 1]), pickle.loads(buffer[_HEADER : _HEADER + size]))
        del buffer[: _HEADER + size]


def _serve(
    task: Callable[[Sequence[int]], Any],
    work: list[Sequence[int]],
    numbers: int,
    results: int,
    others: list[int],  # the ends of the pipes the worker has no use for
) -> NoReturn:
    """A worker: each run whose number it reads, until none is left; its end is `os._exit`, whatever
    happens, so nothing of the parent's (its buffered output, exit handlers, the pool) runs twice."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the workers
        for fd in others:
            os.close(fd)
        while number := os.read(numbers, _NUMBER):
            index = int.from_bytes(number, "little")
            try:
                value, failed = task(work[index]), False
            except Exception as exc:  # raised in the parent, where the result would have come
                value, failed = exc, True
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            head = index.to_bytes(_NUMBER, "little") + len(data).to_bytes(8, "little") + bytes([failed])
            _write(results, head + data)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.WEXITSTATUS(status)}"

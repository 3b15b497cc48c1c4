"""Work over many files in worker processes: lint, its fix reports and `kubegap fix`.

The workers are forked once the engine is built, so they inherit it (and the task, a closure over it)
instead of receiving it pickled. Each takes runs of consecutive files, several per worker: the results
come back in the files' order, as one process gives them; a worker that finishes early takes the next
run; and each run's results are handed on while the workers go on with the rest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

PARALLEL_MIN_FILES = 64  # fewer files are worked on in this process: starting workers would cost more
# Workers inherit the engine by fork; where there is none (Windows), the work stays in this process.
CAN_FORK = hasattr(os, "fork")
_RUNS_PER_JOB = 8
_TASK: Callable[[Sequence[int]], Any] | None = None  # set only while a pool runs; inherited by its workers


def each_run(task: Callable[[Sequence[int]], T], total: int, jobs: int) -> Iterator[T]:
    """`task` over runs of the indexes `0 … total - 1`, results in order: in `jobs` worker processes when
    there are many files, else one call over them all in this process. `task` must not raise."""
    global _TASK
    if not parallel(total, jobs):
        yield task(range(total))
        return
    # imported here: a run of one process never needs them, and they were 5 ms of linting one file
    import concurrent.futures
    import multiprocessing

    _TASK = task
    context = multiprocessing.get_context("fork")
    try:
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
            yield from pool.map(_run, runs(range(total), jobs))
    finally:
        _TASK = None


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


def _run(indexes: Sequence[int]) -> Any:
    assert _TASK is not None
    return _TASK(indexes)

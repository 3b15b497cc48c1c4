"""Per-file work of lint's fix reports (the fixable count, SARIF's suggested fixes) in worker processes,
as lint itself runs: forked, so each inherits the compiled engine instead of receiving it pickled, and
given runs of consecutive files, several per worker, so that one that finishes early takes the next."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from kubegap import lint

T = TypeVar("T")

_TASK: Callable[[int], Any] | None = None  # set only while a pool runs; inherited by its forked workers


def each_file(task: Callable[[int], T], total: int, jobs: int) -> Iterator[T]:
    """`task(0)`, …, `task(total - 1)` in order, each as soon as it and those before it are done; in
    worker processes when there are many files (`jobs` > 1). `task` must not raise."""
    global _TASK
    if jobs <= 1 or total < lint.PARALLEL_MIN_FILES:
        yield from (task(index) for index in range(total))
        return
    _TASK = task
    try:
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
            for part in pool.map(_run, lint.runs(range(total), jobs)):
                yield from part
    finally:
        _TASK = None


def _run(indexes: Sequence[int]) -> list[Any]:
    assert _TASK is not None
    return [_TASK(index) for index in indexes]

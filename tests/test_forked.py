"""Work over many files in forked worker processes (kubegap.forked): in order, and really in workers."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from kubegap import forked


@pytest.mark.parametrize(("count", "jobs"), [(0, 2), (1, 2), (64, 2), (2000, 2), (1000, 3)])
def test_runs_cover_the_items_in_order_several_per_worker(count: int, jobs: int) -> None:
    chunks = forked.runs(list(range(count)), jobs)
    assert [item for chunk in chunks for item in chunk] == list(range(count))
    assert all(chunks) and len(chunks) <= 12 * jobs  # 8 per worker, and the last ones cut in quarters
    assert count < 8 * jobs or len(chunks) > jobs  # a worker that finishes early has a next run
    if chunks:  # the last runs no longer than the first: the worker that takes one soon finishes
        assert max(map(len, chunks[-jobs:])) <= len(chunks[0])


def test_the_last_runs_of_many_files_are_short_and_none_is_tiny() -> None:
    chunks = forked.runs(list(range(2000)), 2)
    assert [len(c) for c in chunks[:14]] == [125] * 14  # 8 runs a worker, but for the last 2 runs' worth
    assert [len(c) for c in chunks[14:]] == [31] * 8 + [2]
    assert {len(c) for c in forked.runs(list(range(64)), 2)} == {4}  # runs of 4 are not cut further


def test_each_file_gives_every_result_in_order_from_worker_processes() -> None:
    total = forked.PARALLEL_MIN_FILES * 2
    here = os.getpid()
    seen = list(forked.each_file(lambda index: (index, os.getpid()), total, jobs=2))
    assert [index for index, _ in seen] == list(range(total))
    assert here not in {pid for _, pid in seen}  # each was worked out in a worker
    alone = list(forked.each_file(lambda index: (index, os.getpid()), total, jobs=1))
    assert alone == [(index, here) for index in range(total)]


def test_few_files_are_one_run_in_this_process() -> None:
    calls: list[Sequence[int]] = []
    assert list(forked.each_run(lambda run: calls.append(run) or len(run), 5, jobs=2)) == [5]
    assert [list(run) for run in calls] == [[0, 1, 2, 3, 4]]


def test_without_fork_the_work_stays_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "CAN_FORK", False)  # as on Windows
    total = forked.PARALLEL_MIN_FILES * 2
    seen = list(forked.each_file(lambda index: (index, os.getpid()), total, jobs=2))
    assert seen == [(index, os.getpid()) for index in range(total)]


def test_an_exception_in_a_worker_is_raised_where_its_result_would_come() -> None:
    def task(run: Sequence[int]) -> int:
        if 70 in run:
            raise ValueError(f"run from {run[0]}")
        return len(run)

    results = forked.each_run(task, 128, jobs=2)
    first = next(results)
    with pytest.raises(ValueError, match="run from"):
        list(results)
    assert first == len(forked.runs(range(128), 2)[0])


def test_a_worker_that_dies_is_an_error_never_a_missing_result() -> None:
    def task(run: Sequence[int]) -> int:
        if 70 in run:
            os._exit(3)  # as a crash would end it, without a word
        return len(run)

    with pytest.raises(forked.WorkerDied, match="exit code 3"):
        list(forked.each_run(task, 128, jobs=2))


def test_results_larger_than_a_pipe_holds_come_whole_and_in_order() -> None:
    big = list(forked.each_run(lambda run: bytes([run[0] % 256]) * (1 << 20), 128, jobs=2))
    starts = [run[0] for run in forked.runs(range(128), 2)]
    assert big == [bytes([start % 256]) * (1 << 20) for start in starts]


def test_more_runs_than_a_pipe_holds_numbers_are_all_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    # 20,000 runs: 80,000 bytes of run numbers, more than a pipe holds (64 KiB on Linux), so the numbers
    # are written as the workers take them
    monkeypatch.setattr(forked, "runs", lambda items, jobs: [items[i : i + 1] for i in range(len(items))])
    assert list(forked.each_file(lambda index: index * 2, 20_000, jobs=2)) == list(range(0, 40_000, 2))


def test_a_caller_that_stops_reading_stops_the_workers_at_once() -> None:
    # The runs after the first would take an hour: the workers are stopped, not waited for. A guard ends
    # the test if they are waited for (a failure, not a measurement).
    def task(run: Sequence[int]) -> int:
        if run[0] > 0:
            time.sleep(3600)
        return os.getpid()

    def waited(*_: object) -> None:
        raise AssertionError("the workers were waited for")

    previous = signal.signal(signal.SIGALRM, waited)
    signal.alarm(60)
    try:
        results = forked.each_run(task, 128, jobs=2)
        pid = next(results)
        results.close()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped and reaped


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files through /proc (Linux)")
def test_a_worker_that_cannot_be_forked_is_an_error_that_keeps_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[int] = []
    real_fork = os.fork

    def fork() -> int:  # the second worker finds the process limit reached
        if started:
            raise BlockingIOError("Resource temporarily unavailable")
        pid = real_fork()
        if pid:
            started.append(pid)
        return pid

    def open_files() -> list[str]:
        return sorted(entry.name for entry in Path("/proc/self/fd").iterdir())

    monkeypatch.setattr(os, "fork", fork)
    before = open_files()
    with pytest.raises(BlockingIOError):
        list(forked.each_run(lambda run: len(run), 128, jobs=2))
    assert open_files() == before  # every pipe closed
    with pytest.raises(ProcessLookupError):
        os.kill(started[0], 0)  # the first worker stopped and reaped

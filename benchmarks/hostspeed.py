"""How fast this machine runs Python at the moment, printed above each benchmark's figures.

Benchmark machines are often shared, and their speed moves: on 4 December the engine's typical object
took 2.7 to 4.2 ms of CPU where it had taken 0.9 to 1.4 ms the day before, with the same code. CPU time
does not hide such a difference, so figures from two runs are comparable only where this loop took about
as long in both.
"""

from __future__ import annotations

import time


def loop_ms(rounds: int = 5) -> float:
    """CPU milliseconds of a fixed loop of the work the engine does most (dict lookups, small tuples,
    string tests, calls), best of `rounds`."""
    table = {f"KEY_{index}": f"value-{index}" for index in range(64)}
    keys = [*table, "ABSENT"] * 4

    def step(key: str) -> tuple[str, int] | None:
        value = table.get(key)
        return (key, len(value)) if value is not None and value.startswith("value") else None

    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(200):
            found = [step(key) for key in keys]
        best = min(best, time.process_time() - start)
    assert found[-1] is None  # the loop did its work
    return best * 1e3


def line(ms: float | None = None) -> str:
    """What to print above a benchmark's figures; `ms`, a reading already taken."""
    ms = loop_ms() if ms is None else ms
    return (
        f"host: a fixed Python loop takes {ms:.1f} ms of CPU (compare runs' figures only where this is alike)"
    )


if __name__ == "__main__":
    print(line())

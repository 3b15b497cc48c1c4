"""Benchmark: the engine alone (facts + CEL + findings), per object, in one process.

    python benchmarks/bench_engine.py [--count 400] [--backend cel-expr] [--profile OUT.prof]

Objects, each evaluated `--count` times as distinct copies (a different `--save_steps` per copy, so no
cache keyed by content can hit between copies). One copy made by a controller and seen again, which is
what an audit of a cluster full of one Job's pods sees (kubegap.memo), is reported on its own line:
  - typical:   a JobSet with 3 replicated jobs, one GPU container each (the target object);
  - review10k: the 16-worker PyTorchJob of the 10 KB webhook review;
  - review50k: the PyTorchJob of the 50 KB webhook review;
  - jobset64:  a JobSet with 64 replicated jobs.
Prints median and p99 per object (CPU time of the process, so other work on a shared machine counts
less; `--wall` for wall time) and their ratio to the target; asserts nothing.
Target: typical ≤ 0.3 ms, median and p99.

    python benchmarks/bench_engine.py --instructions [--against DIR]

counts instead the machine instructions one typical object costs (valgrind's callgrind, which must be
installed: the processes of `--count` evaluations and of one, subtracted), for this checkout and for the
checkout at DIR (a worktree of another commit, built the same way), with their ratio. Other tenants of a
shared machine move times by tens of percent from one minute to the next; the count does not move.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from webhook_payloads import copies, jobset, owned, pytorchjob

from kubegap import native
from kubegap.cli import GC_THRESHOLDS
from kubegap.config import Settings
from kubegap.evaluate import Engine, build_engine

TARGET_MS = 0.3
CPU = True  # --wall: time with the wall clock instead


def timed(engine: Engine, objects: list[dict[str, Any]]) -> list[float]:
    """CPU seconds of each evaluation: on a shared machine, wall time also counts other people's work."""
    clock = time.process_time if CPU else time.perf_counter
    times = []
    for obj in objects:
        start = clock()
        engine.evaluate(obj)
        times.append(clock() - start)
    return times


def row(name: str, size: int, times: list[float], target: float | None) -> str:
    ordered = sorted(times)
    median = statistics.median(ordered) * 1e3
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3
    text = f"{name:<22} {size / 1024:6.1f} KB  median {median:7.3f} ms  p99 {p99:7.3f} ms"
    if target is not None:
        text += f"  = {median / target:4.2f}x / {p99 / target:4.2f}x the {target} ms target"
    return text


def instructions(checkout: Path, count: int, backend: str) -> int:
    """Instructions one typical object costs with kubegap imported from `checkout`: the process that
    evaluates `count + 1` of `count + 1` copies less the one that evaluates one of them, so start-up,
    building the engine and copying the objects cancel out. Hash seeds fixed: the count repeats exactly."""
    totals = []
    for evaluated in (1, count + 1):
        with tempfile.TemporaryDirectory() as work:
            out = Path(work) / "callgrind.out"
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
            command += [__file__, "--evaluate-copies", str(count + 1), str(evaluated), "--backend", backend]
            env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
            subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            line = next(t for t in out.read_text().splitlines() if t.startswith("totals:"))
            totals.append(int(line.split()[1]))
    return (totals[1] - totals[0]) // count


def _evaluate_copies(total: int, evaluated: int, backend: str) -> None:
    gc.set_threshold(*GC_THRESHOLDS)
    engine = build_engine(Settings(cel_backend=backend))
    for obj in copies(jobset(3), total)[:evaluated]:
        engine.evaluate(obj)


def _instructions(args: argparse.Namespace) -> int:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    here = Path(__file__).resolve().parent.parent
    count = min(args.count, 200)  # each evaluation is about 50 times slower under callgrind
    print(f"instructions per typical object (callgrind, {count} evaluations), {native.state().describe()}")
    mine = instructions(here, count, args.backend)
    print(f"  this checkout ({here}): {mine:,}", flush=True)
    if args.against:
        theirs = instructions(Path(args.against).resolve(), count, args.backend)
        print(f"  {args.against}: {theirs:,}; this checkout = {mine / theirs:.3f}x")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--backend", default="cel-expr")
    parser.add_argument("--profile", metavar="OUT", help="write a cProfile of the typical object's runs")
    parser.add_argument("--wall", action="store_true", help="wall-clock time instead of CPU time")
    parser.add_argument("--instructions", action="store_true", help="count instructions (valgrind), not time")
    parser.add_argument("--against", metavar="DIR", help="with --instructions: also the checkout at DIR")
    parser.add_argument("--evaluate-copies", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.evaluate_copies:  # the process callgrind counts (`instructions`)
        _evaluate_copies(*args.evaluate_copies, args.backend)
        return 0
    if args.instructions:
        return _instructions(args)
    global CPU
    CPU = not args.wall
    gc.set_threshold(*GC_THRESHOLDS)  # as every kubegap command runs the engine (kubegap/cli.py)
    engine = build_engine(Settings(cel_backend=args.backend))
    cases: list[tuple[str, dict[str, Any], float | None, int]] = [
        ("typical (3 templates)", jobset(3), TARGET_MS, args.count),
        ("review10k", pytorchjob(extra_env=40), None, args.count),
        ("review50k", pytorchjob(extra_env=135), None, max(50, args.count // 4)),
        ("jobset64", jobset(64), None, max(20, args.count // 20)),
    ]
    clock = "wall" if args.wall else "CPU"
    print(
        f"engine per object ({args.backend}, {clock} time), {len(engine.compiled)} policies, "
        f"{native.state().describe()}"
    )
    for name, obj, target, count in cases:
        size = len(json.dumps(obj))
        objects = copies(obj, count)
        timed(engine, objects[:3])  # warm caches of the code, not of these objects' content
        run: Callable[[], list[float]] = lambda objects=objects: timed(engine, objects)  # noqa: E731
        if args.profile and target is not None:
            profiler = cProfile.Profile()
            times = profiler.runcall(run)
            profiler.dump_stats(args.profile)
        else:
            times = run()
        print(row(name, size, times, target), flush=True)
        if target is not None:
            same = timed(engine, [owned(objects[0])] * count)
            print(row("  owned copy, again", size, same, target), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

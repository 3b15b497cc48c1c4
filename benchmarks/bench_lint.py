"""Benchmark: `kubegap lint` on 2,000 realistic training manifests against the parse-only floor, and the
per-object evaluation time of each CEL backend.

    python benchmarks/bench_lint.py [--count 2000] [--repeat 3]

Also times the process's start (`--version`) and a lint of one manifest, what a pre-commit hook waits for.
Prints figures and ratios; asserts nothing (the machines are shared and noisy).
CPU times are printed too: on a shared machine they move less than wall times.
Targets: lint ≤ 1.2x the floor (yaml.load_all with the C loader over the same files);
cel-expr ≥ 50x faster per evaluation than cel-python.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus

from kubegap import native
from kubegap.cel import CelError
from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.facts import gather
from kubegap.kinds import workload_of


def best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def floor(paths: list[Path]) -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in paths:
        for _ in yaml.load_all(path.read_bytes(), Loader=loader):
            pass


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli(directory: Path, jobs: str) -> None:
    env = {**os.environ, "KUBEGAP_JOBS": jobs}
    done = subprocess.run(
        [sys.executable, "-m", "kubegap", "lint", "--format", "json", str(directory)],
        stdout=subprocess.DEVNULL,
        env=env,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"kubegap lint failed with exit code {done.returncode}")


def per_object(backend: str, objects: list[dict[str, object]], repeat: int, fast: bool = True) -> float:
    """Seconds per object; `fast=False` leaves every CEL program to the runtime (KUBEGAP_CEL_FAST=0)."""
    before = os.environ.get("KUBEGAP_CEL_FAST")
    os.environ["KUBEGAP_CEL_FAST"] = "1" if fast else "0"
    try:
        engine = build_engine(Settings(cel_backend=backend))
    finally:
        if before is None:
            del os.environ["KUBEGAP_CEL_FAST"]
        else:
            os.environ["KUBEGAP_CEL_FAST"] = before
    engine.memo = None  # the corpus has no copies, but every object is evaluated here as if new
    engine.evaluate(objects[0])
    seconds = best(repeat, lambda: [engine.evaluate(o) for o in objects])
    return seconds / len(objects)


def per_evaluation(backend_name: str, objects: list[dict[str, object]]) -> tuple[float, int]:
    """Seconds per CEL evaluation alone (activations prebuilt), over every validation of every unit."""
    engine = build_engine(Settings(cel_backend=backend_name))
    calls: list[tuple[object, object]] = []
    for obj in objects:
        workload = workload_of(obj)
        assert workload is not None
        gathered = gather(obj, workload, engine.catalogue, {})
        for compiled in engine.compiled:
            for validation in compiled.validations:
                for unit in gathered.units.get(validation.validation.scope, ()):
                    bindings = {
                        "object": obj,
                        "facts": gathered.facts,
                        "params": compiled.params,
                        "variables": {},
                        **unit.bindings,
                    }
                    converted = {k: engine.backend.convert(v) for k, v in bindings.items()}
                    calls.append((validation.expression, engine.backend.activation(converted)))

    def run_all() -> None:
        for program, activation in calls:
            with contextlib.suppress(CelError):
                program(activation)

    run_all()  # cel-expr converts an activation's values on first use; time the evaluations alone
    return best(3, run_all) / len(calls), len(calls)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = corpus.write(Path(tmp), args.count)
        size = sum(p.stat().st_size for p in paths)
        print(
            f"corpus: {len(paths)} manifests, {size / len(paths) / 1024:.1f} KiB each, {size / 2**20:.1f} MiB"
        )
        print(f"kubegap: {native.state().describe()}")
        t_floor = best(args.repeat, lambda: floor(paths))
        print(f"parse-only floor (yaml.load_all, C loader):   {t_floor:7.3f} s")
        cpu = time.process_time()
        floor(paths)
        cpu_floor = time.process_time() - cpu
        print(f"  the floor's CPU time, one run:                {cpu_floor:7.3f} s")
        startup = best(
            args.repeat,
            lambda: subprocess.run(
                [sys.executable, "-m", "kubegap", "--version"], stdout=subprocess.DEVNULL, check=True
            ),
        )
        print(f"process start-up (kubegap --version):          {startup:7.3f} s")
        one = best(
            args.repeat,
            lambda: subprocess.run(
                [sys.executable, "-m", "kubegap", "lint", "--format", "json", str(paths[0])],
                stdout=subprocess.DEVNULL,
                check=False,
            ),
        )
        print(f"kubegap lint of one manifest (a pre-commit run): {one:7.3f} s")
        for jobs in ("1", "auto"):
            t_lint = best(args.repeat, lambda jobs=jobs: cli(Path(tmp), jobs))
            print(
                f"kubegap lint end to end (KUBEGAP_JOBS={jobs:<4}):    {t_lint:7.3f} s  "
                f"= {t_lint / t_floor:4.2f}x the floor (target <= 1.2x)"
            )
            before = children_cpu()
            cli(Path(tmp), jobs)
            used = children_cpu() - before
            print(
                f"  its CPU time, one run (every process):        {used:7.3f} s  = {used / cpu_floor:4.2f}x"
            )
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        objects = [yaml.load(p.read_bytes(), Loader=loader) for p in paths[:200]]
        fast = per_object("cel-expr", objects, args.repeat)
        runtime = per_object("cel-expr", objects, args.repeat, fast=False)
        slow = per_object("cel-python", objects[:50], 1, fast=False)
        print(f"per object, every policy, as lint runs:        {fast * 1e6:9.0f} µs")
        print(
            f"  CEL all in cel-expr (KUBEGAP_CEL_FAST=0):    {runtime * 1e6:9.0f} µs  "
            f"= {runtime / fast:5.2f}x"
        )
        print(
            f"  CEL all in cel-python (KUBEGAP_CEL_FAST=0):  {slow * 1e6:9.0f} µs  "
            f"= {slow / runtime:5.1f}x cel-expr's"
        )
        engine = build_engine(Settings(cel_backend="cel-expr"))
        evals = statistics.mean(len(engine.evaluate(o).results) for o in objects[:50])
        print(f"(about {evals:.0f} validations per object)")
        fast_eval, count = per_evaluation("cel-expr", objects[:100])
        slow_eval, _ = per_evaluation("cel-python", objects[:100])
        print(f"per CEL evaluation ({count} calls), cel-expr:     {fast_eval * 1e6:9.1f} µs")
        print(
            f"per CEL evaluation, cel-python:                {slow_eval * 1e6:9.1f} µs  = "
            f"{slow_eval / fast_eval:5.1f}x slower"
        )


if __name__ == "__main__":
    main()

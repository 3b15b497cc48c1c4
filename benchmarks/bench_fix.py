"""Benchmark: `kubegap fix` on realistic training manifests, and what `kubegap lint` pays for the fix
reports: the text format says how many findings `kubegap fix` can fix, SARIF carries each finding's
suggested fix (json, which does neither, is the baseline).

    python benchmarks/bench_fix.py [--count 300] [--repeat 3] [--jobs 1]

Prints figures and ratios; asserts nothing (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus


def best(repeat: int, argv: list[str]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}")
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus.write(Path(tmp), args.count)
        kubegap = [sys.executable, "-m", "kubegap"]
        lint = [*kubegap, "lint", "--jobs", str(args.jobs), tmp]
        json_time = best(args.repeat, [*lint, "--format", "json"])
        text_time = best(args.repeat, [*lint, "--format", "text"])
        sarif_time = best(args.repeat, [*lint, "--format", "sarif"])
        fix_time = best(args.repeat, [*kubegap, "fix", "--jobs", str(args.jobs), tmp])
    print(f"{args.count} manifests, lint and fix --jobs {args.jobs}")
    print(f"lint --format json        {json_time:7.2f} s")
    print(f"lint --format text        {text_time:7.2f} s  ({text_time / json_time:.2f}x json: the fix count)")
    print(f"lint --format sarif       {sarif_time:7.2f} s  ({sarif_time / json_time:.2f}x json: the fixes)")
    print(f"fix (diff)                {fix_time:7.2f} s  ({1000 * fix_time / args.count:.1f} ms per file)")


if __name__ == "__main__":
    main()

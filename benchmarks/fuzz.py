"""The property-based tests with many more examples: run on demand, prints inputs tried and crashes found.

Usage: `python benchmarks/fuzz.py [--examples N] [--only NAME]`. Each property of tests/support/fuzzing.py
runs up to N generated inputs (hypothesis; a failure is shrunk to a minimal input and printed). Exit 1 when
any property failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubegap.config import Settings
from kubegap.webhook import create_app
from tests.support import fuzzing
from tests.webhook.asgi import call


def _review_check() -> Callable[[bytes], None]:
    app = create_app(Settings())

    def check(body: bytes) -> None:
        reply = call(app, "POST", "/validate", body, {"Content-Type": "application/json"})
        fuzzing.check_review(reply.status, reply.body, body)

    return check


PROPERTIES: dict[str, tuple[Any, Callable[[], Callable[[Any], None]]]] = {
    "manifest-reader": (
        fuzzing.manifest_inputs(),
        lambda: lambda d: fuzzing.check_manifest(d, fuzzing.engine()),
    ),
    "confused-side-fields": (
        fuzzing.confused_jobs(fuzzing.SIDE_FIELDS),
        lambda: lambda j: fuzzing.check_confused(j, fuzzing.engine(), must_fail=True),
    ),
    "confused-side-fields-cel-python": (
        fuzzing.confused_jobs(fuzzing.SIDE_FIELDS),
        lambda: lambda j: fuzzing.check_confused(j, fuzzing.engine("cel-python"), must_fail=True),
    ),
    "confused-examples": (
        fuzzing.confused_examples(),
        lambda: lambda j: fuzzing.check_retyped(j, fuzzing.engine()),
    ),
    "confused-core-fields": (
        fuzzing.confused_jobs(fuzzing.SIDE_FIELDS + fuzzing.CORE_FIELDS),
        lambda: lambda j: fuzzing.check_confused(j, fuzzing.engine(), must_fail=False),
    ),
    "shell-vs-shlex": (fuzzing.shell_lines(), lambda: fuzzing.check_shell_line),
    "tokenize": (fuzzing.CONTAINERS, lambda: fuzzing.check_tokenize),
    "durations-vs-go": (fuzzing.DURATION_TEXT, lambda: fuzzing.check_duration),
    "admission-reviews": (fuzzing.review_bodies(), _review_check),
}


def run(name: str, strategy: st.SearchStrategy[Any], check: Callable[[Any], None], examples: int) -> bool:
    tried = 0

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def prop(value: Any) -> None:
        nonlocal tried
        tried += 1
        check(value)

    started = time.perf_counter()
    try:
        prop()
        failure = ""
    except Exception as err:  # the shrunk, minimal failing input is in the message hypothesis prints
        failure = f"{type(err).__name__}: {str(err)[:300]}"
    seconds = time.perf_counter() - started
    print(f"{name:<32} {tried:>8,} inputs  {seconds:7.1f} s  crashes found: {1 if failure else 0}")
    if failure:
        print(f"    {failure}")
    return not failure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=2_000)
    parser.add_argument("--only", choices=sorted(PROPERTIES))
    args = parser.parse_args()
    ok = True
    for name, (strategy, make) in PROPERTIES.items():
        if args.only in (None, name):
            ok &= run(name, strategy, make(), args.examples)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""kubegap's per-object path, compiled to C with mypyc where the machine can build it.

Every object a lint, an audit or the webhook reads runs the same few thousand lines: facts, judging,
pricing. In CPython they cost about 0.5 ms per typical training object; compiled with mypyc (the
compiler that ships with mypy, for code that type-checks under `mypy --strict`, as kubegap's does) they
cost about a third less (docs/speed.md). The compiled modules behave as the Python ones do, and the test
suite runs against whichever is installed.

A machine without a C compiler, or `KUBEGAP_PURE_PYTHON=1` at install time, installs the same package as
plain Python: slower, never different. An editable install that is compiled must be installed again after
editing a compiled module, since Python prefers the compiled file to the source beside it;
`kubegap version` says which is running, and a test fails while a compiled module is older than its
source (kubegap/native.py, tests/test_native.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# What every object runs through (kubegap.evaluate and what it calls), and nothing that runs once per
# command.
COMPILED = [
    "kubegap/facts/",
    "kubegap/activation.py",
    "kubegap/annotationkeys.py",
    "kubegap/audit/spool.py",  # an object's findings made into rows, in the audit's workers
    "kubegap/audit/verdict.py",  # a verdict per object, made in the audit's workers
    "kubegap/batch.py",
    "kubegap/celcost.py",
    "kubegap/celops.py",
    "kubegap/collapse.py",
    "kubegap/compiled.py",
    "kubegap/durations.py",
    "kubegap/evaluate.py",
    "kubegap/exemptions.py",
    "kubegap/fastahead.py",  # the bundled policies' CEL programs as Python (kubegap.fastcel)
    "kubegap/fieldpath.py",
    "kubegap/findings.py",
    "kubegap/globbed.py",
    "kubegap/globs.py",
    "kubegap/impact.py",
    "kubegap/integers.py",
    "kubegap/jsontext.py",
    "kubegap/judge.py",
    "kubegap/kinds.py",
    "kubegap/memo.py",
    "kubegap/pricing.py",
    "kubegap/quantities.py",
    "kubegap/raw.py",
    "kubegap/records.py",
    "kubegap/reports/json.py",  # a finding's JSON text, in lint's and the audit's workers
    "kubegap/workloads.py",
    "kubegap/yamltags.py",  # the tag of each node lint's parser composes
]
# Written beside the compiled modules: the digest of each one's source, so that a compiled module left
# older than its source can be told (kubegap.native).
BUILT = "_built.json"


def _sources() -> list[Path]:
    found: list[Path] = []
    for entry in COMPILED:
        path = ROOT / entry
        found.extend(sorted(path.glob("*.py")) if path.is_dir() else [path])
    return found


def _digests() -> dict[str, str]:
    return {str(path.relative_to(ROOT)): hashlib.sha256(path.read_bytes()).hexdigest() for path in _sources()}


class OptionalBuild(build_ext):
    """Builds the compiled modules, or leaves the package pure Python where they cannot be built."""

    def run(self) -> None:
        # what an earlier build compiled, which a module since left out of COMPILED would still import
        self._clear()
        if not self.extensions:
            return
        try:
            super().run()
        except Exception as err:  # no compiler, no headers: the Python modules stand
            print(f"kubegap: not compiled ({err}); installing pure Python", file=sys.stderr)
            self._clear()
            return
        package = ROOT / "kubegap" if self.inplace else Path(self.build_lib) / "kubegap"
        package.mkdir(parents=True, exist_ok=True)
        (package / BUILT).write_text(json.dumps(DIGESTS, indent=1, sort_keys=True) + "\n")

    def _clear(self) -> None:
        if self.inplace:
            _remove_compiled()
        else:
            for path in [*Path(self.build_lib).rglob("*.so"), Path(self.build_lib) / "kubegap" / BUILT]:
                path.unlink(missing_ok=True)


def _remove_compiled() -> None:
    """What an earlier editable install compiled in place: Python would go on importing it."""
    for path in [*ROOT.glob("*__mypyc*.so"), *(ROOT / "kubegap").rglob("*.so"), ROOT / "kubegap" / BUILT]:
        path.unlink(missing_ok=True)


def _extensions() -> list[object]:
    if os.environ.get("KUBEGAP_PURE_PYTHON") == "1":
        _remove_compiled()
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    # The build environment holds mypy, not kubegap's dependencies: their types are unknown there, and
    # the code is type-checked in full by `mypy` in CI.
    flags = ["--ignore-missing-imports", "--no-warn-unused-ignores"]
    try:
        return list(mypycify([*flags, *COMPILED], opt_level="3", debug_level="0", group_name="kubegap"))
    except (Exception, SystemExit) as err:  # mypyc stops with SystemExit on what it cannot compile
        print(f"kubegap: not compiled (mypyc: {err}); installing pure Python", file=sys.stderr)
        _remove_compiled()
        return []


# Taken before mypyc reads the sources: a source edited while the build runs is not recorded as compiled.
DIGESTS = _digests()
setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuild})

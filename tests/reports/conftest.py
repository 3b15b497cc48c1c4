"""Fixtures for the CI-format tests: the real engine, and the sample repository linted by it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The test modules import their sample by its full name, also when pytest is run without `python -m`.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from kubegap.config import Settings  # noqa: E402
from kubegap.evaluate import Engine, build_engine  # noqa: E402
from kubegap.lint import Output, lint  # noqa: E402
from tests.reports.sample import Sample, write_repo  # noqa: E402


@pytest.fixture(scope="session")
def engine() -> Engine:
    return build_engine(Settings())


@pytest.fixture(scope="session")
def sample(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sample]:
    root = tmp_path_factory.mktemp("repo")
    names = write_repo(root)
    cwd = Path.cwd()
    os.chdir(root)  # lint reports paths as given: relative, as in a CI checkout
    try:
        report = lint(names, engine, output=Output(keep_passes=True))
    finally:
        os.chdir(cwd)
    yield Sample(root, report, engine)

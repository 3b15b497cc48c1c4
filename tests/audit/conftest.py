"""Fixtures for the audit tests: a running test API server and a kubeconfig that points at it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The test API server lives in tests/support and is also run by the benchmark: import it by its full name.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.support.apiserver import ApiServer  # noqa: E402


@pytest.fixture
def apiserver() -> Iterator[ApiServer]:
    with ApiServer() as server:
        yield server


@pytest.fixture
def kubeconfig(apiserver: ApiServer, tmp_path: Path) -> Path:
    return apiserver.kubeconfig(tmp_path / "kubeconfig")

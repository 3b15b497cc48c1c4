"""Fixtures for the audit tests: a running test API server and a kubeconfig that points at it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The test API server lives in tests/support and is also run by the benchmark: import it by its full name.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from kubegap.audit.reader import connect  # noqa: E402
from kubegap.audit.retry import Api, RetryPolicy  # noqa: E402
from kubegap.audit.runner import Auditor, AuditResult, Progress  # noqa: E402
from kubegap.audit.scope import AuditScope  # noqa: E402
from kubegap.config import Settings  # noqa: E402
from kubegap.evaluate import Engine, build_engine  # noqa: E402
from tests.support.apiserver import ApiServer  # noqa: E402


@pytest.fixture
def apiserver() -> Iterator[ApiServer]:
    with ApiServer() as server:
        yield server


@pytest.fixture
def kubeconfig(apiserver: ApiServer, tmp_path: Path) -> Path:
    return apiserver.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture(scope="session")
def engine() -> Engine:
    return build_engine(Settings())


class Sleeps(list[float]):
    """Records backoff waits instead of sleeping, so fault tests take no wall time."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def audit(kubeconfig: Path, engine: Engine, sleeps: Sleeps) -> Iterator[Callable[..., AuditResult]]:
    """Run an audit in-process against the test server: audit(page_size=2, namespaces=("a",), ...)."""
    results: list[AuditResult] = []

    def run(timeout: float = 10.0, progress: Progress | None = None, **scope: Any) -> AuditResult:
        api = Api(
            connect(str(kubeconfig), None, (5.0, timeout)), RetryPolicy(), sleep=sleeps, jitter=lambda: 0.0
        )
        result = Auditor(api, engine, AuditScope(**scope), progress).run()
        results.append(result)
        return result

    yield run
    for result in results:
        result.spool.close()

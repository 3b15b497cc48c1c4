"""Shared by the `kubegap fix` tests: engines per policy selection, and fixing text in memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubegap import lint, manifests
from kubegap.config import Settings
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Finding, Result
from kubegap.fix.checked import Scope
from kubegap.fix.files import Fixed, fix_bytes

_ENGINES: dict[tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]], Engine] = {}


def engine(*policies: str, params: Mapping[str, Mapping[str, Any]] | None = None) -> Engine:
    flat = tuple((p, k, str(v)) for p, values in (params or {}).items() for k, v in values.items())
    key = (policies, flat)
    if key not in _ENGINES:
        settings = Settings(select=policies).with_params(params or {})
        _ENGINES[key] = build_engine(settings)
    return _ENGINES[key]


def fix(data: bytes | str, the_engine: Engine, name: str = "manifest.yaml") -> Fixed:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    known = manifests.configmaps_of(manifests.Reader().read_bytes(raw, name))
    return fix_bytes(raw, name, Scope(the_engine, known, lambda finding: True))


def failing(text: str, the_engine: Engine) -> list[Finding]:
    """The failing findings lint reports for the text (in the order lint gives them)."""
    documents = list(manifests.Reader().read_bytes(text.encode("utf-8"), "manifest.yaml"))
    report = lint.lint_documents(documents, the_engine)
    assert report.unreadable == 0, [f.message for f in report.findings]
    return [f for f in report.findings if f.result is Result.FAIL]


def identity(finding: Finding) -> tuple[Any, ...]:
    return (*finding.key(), finding.message)

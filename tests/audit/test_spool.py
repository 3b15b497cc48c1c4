"""The audit's finding spool gives back exactly what it was given, cost-model inputs included."""

from __future__ import annotations

from kubegap.audit.spool import Spool
from kubegap.config import Settings
from kubegap.evaluate import build_engine
from tests.test_evaluate import pytorchjob


def test_findings_come_back_equal_with_their_impact() -> None:
    engine = build_engine(Settings(cel_backend="cel-expr"))
    findings = engine.evaluate(pytorchjob()).findings
    assert any(f.impact is not None for f in findings)  # priced findings hold nested dataclasses
    spool = Spool()
    spool.add(findings, "uid-1")
    spool.add(findings[:1], None)
    back = list(spool.rows())
    spool.close()
    assert [f for _, f in back] == [*findings, findings[0]]
    assert [uid for uid, _ in back] == ["uid-1"] * len(findings) + [None]

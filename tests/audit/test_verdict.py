"""An audit worker judges a chunk a step at a time (every evaluation, then every verdict): the verdicts are
those of judging each object in turn, an object past its deadline or one that breaks the engine included."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubegap.audit.spool import Keep, Rows
from kubegap.audit.verdict import Unevaluated, judge_all
from kubegap.config import Settings
from kubegap.evaluate import Context, DeadlineExceeded, Engine, Evaluation, build_engine
from tests.test_evaluate import pytorchjob


class _Breaking:
    """The engine, except that it runs past its deadline on one object and breaks on another."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def evaluate(
        self, obj: Mapping[str, Any], context: Context | None = None, deadline: float | None = None
    ) -> Evaluation:
        name = obj["metadata"]["name"]
        if name == "late":
            raise DeadlineExceeded("ran past its deadline")
        if name == "broken":
            raise KeyError("a bug")
        return self.engine.evaluate(obj, context, deadline)


def test_a_chunk_judged_step_by_step_gives_each_objects_verdict() -> None:
    engine = _Breaking(build_engine(Settings(cel_backend="cel-expr")))
    chunk = []
    for name in ("a", "late", "b", "broken", "c"):
        obj = copy.deepcopy(pytorchjob())
        obj["metadata"]["name"] = name
        chunk.append((obj, None))
    keep = Keep(findings=True, json=True)
    together = judge_all(engine, chunk, 10.0, Rows(keep))
    alone = [judge_all(engine, [each], 10.0, Rows(keep))[0] for each in chunk]
    assert together == alone
    assert [type(v).__name__ for v in together] == [
        "Verdict",
        "Unevaluated",
        "Verdict",
        "Unevaluated",
        "Verdict",
    ]
    late, broken = together[1], together[3]
    assert isinstance(late, Unevaluated) and not late.internal and "deadline" in late.reason
    assert isinstance(broken, Unevaluated) and broken.internal and "KeyError" in broken.trace
    assert all(v.rows for v in together if not isinstance(v, Unevaluated))  # the job fails some rules

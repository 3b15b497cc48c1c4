"""One object's evaluation reduced to what the audit records of it, wherever it was evaluated.

An audit worker process sends verdicts back to the audit, so a verdict carries no passes (34 findings for a
typical object): their counts travel in a per-object `Counts`, and the non-pass findings travel already
made into spool rows (pickled, JSON text, or both: kubegap.audit.spool; a worker writes the texts to a
file of its own, and the verdict says where). The audit process then only adds them up, and every report
stays the same as when the whole `Evaluation` was recorded.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubegap.audit.spool import Row, Rows, Span
from kubegap.evaluate import Context, DeadlineExceeded, Evaluation, Evaluator
from kubegap.findings import Counts, ObjectRef, Result, Severity, WorkloadCost
from kubegap.records import reduced


# Records in the form kubegap.records gives: this module runs compiled in the audit's workers, and a
# verdict is made for every object there and rebuilt in the audit process from its pickle.
@dataclass(slots=True, unsafe_hash=True, order=True, init=False)
class Offender:
    lost: float  # expected GPU-hours lost a month (docs/cost-model.md); 0 where the model prices nothing
    rank: int  # worst severity's rank
    failures: int
    gpus: int
    ref: ObjectRef = field(compare=False)
    roles: tuple[str, ...] = field(compare=False)
    cost: WorkloadCost | None = field(default=None, compare=False)

    def __init__(
        self,
        lost: float,
        rank: int,
        failures: int,
        gpus: int,
        ref: ObjectRef,
        roles: tuple[str, ...],
        cost: WorkloadCost | None = None,
    ) -> None:
        self.lost, self.rank, self.failures, self.gpus = lost, rank, failures, gpus
        self.ref, self.roles, self.cost = ref, roles, cost

    def __reduce__(self) -> tuple[type[Offender], tuple[Any, ...]]:
        return reduced(self)

    @property
    def severity(self) -> Severity:
        return next(s for s in Severity if s.rank == self.rank)


@dataclass(slots=True, unsafe_hash=True, init=False)
class Verdict:
    ref: ObjectRef
    tally: Counts  # this object's results counted, passes included
    rows: tuple[Row, ...]  # the non-pass findings, made into spool rows
    span: Span | None  # where a worker wrote their JSON texts, which the rows then leave out
    exempted: bool  # at least one result is a skip (an exemption)
    failing: tuple[tuple[str, str, str, str], ...]  # (namespace, policy, rule, severity) per fail or error
    offender: Offender | None  # where something fails

    def __init__(
        self,
        ref: ObjectRef,
        tally: Counts,
        rows: tuple[Row, ...],
        span: Span | None,
        exempted: bool,
        failing: tuple[tuple[str, str, str, str], ...],
        offender: Offender | None,
    ) -> None:
        self.ref, self.tally, self.rows, self.span = ref, tally, rows, span
        self.exempted, self.failing, self.offender = exempted, failing, offender

    def __reduce__(self) -> tuple[type[Verdict], tuple[Any, ...]]:
        return reduced(self)


@dataclass(slots=True, unsafe_hash=True, init=False)
class Unevaluated:
    """An object the engine gave no result for: past its deadline, or an internal error (a bug)."""

    reason: str  # the coverage gap's text
    internal: bool = False
    trace: str = ""  # the internal error's traceback, logged by the audit process

    def __init__(self, reason: str, internal: bool = False, trace: str = "") -> None:
        self.reason, self.internal, self.trace = reason, internal, trace

    def __reduce__(self) -> tuple[type[Unevaluated], tuple[Any, ...]]:
        return reduced(self)


def judge_all(
    engine: Evaluator, chunk: Sequence[tuple[Mapping[str, Any], Context | None]], timeout: float, rows: Rows
) -> list[Verdict | Unevaluated]:
    """Evaluate the objects and make their verdicts, a step at a time: every evaluation, then every
    verdict. One object taken through both steps in turn ran each step's code and data out of the core's
    caches (kubegap.lint's batches)."""
    return [
        told(outcome, rows)
        for outcome in [evaluated(engine, obj, context, timeout) for obj, context in chunk]
    ]


def evaluated(
    engine: Evaluator, obj: Mapping[str, Any], context: Context | None, timeout: float
) -> Evaluation | Unevaluated:
    """The object's evaluation, or why there is none: a bug must not hide the rest of the cluster, so it is
    an outcome, not a raise."""
    try:
        return engine.evaluate(obj, context, time.monotonic() + timeout)
    except DeadlineExceeded as late:  # a name of its own: compiled, one name holds one type
        return Unevaluated(f"not evaluated: {late}")
    except Exception as exc:
        return Unevaluated(
            f"internal error evaluating {ObjectRef.of(obj).display()}: {exc}", True, traceback.format_exc()
        )


def told(outcome: Evaluation | Unevaluated, rows: Rows) -> Verdict | Unevaluated:
    """The verdict of an evaluation; an object without one stays unevaluated."""
    return outcome if isinstance(outcome, Unevaluated) else verdict_of(outcome, rows)


def verdict_of(evaluation: Evaluation, rows: Rows) -> Verdict:
    tally = Counts.of(evaluation.results)
    findings = evaluation.findings
    failing = [f for f in findings if f.result in (Result.FAIL, Result.ERROR)]
    offender = None
    if failing:
        roles = tuple(sorted({f.role for f in failing if f.role}))
        worst = max(f.severity.rank for f in failing)
        cost = evaluation.cost
        lost, gpus = (cost.lost, cost.gpus) if cost else (0.0, evaluation.gpus)
        offender = Offender(lost, worst, len(failing), gpus, evaluation.ref, roles, cost)
    made, span = rows.made(findings)
    return Verdict(
        evaluation.ref,
        tally,
        made,
        span,
        len(failing) < len(findings),
        tuple((f.object.namespace or "", f.policy, f.rule, f.severity._value_) for f in failing),
        offender,
    )

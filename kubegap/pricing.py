"""Facts and findings priced by the cost model: what a workload is expected to lose a month, and what fixing
each failing rule would save (docs/cost-model.md). Pure: no I/O.

A policy names, per validation, the model term its fix changes (`impact: {term, param}`): the fix sets that
term to the compliant value the policy asks for, and the saving is G now minus G with that term fixed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubegap import durations
from kubegap.facts import ObjectFacts
from kubegap.findings import Finding, Impact, ObjectRef, Result, Severity, WorkloadCost
from kubegap.impact import ImpactSettings, Inputs, Term, lost_gpu_hours, severity_for, young_interval
from kubegap.records import changed

_UNKNOWN: Final = "the cost model cannot price it: what the fix would change is not known (unresolved)"
# IL-0421: a collective with nothing to end it hung 30 minutes until the agent killed it
HANG_HOURS: Final = 0.5
ASYNC_VARIABLES: Final = ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING")
# Severity by value, looked up: calling an Enum class runs its metaclass in Python, for every priced failure
_SEVERITY: Final = {severity.value: severity for severity in Severity}


@dataclass(slots=True, unsafe_hash=True, init=False)
class Situation:
    """What the manifest says about each model term, before the terms are combined into Inputs."""

    gpus: int
    timeout: Term | None  # the effective collective timeout: explicit, else the framework's default
    hang: bool  # asynchronous error handling is off: a timed-out collective does not end the rank
    liveness: Term | None  # the liveness window, when every training container has a probe
    auto_restart: bool
    restart_detail: str
    interval: Term | None
    interval_note: str | None  # why no interval counts (switched off, steps without step time, unseen)
    runtime: Term
    save: Term
    slow: bool  # a rule that taxes every step (a slow network path) fails
    from_scratch: bool  # a restart finds no checkpoint: lost with the pod, or never loaded
    # torchrun restarts in place first: after losing a node the others wait this long in rendezvous
    rendezvous: Term | None

    # written out (kubegap.records): each priced rule's fix rebuilds the situation
    def __init__(
        self,
        gpus: int,
        timeout: Term | None,
        hang: bool,
        liveness: Term | None,
        auto_restart: bool,
        restart_detail: str,
        interval: Term | None,
        interval_note: str | None,
        runtime: Term,
        save: Term,
        slow: bool = False,
        from_scratch: bool = False,
        rendezvous: Term | None = None,
    ) -> None:
        self.gpus, self.timeout, self.hang, self.liveness = gpus, timeout, hang, liveness
        self.auto_restart, self.restart_detail, self.interval = auto_restart, restart_detail, interval
        self.interval_note, self.runtime, self.save, self.slow = interval_note, runtime, save, slow
        self.from_scratch, self.rendezvous = from_scratch, rendezvous


def _hours(seconds: float, source: str) -> Term:
    return Term(seconds / 3600.0, source)


def _trainers(facts: ObjectFacts) -> list[Mapping[str, Any]]:
    """The training containers' facts; a twin template's are left out (kubegap.facts.twins): they equal
    its original's, and every term below is the same over duplicates or keeps the first of equals."""
    units = facts.units.get("container", ())
    return [
        u.bindings["container"]
        for u in units
        if u.original is None and u.bindings["container"]["accelerators"] > 0
    ]


def _timeout(trainers: Sequence[Mapping[str, Any]]) -> Term | None:
    """The longest effective timeout; None when some training container has none (nothing ends a hang)."""
    found: list[Term] = []
    for container in trainers:
        timeout = container.get("collectiveTimeout")
        if timeout is None:
            return None
        found.append(_hours(timeout["seconds"], timeout["source"]))
    return max(found, key=lambda t: t.hours) if found else None


def _liveness(trainers: Sequence[Mapping[str, Any]]) -> Term | None:
    windows = [c.get("liveness") for c in trainers]
    if not windows or any(w is None for w in windows):
        return None
    longest = max(w["windowSeconds"] for w in windows if w is not None)
    return _hours(longest, "liveness probe window")


def _declared(value: Mapping[str, Any] | None, fallback: float, what: str) -> Term:
    if value is not None:
        return _hours(value["seconds"], value["source"])
    return _hours(fallback, f"impact.{what} (default)")


def _rendezvous(torchrun: Mapping[str, Any] | None) -> Term | None:
    """The join timeout the surviving torchrun agents wait out for a lost node (RULES.md v3)."""
    if not torchrun or not torchrun.get("waitsForLostNode") or not torchrun.get("joinTimeoutReadable"):
        return None
    return _hours(
        torchrun["joinTimeoutSeconds"], f"rendezvous join timeout ({torchrun['joinTimeoutSource']})"
    )


def situation(facts: ObjectFacts, settings: ImpactSettings) -> Situation | None:
    """None for what the model does not price: nodes and workloads that do not train on accelerators."""
    own = facts.facts
    gpus = int(own.get("totalAccelerators", 0))
    if not own.get("training") or gpus < 1:
        return None
    trainers = _trainers(facts)
    checkpoint = own.get("checkpoint", {})
    restart = own.get("restart")
    deadline = own.get("deadlineSeconds")
    declared_runtime = own.get("expectedRuntime")
    if declared_runtime is not None:
        runtime = _hours(declared_runtime["seconds"], declared_runtime["source"])
    elif deadline is not None:
        runtime = _hours(deadline, "activeDeadlineSeconds")
    else:
        runtime = _hours(settings.default_runtime_seconds, "impact.defaultRuntime (default)")
    if runtime.hours > 720.0:
        runtime = Term(720.0, f"{runtime.source}, capped at a month")
    interval = checkpoint.get("interval")
    note = None
    if "disabled" in checkpoint:
        interval, note = None, f"checkpointing is switched off by {checkpoint['disabled']['source']}"
    elif interval is None and "steps" in checkpoint:
        note = f"{checkpoint['steps']['source']} with no declared step time"
    elif interval is None:
        note = "no checkpoint interval is set"
    return Situation(
        rendezvous=_rendezvous(own.get("torchrun")),
        gpus=gpus,
        timeout=_timeout(trainers),
        hang=any(c.get("env", {}).get(v) == "0" for c in trainers for v in ASYNC_VARIABLES),
        liveness=_liveness(trainers),
        auto_restart=bool(restart and restart["enabled"]),
        restart_detail=restart["detail"] if restart else f"{own.get('kind')} restarts nothing by itself",
        interval=_hours(interval["seconds"], interval["source"]) if interval else None,
        interval_note=note,
        runtime=runtime,
        save=_declared(checkpoint.get("saveTime"), settings.checkpoint_save_seconds, "checkpointSaveSeconds"),
        from_scratch=_from_scratch(own.get("recovery", {})),
    )


def _from_scratch(recovery: Mapping[str, Any]) -> bool:
    """Checkpoints a restart cannot use: on storage lost with the pod, or never loaded (RULES.md v3). A
    directory kubegap cannot place is not counted: the model prices what it knows."""
    lost = recovery.get("storage", {}).get("kind") == "lost"
    return bool(lost or recovery.get("resume", {}).get("state", "latest") != "latest")


def inputs(s: Situation, settings: ImpactSettings) -> Inputs:
    if s.hang:
        detection = Term(HANG_HOURS, "asynchronous error handling is off: a stuck collective hangs")
    elif s.timeout is None:
        detection = Term(HANG_HOURS, "no collective timeout is known: assumed the 30-minute hang of IL-0421")
    else:
        detection = s.timeout
    if s.liveness is not None and s.liveness.hours < detection.hours:
        detection = s.liveness
    minutes = settings.restart_minutes if s.auto_restart else settings.manual_recovery_minutes
    setting = "impact.restartMinutes" if s.auto_restart else "impact.manualRecoveryMinutes"
    restart = Term(minutes / 60.0, f"{setting}: {s.restart_detail}")
    if s.rendezvous is not None:
        restart = Term(
            restart.hours + s.rendezvous.hours, f"{restart.source}, plus the {s.rendezvous.source}"
        )
    interval = s.interval
    runtime = s.runtime
    if interval is None:  # all work since the start is lost: say why the run length stands in
        runtime = Term(s.runtime.hours, f"{s.interval_note}: the run length, {s.runtime.source}")
    elif s.from_scratch:  # each failure loses the run so far: T/2 on average, where T stood in for τ
        runtime = Term(s.runtime.hours, f"a restart finds no checkpoint: the run length, {s.runtime.source}")
    return Inputs(
        gpus=s.gpus,
        failures_per_gpu_hour=settings.failures_per_gpu_hour,
        detection=detection,
        restart=restart,
        interval=interval,
        runtime=runtime,
        save=s.save,
        tax=settings.throughput_tax if s.slow else 0.0,
        from_scratch=s.from_scratch and interval is not None,
    )


# term -> how its fix changes the situation, given the policy parameter (seconds) it names, if any
Fix = Callable[[Situation, float | None], Situation]


def _fix_interval(s: Situation, limit: float | None) -> Situation:
    assert limit is not None
    if s.interval is not None and s.interval.hours * 3600 <= limit:
        return s
    return changed(s, interval=_hours(limit, f"the policy maximum, {durations.format_seconds(limit)}"))


def _fix_timeout(s: Situation, limit: float | None) -> Situation:
    assert limit is not None
    if s.timeout is not None and s.timeout.hours * 3600 <= limit:
        return s
    return changed(s, timeout=_hours(limit, f"the policy maximum, {durations.format_seconds(limit)}"))


def _fix_liveness(s: Situation, window: float | None) -> Situation:
    assert window is not None
    return s if s.liveness is not None else changed(s, liveness=_hours(window, "the policy's minimum window"))


def _fix_rendezvous(s: Situation, limit: float | None) -> Situation:
    assert limit is not None
    if s.rendezvous is None or s.rendezvous.hours * 3600 <= limit:
        return s
    return changed(
        s,
        rendezvous=_hours(
            limit, f"rendezvous join timeout, the policy maximum {durations.format_seconds(limit)}"
        ),
    )


FIXES: Final[Mapping[str, Fix]] = {
    "checkpointInterval": _fix_interval,
    "collectiveTimeout": _fix_timeout,
    "asyncErrorHandling": lambda s, _: changed(s, hang=False),
    "livenessProbe": _fix_liveness,
    "autoRestart": lambda s, _: changed(s, auto_restart=True, restart_detail="restarts by itself"),
    "throughputTax": lambda s, _: changed(s, slow=False),
    "restartFromScratch": lambda s, _: changed(s, from_scratch=False),
    # An asynchronous save blocks only while the state is copied to host memory; taken as no block at all,
    # so the saving is an upper bound.
    "asyncSave": lambda s, _: changed(
        s, save=Term(0.0, "asynchronous saves (the copy to host memory left out)")
    ),
    "rendezvousTimeout": _fix_rendezvous,
}
TERMS_WITH_PARAM: Final = frozenset(
    {"checkpointInterval", "collectiveTimeout", "livenessProbe", "rendezvousTimeout"}
)


@dataclass(slots=True, unsafe_hash=True)
class Pricing:
    """How one validation's fix is priced: the model term and the parameter value (seconds) it sets; or,
    with no term, why the model cannot price it."""

    term: str | None
    limit: float | None
    severity_from_impact: bool
    unpriced: str | None = None


def price(
    ref: ObjectRef,
    results: Sequence[Finding],
    base: Situation,
    pricing: Mapping[tuple[str, str], Pricing],
    settings: ImpactSettings,
) -> tuple[tuple[Finding, ...], WorkloadCost]:
    """Each failing finding with what its fix saves (and, where the policy says so, a severity to match),
    and the workload's expected loss."""
    failing = [f for f in results if f.result is Result.FAIL]
    slow = _taxed(failing, pricing)
    model = _Model(base if base.slow == slow else changed(base, slow=slow), pricing, settings)
    priced = [model.priced(f) if f.result is Result.FAIL else f for f in results]
    savings = {(f.policy, f.rule): f.impact.saved for f in priced if f.impact and f.impact.saved is not None}
    cost = WorkloadCost(
        ref=ref,
        gpus=base.gpus,
        lost=model.now,
        inputs=model.now_inputs,
        young_hours=young_interval(model.now_inputs),
        savings=tuple(sorted(savings.items(), key=lambda item: -item[1])),
    )
    return tuple(priced), cost


def _taxed(failing: Iterable[Finding], pricing: Mapping[tuple[str, str], Pricing]) -> bool:
    return any(
        (p := pricing.get((f.policy, f.rule))) is not None and p.term == "throughputTax" for f in failing
    )


class _Model:
    """One workload's situation priced once, and each fix priced once however many findings share it."""

    def __init__(self, now: Situation, pricing: Mapping[tuple[str, str], Pricing], settings: ImpactSettings):
        self.situation, self.pricing, self.settings = now, pricing, settings
        self.now_inputs = inputs(now, settings)
        self.now = lost_gpu_hours(self.now_inputs)
        self._fixed: dict[tuple[str, float | None], tuple[Inputs, float | None]] = {}
        self._unpriced = Impact(None, "the cost model does not price this rule", self.now_inputs, None)

    def priced(self, finding: Finding) -> Finding:
        how = self.pricing.get((finding.policy, finding.rule))
        if how is None or how.term is None:
            why = how.unpriced if how and how.unpriced else None
            unpriced = (  # positional: `changed` looks its keyword up among the fields
                Impact(None, f"the cost model does not price this rule: {why}", self.now_inputs, None)
                if why
                else self._unpriced
            )
            return finding.priced(unpriced, finding.severity)
        key = (how.term, how.limit)
        if key not in self._fixed:
            after = FIXES[how.term](self.situation, how.limit)
            # the model does not know what the finding costs (unresolved); `is` first: a fix that changes
            # nothing mostly returns the situation itself, and `==` is the interpreted one dataclass writes
            if after is self.situation or after == self.situation:
                self._fixed[key] = (self.now_inputs, None)
            else:
                fixed = inputs(after, self.settings)
                self._fixed[key] = (fixed, self.now - lost_gpu_hours(fixed))
        fixed, saved = self._fixed[key]
        if saved is None:
            return finding.priced(Impact(None, _UNKNOWN, self.now_inputs, None), finding.severity)
        impact = Impact(saved, None, self.now_inputs, fixed)
        if not how.severity_from_impact:
            return finding.priced(impact, finding.severity)
        return finding.priced(impact, _SEVERITY[severity_for(saved, self.settings)])

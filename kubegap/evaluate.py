"""Policies times objects → results. Pure: no I/O, so lint, audit and the webhook cannot disagree.

Per policy, each validation runs once per unit of its scope (the workload, each pod template, each
container, the node). A CEL error, a non-boolean result or a malformed object is an `error` result,
never a pass; an exempted evaluation is a `skip` with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn, Protocol

from kubegap import annotationkeys, batch, judge, kinds, pricing
from kubegap import facts as facts_module
from kubegap.activation import Run, groups
from kubegap.cel import Backend
from kubegap.collapse import collapse
from kubegap.compiled import CompiledPolicy, compile_policies
from kubegap.config import Settings
from kubegap.enginerules import (
    INVALID_MANIFEST,
    RESOURCES,
    TOO_DEEP,
    UNRESOLVED_COUNT,
)
from kubegap.errors import KubegapError
from kubegap.facts import knobs, reads
from kubegap.fieldpath import render
from kubegap.findings import (
    Check,
    Finding,
    ObjectRef,
    Result,
    Severity,
    WorkloadCost,
    error,
    fail,
)
from kubegap.impact import ImpactSettings
from kubegap.memo import Memo

MAX_DEPTH: Final = 100  # cel-expr crashes on objects nested thousands deep; manifests never need a hundred


class DeadlineExceeded(KubegapError):
    """Evaluation ran past its deadline (the webhook's share of the API server's timeout)."""


@dataclass(slots=True, unsafe_hash=True)
class Context:
    configmaps: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)


@dataclass(slots=True, unsafe_hash=True, init=False)
class Evaluation:
    ref: ObjectRef
    supported: bool
    results: tuple[Finding, ...]
    cost: WorkloadCost | None = None  # training workloads: the expected loss a month
    gpus: int = 0  # GPUs the workload asks for, or the Node holds, as the facts count them

    def __init__(
        self,
        ref: ObjectRef,
        supported: bool,
        results: tuple[Finding, ...],
        cost: WorkloadCost | None = None,
        gpus: int = 0,
    ) -> None:  # written out (kubegap.records)
        self.ref, self.supported, self.results, self.cost, self.gpus = ref, supported, results, cost, gpus

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(r for r in self.results if r.result is not Result.PASS)


class Evaluator(Protocol):
    """What lint, the audit and the webhook need of an engine: an `Engine`, or a stand-in in tests."""

    def evaluate(
        self, obj: Mapping[str, Any], context: Context | None = None, deadline: float | None = None
    ) -> Evaluation: ...


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


class Engine:
    def __init__(
        self,
        policies: Sequence[CompiledPolicy],
        catalogue: knobs.Catalogue,
        backend: Backend,
        impact: ImpactSettings | None = None,
        policy_ids: Iterable[str] = (),  # every loaded policy, run or not: their exemptions are known keys
    ) -> None:
        self.compiled = tuple(policies)
        self.impact = impact or ImpactSettings()
        self.pricing = _pricing(policies)
        self.known_annotations = annotationkeys.known_keys(
            catalogue, {*policy_ids, *(c.policy.id for c in policies)}
        )
        self.policies = tuple(c.policy for c in policies)
        self.catalogue = catalogue
        self.backend = backend
        # Only the raw object reaches CEL unchecked (facts are built by kubegap), so its depth is bounded
        # only when some expression reads it: a cost that clean policy sets do not pay per object.
        readers = frozenset(c.policy.id for c in policies if reads.reads_object(c.policy))
        self.reads_object = bool(readers)
        placed = frozenset(c.policy.id for c in policies if reads.reads_place(c.policy))
        self.group_of = groups(self.compiled, readers, placed)
        self.scope_programs = batch.build(self.compiled, self.group_of, backend)
        # A policy that reads the raw object may read its name: such an engine evaluates every object.
        self.memo = None if self.reads_object else Memo()

    def evaluate(
        self, obj: Mapping[str, Any], context: Context | None = None, deadline: float | None = None
    ) -> Evaluation:
        ref = ObjectRef.of(obj)
        row = kinds.row_of(obj)
        if row is None:
            return Evaluation(ref, False, ())
        configmaps = context.configmaps if context else {}
        # Identical workloads (the pods of one Job) are evaluated once (kubegap.memo).
        memo = self.memo if row.templates is not None else None
        key = memo.key(obj, configmaps) if memo else None
        if memo is None or key is None:
            return self._evaluate(obj, ref, configmaps, deadline)
        found = memo.get(key, ref)
        if found is None:
            found = self._evaluate(obj, ref, configmaps, deadline)
            memo.put(key, found)
        elif deadline is not None and self.compiled and time.monotonic() > deadline:
            _past(ref)  # as an evaluation started past its deadline would, remembered or not
        return found

    def _evaluate(
        self,
        obj: Mapping[str, Any],
        ref: ObjectRef,
        configmaps: Mapping[tuple[str, str], Mapping[str, str]],
        deadline: float | None,
    ) -> Evaluation:
        if self.reads_object and _too_deep(obj):
            message = f"the object is nested deeper than {MAX_DEPTH} levels; no policy was evaluated"
            fix = "Check the object: Kubernetes objects are never this deep."
            finding = error(Check(INVALID_MANIFEST, TOO_DEEP, Severity.HIGH, fix), ref, message)
            return Evaluation(ref, True, (finding,))
        gathered = kinds.gather(obj, self.catalogue, configmaps)
        if gathered is None:
            return Evaluation(ref, False, ())
        return self.evaluate_facts(obj, gathered, deadline)

    def evaluate_facts(
        self, obj: Mapping[str, Any], gathered: facts_module.ObjectFacts, deadline: float | None = None
    ) -> Evaluation:
        """The policies over facts already gathered: an object's, or a cluster unit's (facts/cluster.py)."""
        ref = ObjectRef.of(obj)
        run = Run(self.backend, self.group_of, obj, ref, gathered, deadline, self.scope_programs)
        results: list[Finding] = [_unsized(ref, u) for u in gathered.unsized]
        for policy in self.compiled:
            if deadline is not None and time.monotonic() > deadline:
                _past(ref)
            judge.results(run, policy, results)
        results.extend(annotationkeys.unknown(gathered, ref, self.known_annotations))
        collapsed = collapse(results, gathered.units.get("template", ()))
        gpus = _gpus(gathered)
        situation = pricing.situation(gathered, self.impact)
        if situation is None:
            return Evaluation(ref, True, collapsed, gpus=gpus)
        priced, cost = pricing.price(ref, collapsed, situation, self.pricing, self.impact)
        return Evaluation(ref, True, priced, cost, gpus)


def _past(ref: ObjectRef) -> NoReturn:
    raise DeadlineExceeded(f"evaluation of {ref.display()} ran past its deadline")


def _gpus(gathered: facts_module.ObjectFacts) -> int:
    if "totalGpus" in gathered.facts:
        return int(gathered.facts["totalGpus"])
    return sum(int(u.bindings["node"]["gpuCapacity"]) for u in gathered.units.get("node", ()))


def _unsized(ref: ObjectRef, found: facts_module.UnreadableCount) -> Finding:
    message = (
        f"{found.resource}: {found.text!r} is not a whole number, so these accelerators count 0 and rules "
        "that depend on the job's size may not apply"
    )
    fix = "Write the count as a number (render templates first, e.g. helm template or kustomize build)."
    return fail(
        Check(UNRESOLVED_COUNT, RESOURCES, Severity.MEDIUM, fix), ref, message, path=render(found.path)
    )


def _pricing(policies: Sequence[CompiledPolicy]) -> dict[tuple[str, str], pricing.Pricing]:
    """(policy, rule) -> how its fix is priced, with the parameter's resolved value (`--set` included)."""
    out = {}
    for compiled in policies:
        policy = compiled.policy
        for v in policy.validations:
            if v.impact_unpriced is not None:
                out[(policy.id, v.name)] = pricing.Pricing(None, None, False, v.impact_unpriced)
            if v.impact_term is None:
                continue
            limit = float(compiled.params[v.impact_param]) if v.impact_param else None
            # an info validation is advice: priced, but its severity is not raised (RULES.md v3)
            escalate = policy.severity_from_impact and v.severity is not Severity.INFO
            out[(policy.id, v.name)] = pricing.Pricing(v.impact_term, limit, escalate)
    return out


def build_engine(settings: Settings) -> Engine:
    from kubegap import cel, policy

    catalogue = knobs.load(settings.knob_files)
    policies = policy.load(settings.policy_dirs)
    backend = cel.backend(settings.cel_backend)
    compiled = compile_policies(policies, settings, backend)
    return Engine(compiled, catalogue, backend, settings.impact, [p.id for p in policies])

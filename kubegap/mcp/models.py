"""The tools' output schemas: pydantic models over the finding record of RULES.md §4.

Field names are the JSON names the CLI prints, so an agent reading `kubegap lint --format json` and one
calling `lint_manifests` see the same records. Finding records accept extra fields (extra="allow"), so
fields the record gains later (the cost model's `impact`) pass through without a schema change here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SeverityName = Literal["critical", "high", "medium", "low", "info"]
ResultName = Literal["pass", "fail", "error", "skip"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ObjectRecord(_Model):
    apiVersion: str
    kind: str
    namespace: str | None
    name: str


class FindingRecord(_Model):
    """One failing, errored or exempted evaluation; messages are redacted and carry no whole objects."""

    model_config = ConfigDict(extra="allow")

    policy: str
    rule: str
    severity: SeverityName
    result: ResultName
    message: str
    remediation: str
    object: ObjectRecord
    role: str | None
    container: str | None
    path: str | None = Field(description="JSON path of the offending field")
    file: str | None
    document: int | None
    line: int | None
    column: int | None
    unresolved: list[str] = Field(description="sources whose values could not be read (never a pass)")
    impact: dict[str, Any] | None = Field(
        default=None,
        description="failing findings of training workloads: savedGpuHoursPerMonth (null when the cost "
        "model cannot price the fix, with the reason), the inputs and what the fix changes "
        "(docs/cost-model.md)",
    )


class SummaryRecord(_Model):
    objects: int
    notApplicable: int
    invalid: int
    unsized: int = Field(default=0, description="objects with an accelerator count that could not be read")
    results: dict[str, int]
    failuresBySeverity: dict[str, int]
    unresolvedObjects: int = Field(description="objects with unreadable values")
    unresolved: dict[str, list[str]] = Field(description="the first of those objects and their sources")


class Saving(_Model):
    policy: str
    rule: str
    savedGpuHoursPerMonth: float = Field(description="what fixing this rule alone would save a month")


class WorkloadCostRecord(_Model):
    """One training workload under the cost model (docs/cost-model.md)."""

    model_config = ConfigDict(extra="allow")

    object: ObjectRecord
    file: str | None
    document: int | None
    totalGpus: int
    lostGpuHoursPerMonth: float = Field(description="expected GPU-hours lost a month")
    youngCheckpointIntervalHours: float | None = Field(description="Young's optimal checkpoint interval")
    inputs: dict[str, Any] = Field(description="the model's inputs, each with its source")
    savings: list[Saving] = Field(description="the failing rules whose fix the model prices, best first")


class CostOutput(_Model):
    workloads: list[WorkloadCostRecord] = Field(description="training workloads, costliest first")
    total: int
    summary: SummaryRecord


class FixOutcome(_Model):
    policy: str
    rule: str
    object: ObjectRecord
    container: str | None
    line: int | None
    result: Literal["fixed", "todo", "not fixed"] = Field(
        description="fixed: the patch settles it; todo: a TODO value a person must fill in; not fixed: "
        "no safe fix, with the reason in note"
    )
    note: str


class FixOutput(_Model):
    diff: str = Field(description="the unified diff `kubegap fix -` would make; nothing is applied")
    changed: bool
    fixed: int
    todo: int
    notFixed: int
    outcomes: list[FixOutcome]


class RuleCount(_Model):
    policy: str
    rule: str
    severity: SeverityName
    count: int


class LintOutput(_Model):
    findings: list[FindingRecord]
    total: int
    byRule: list[RuleCount]
    summary: SummaryRecord


class RiskyRule(_Model):
    right: Literal["write", "secrets", "pods/exec", "impersonate"]
    verbs: list[str]
    apiGroups: list[str]
    resources: list[str]


class AccessRecord(_Model):
    """What the credentials may do, from a SelfSubjectRulesReview in one namespace."""

    checked: bool
    namespace: str
    readOnly: bool = Field(description="checked, complete, and no risky right found")
    incomplete: bool = Field(description="the authorizer could not list every rule (e.g. webhook authz)")
    risky: list[RiskyRule]
    error: str | None


class ClusterRecord(_Model):
    server: str
    context: str | None
    user: str | None = Field(description="the kubeconfig user (or in-cluster service account)")
    userAgent: str


class OffenderRecord(_Model):
    object: ObjectRecord
    severity: SeverityName
    failures: int
    gpus: int
    roles: list[str]


class GapRecord(_Model):
    kind: str | None
    resource: str | None
    namespace: str | None
    reason: str


class CoverageRecord(_Model):
    """What the audit read and what it could not (the audit's `coverage`, as `kubegap audit` prints it)."""

    model_config = ConfigDict(extra="allow")

    complete: bool = Field(description="false when anything could not be evaluated: never a clean result")
    interrupted: bool
    totals: dict[str, int]
    notEvaluated: list[GapRecord]
    kinds: list[dict[str, Any]]


class AuditOutput(_Model):
    cluster: ClusterRecord
    access: AccessRecord
    findings: list[FindingRecord] = Field(description="at most `limit`, worst first")
    total: int
    truncated: bool
    nextCursor: str | None
    byRule: list[RuleCount]
    offenders: list[OffenderRecord]
    summary: SummaryRecord
    coverage: CoverageRecord


class ValidationRecord(_Model):
    name: str
    severity: SeverityName
    scope: str
    description: str
    remediation: str
    impact: dict[str, str | None] | None = Field(
        default=None, description="the cost-model term a fix changes, and the parameter that sets it"
    )


class ReferenceRecord(_Model):
    kind: str
    id: str | None
    title: str
    url: str | None


class PolicyRecord(_Model):
    id: str
    title: str
    severity: SeverityName
    severityFromImpact: bool = Field(
        default=False, description="priced findings take the severity their fix is worth in GPU-hours"
    )
    scope: str
    params: dict[str, str]
    validations: list[ValidationRecord]
    references: list[ReferenceRecord]


class PolicyList(_Model):
    policies: list[PolicyRecord]


class PolicyDetail(PolicyRecord):
    description: str
    remediation: str
    exemption: str = Field(description="the annotation that exempts a workload, with a reason")


class GpuResource(_Model):
    name: str
    capacity: int
    allocatable: int


class NodeRecord(_Model):
    name: str
    schedulable: bool
    cordoned: bool
    taints: list[str]
    gpus: list[GpuResource]
    conditions: list[str] = Field(description="conditions that are not as a healthy node reports them")
    findings: list[FindingRecord]


class NodesOutput(_Model):
    cluster: ClusterRecord
    access: AccessRecord
    nodes: list[NodeRecord] = Field(description="GPU nodes, unhealthy first, at most `limit`")
    gpuNodes: int
    unhealthy: int
    truncated: bool
    complete: bool
    problems: list[str]

"""`--format policyreport`: wgpolicyk8s.io/v1alpha2 PolicyReport (one per namespace) and ClusterPolicyReport
(cluster-scoped objects such as Nodes), as `kubectl apply -f -` accepts them.

Failing, errored and exempted results are listed; passing ones are counted in `summary.pass` but not
listed, so a namespace of thousands of healthy workloads stays a small object. A report whose results
would pass `max_bytes` is split into parts (`kubegap`, `kubegap-2`, ...), because etcd refuses objects
above 1.5 MiB by default; each part's summary counts its own results and the first part carries the passes.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TextIO, TypedDict

import yaml

from kubegap.evaluate import Evaluation
from kubegap.findings import Finding, Result

API_VERSION = "wgpolicyk8s.io/v1alpha2"
SOURCE = "kubegap"
MAX_BYTES = 1_000_000

ReportSummary = TypedDict("ReportSummary", {"pass": int, "fail": int, "warn": int, "error": int, "skip": int})


class Timestamp(TypedDict):
    seconds: int
    nanos: int


class ResourceRef(TypedDict, total=False):
    apiVersion: str
    kind: str
    namespace: str
    name: str
    uid: str


class ReportResult(TypedDict, total=False):
    policy: str
    rule: str
    result: str  # pass | fail | warn | error | skip
    severity: str  # critical | high | medium | low | info
    message: str
    source: str
    scored: bool
    timestamp: Timestamp
    resources: list[ResourceRef]
    properties: dict[str, str]


class PolicyReport(TypedDict):
    apiVersion: str
    kind: str  # PolicyReport | ClusterPolicyReport
    metadata: dict[str, Any]
    summary: ReportSummary
    results: list[ReportResult]


def _saved(finding: Finding) -> str:
    """PolicyReport properties are strings: the saving the fix brings, rounded, or nothing."""
    impact = finding.impact
    return f"{impact.saved:.1f}" if impact is not None and impact.saved is not None else ""


def result_entry(finding: Finding, timestamp: int, uid: str | None = None) -> ReportResult:
    ref = finding.object
    resource: ResourceRef = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name}
    if ref.namespace:
        resource["namespace"] = ref.namespace
    if uid:
        resource["uid"] = uid
    properties = {
        "role": finding.role or "",
        "container": finding.container or "",
        "path": finding.path or "",
        "remediation": finding.remediation,
        "unresolved": ", ".join(finding.unresolved),
        "savedGpuHoursPerMonth": _saved(finding),
    }
    return {
        "policy": finding.policy,
        "rule": finding.rule,
        "result": finding.result.value,
        "severity": finding.severity.value,
        "message": finding.message,
        "source": SOURCE,
        "scored": True,
        "timestamp": {"seconds": timestamp, "nanos": 0},
        "resources": [resource],
        "properties": {k: v for k, v in properties.items() if v},
    }


def build(
    namespace: str | None,
    results: Iterable[ReportResult],
    passes: int = 0,
    name: str = SOURCE,
    max_bytes: int = MAX_BYTES,
) -> Iterator[PolicyReport]:
    """The report(s) of one namespace (None: the ClusterPolicyReport); always at least one, even if empty."""
    part: list[ReportResult] = []
    size, index = 0, 1
    for entry in results:
        entry_size = len(json.dumps(entry))
        if part and size + entry_size > max_bytes:
            yield _report(namespace, _part_name(name, index), part, passes if index == 1 else 0)
            part, size, index = [], 0, index + 1
        part.append(entry)
        size += entry_size
    yield _report(namespace, _part_name(name, index), part, passes if index == 1 else 0)


def _part_name(name: str, index: int) -> str:
    return name if index == 1 else f"{name}-{index}"


def _report(namespace: str | None, name: str, results: list[ReportResult], passes: int) -> PolicyReport:
    counts = Counter(r["result"] for r in results)
    summary: ReportSummary = {
        "pass": passes + counts["pass"],
        "fail": counts["fail"],
        "warn": counts["warn"],
        "error": counts["error"],
        "skip": counts["skip"],
    }
    metadata: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/managed-by": SOURCE}}
    if namespace:
        metadata["namespace"] = namespace
    kind = "PolicyReport" if namespace else "ClusterPolicyReport"
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "summary": summary,
        "results": results,
    }


def from_evaluations(
    evaluations: Iterable[Evaluation], timestamp: int | None = None, name: str = SOURCE
) -> list[PolicyReport]:
    """All reports for evaluations held in memory (the audit streams instead, through `build`)."""
    now = int(time.time()) if timestamp is None else timestamp
    passes: Counter[str] = Counter()
    listed: dict[str, list[ReportResult]] = {}
    for evaluation in evaluations:
        namespace = evaluation.ref.namespace or ""
        if not evaluation.results:
            continue
        entries = listed.setdefault(namespace, [])
        for finding in evaluation.results:
            if finding.result is Result.PASS:
                passes[namespace] += 1
            else:
                entries.append(result_entry(finding, now))
    reports: list[PolicyReport] = []
    for namespace in sorted(listed):
        reports.extend(build(namespace or None, listed[namespace], passes[namespace], name))
    return reports


def write_yaml(reports: Iterable[Mapping[str, Any]], out: TextIO) -> None:
    """One YAML document per report, ready for `kubectl apply -f -`."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    for report in reports:
        out.write("---\n")
        yaml.dump(dict(report), out, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)

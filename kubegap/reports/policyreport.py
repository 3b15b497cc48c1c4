"""`--format policyreport`: wgpolicyk8s.io/v1alpha2 PolicyReport (one per namespace) and ClusterPolicyReport
(cluster-scoped objects such as Nodes), as `kubectl apply -f -` accepts them.

Failing, errored and exempted results are listed; passing ones are counted in `summary.pass` but not
listed, so a namespace of thousands of healthy workloads stays a small object. A report whose results
would pass `max_bytes` is split into parts (`kubegap`, `kubegap-2`, ...), because etcd refuses objects
above 1.5 MiB by default; each part's summary counts its own results and the first part carries the passes.

The audit names its reports `kubegap`; lint names its own `kubegap-lint`, so that applying a lint report
never replaces the audit's report of the live objects. Lint reads the namespace from each manifest: a
namespaced object without one is reported in a PolicyReport without a namespace, which `kubectl apply`
puts where the manifests go (`-n`, or the context's namespace); documents that cannot be read go there too.
The CRD's fields: https://github.com/kyverno/kyverno/blob/main/config/crds/policyreport/wgpolicyk8s.io_policyreports.yaml
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TextIO, TypedDict

import yaml

from kubegap.findings import Finding, Result
from kubegap.kinds import kind_info
from kubegap.reports.registry import writable
from kubegap.reports.report import Report

if TYPE_CHECKING:
    from kubegap.audit.coverage import Coverage
    from kubegap.audit.runner import AuditResult
    from kubegap.evaluate import Evaluation

API_VERSION = "wgpolicyk8s.io/v1alpha2"
SOURCE = "kubegap"
LINT_NAME = "kubegap-lint"
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
    properties = {
        "role": finding.role or "",
        "container": finding.container or "",
        # every identical template and container the one result stands for (RULES.md §4), when several
        "roles": ", ".join(finding.roles) if len(finding.roles) > 1 else "",
        "containers": ", ".join(finding.containers) if len(finding.containers) > 1 else "",
        "path": finding.path or "",
        "remediation": finding.remediation,
        "unresolved": ", ".join(finding.unresolved),
        "savedGpuHoursPerMonth": _saved(finding),
        "file": finding.file or "",  # lint: where the manifest is
        "line": str(finding.line or ""),
    }
    entry: ReportResult = {
        "policy": finding.policy,
        "rule": finding.rule,
        "result": finding.result.value,
        "severity": finding.severity.value,
        "message": finding.message,
        "source": SOURCE,
        "scored": True,
        "timestamp": {"seconds": timestamp, "nanos": 0},
    }
    if finding.object.kind:  # an unreadable document names no object: its file and line say where it is
        entry["resources"] = [_resource(finding, uid)]
    entry["properties"] = {k: v for k, v in properties.items() if v}
    return entry


def _resource(finding: Finding, uid: str | None) -> ResourceRef:
    ref = finding.object
    resource: ResourceRef = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name}
    if ref.namespace:
        resource["namespace"] = ref.namespace
    if uid:
        resource["uid"] = uid
    return resource


def build(
    namespace: str | None,
    results: Iterable[ReportResult],
    passes: int = 0,
    name: str = SOURCE,
    max_bytes: int = MAX_BYTES,
) -> Iterator[PolicyReport]:
    """The report(s) of one namespace (None: the ClusterPolicyReport; "": a PolicyReport without a namespace,
    which `kubectl apply` places); always at least one, even if empty."""
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
    kind = "ClusterPolicyReport" if namespace is None else "PolicyReport"
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
    results = (f for e in evaluations for f in e.results)
    return from_findings(results, lambda f: f.object.namespace or None, timestamp, name)


def from_findings(
    results: Iterable[Finding],
    namespace_of: Callable[[Finding], str | None],
    timestamp: int | None = None,
    name: str = SOURCE,
) -> list[PolicyReport]:
    """One report (or its parts) per namespace with any result, passes included; cluster-scoped first."""
    now = int(time.time()) if timestamp is None else timestamp
    passes: Counter[str | None] = Counter()
    listed: dict[str | None, list[ReportResult]] = {}
    for finding in results:
        namespace = namespace_of(finding)
        entries = listed.setdefault(namespace, [])
        if finding.result is Result.PASS:
            passes[namespace] += 1
        else:
            entries.append(result_entry(finding, now))
    reports: list[PolicyReport] = []
    for namespace in sorted(listed, key=lambda ns: (ns is not None, ns or "")):
        reports.extend(build(namespace, listed[namespace], passes[namespace], name))
    return reports


def lint_namespace(finding: Finding) -> str | None:
    """The manifest's namespace; None for cluster-scoped kinds; "" where the manifest leaves it to apply."""
    ref = finding.object
    info = kind_info({"apiVersion": ref.api_version, "kind": ref.kind}) if ref.kind else None
    if info is not None and not info.namespaced:
        return None
    return ref.namespace or ""


def from_audit(result: AuditResult, timestamp: int | None = None) -> Iterator[PolicyReport]:
    """One report per namespace that had any result (passes included), the cluster-scoped one first."""
    now = int(time.time()) if timestamp is None else timestamp
    groups = result.spool.by_namespace()
    pending = next(groups, None)
    for namespace in sorted({ns or "" for ns in result.by_namespace}):
        counts = result.by_namespace.get(namespace or None)
        passes = counts["pass"] if counts is not None else 0
        entries: Iterator[ReportResult] = iter(())
        if pending is not None and (pending[0] or "") == namespace:
            entries = (result_entry(f, now, uid) for uid, f in pending[1])
        yield from build(namespace or None, entries, passes)
        if pending is not None and (pending[0] or "") == namespace:
            pending = next(groups, None)


def render(report: Report) -> Iterator[str]:
    if report.audit is None:
        results = [*report.findings, *report.passes]
        yield from documents(from_findings(results, lint_namespace, name=LINT_NAME))
        return
    yield from _coverage_comment(report.audit.coverage)
    yield from documents(from_audit(report.audit))


def _coverage_comment(coverage: Coverage) -> Iterator[str]:
    # PolicyReport has no field for the coverage, and a report that is only partial must still say so
    # where a human will read it: it rides along as a comment.
    yield "# kubegap audit coverage:\n"
    full = coverage.to_json()
    brief = {key: full[key] for key in ("complete", "interrupted", "totals", "notEvaluated")}
    text = yaml.safe_dump(brief, sort_keys=False, width=100)
    yield "".join(f"#   {line}\n" for line in text.splitlines())


def documents(reports: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """One YAML document per report, ready for `kubectl apply -f -`."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    for report in reports:
        try:
            text = yaml.dump(dict(report), Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)
        except UnicodeEncodeError:  # a lone surrogate from the cluster's JSON: written as U+FFFD
            text = yaml.dump(_writable(report), Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)
        yield "---\n" + text


def _writable(value: Any) -> Any:
    if isinstance(value, str):
        return writable(value)
    if isinstance(value, Mapping):
        return {_writable(k): _writable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_writable(v) for v in value]
    return value


def write_yaml(reports: Iterable[Mapping[str, Any]], out: TextIO) -> None:
    for document in documents(reports):
        out.write(document)

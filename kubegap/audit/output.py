"""Rendering an audit result in the format asked for; every format carries the coverage."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

import yaml

from kubegap import __version__
from kubegap.audit import jsonout, text
from kubegap.audit.runner import AuditResult
from kubegap.errors import UsageError
from kubegap.policy import Policy
from kubegap.reports import junit, policyreport, sarif
from kubegap.reports.policyreport import PolicyReport

FORMATS = ("text", "json", "policyreport", "sarif", "junit")


def policy_reports(result: AuditResult, timestamp: int | None = None) -> Iterator[PolicyReport]:
    """One report per namespace that had any result (passes included), the cluster-scoped one first."""
    now = int(time.time()) if timestamp is None else timestamp
    groups = result.spool.by_namespace()
    pending = next(groups, None)
    for namespace in sorted({ns or "" for ns in result.by_namespace}):
        counts = result.by_namespace.get(namespace or None)
        passes = counts["pass"] if counts is not None else 0
        entries: Iterator[policyreport.ReportResult] = iter(())
        if pending is not None and (pending[0] or "") == namespace:
            entries = (policyreport.result_entry(f, now, uid) for uid, f in pending[1])
        yield from policyreport.build(namespace or None, entries, passes)
        if pending is not None and (pending[0] or "") == namespace:
            pending = next(groups, None)


def write(
    out: TextIO, fmt: str, result: AuditResult, cluster: str = "", policies: Sequence[Policy] = ()
) -> None:
    if fmt in ("sarif", "junit"):
        # A cluster holds too many passing evaluations to list: these formats carry the findings, and the
        # pass count stays in the summary of the other formats.
        findings = list(result.spool.findings("listed"))
        if fmt == "sarif":
            out.write(sarif.render(findings, policies, __version__))
        else:
            out.write(junit.render(findings, policies))
    elif fmt == "json":
        # the costliest training workloads (the offenders), so a cluster's JSON stays small
        workloads = [o.cost.to_json() for o in result.offenders if o.cost is not None]
        extra = {"coverage": result.coverage.to_json(), "workloads": workloads}
        if result.cluster is not None:  # the cluster validations' status and pools (RULES.md §2 v3)
            extra["cluster"] = result.cluster.to_json()
        jsonout.write(out, result.spool.findings("listed"), result.summary, extra)
    elif fmt == "policyreport":
        # The coverage rides along as a comment: PolicyReport has no field for it, and a report that
        # is only partial must still say so where a human will read it.
        out.write("# kubegap audit coverage:\n")
        full = result.coverage.to_json()
        brief = {key: full[key] for key in ("complete", "interrupted", "totals", "notEvaluated")}
        coverage = yaml.safe_dump(brief, sort_keys=False, width=100)
        out.write("".join(f"#   {line}\n" for line in coverage.splitlines()))
        policyreport.write_yaml(policy_reports(result), out)
    else:
        text.write(out, result, cluster)


def write_file(
    path: str, fmt: str, result: AuditResult, cluster: str = "", policies: Sequence[Policy] = ()
) -> None:
    """One report to a file (folders created); raises UsageError when it cannot be written."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with Path(path).open("w", encoding="utf-8") as out:
            write(out, fmt, result, cluster, policies)
    except OSError as err:
        raise UsageError(f"--output {fmt}={path}: {err.strerror or err}") from None

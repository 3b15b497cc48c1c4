"""An audit result as the record every output format renders (kubegap.reports.registry picks the format).

A cluster holds too many passing evaluations to list: the formats get the findings, read back from the
spool each time one asks, and the passes stay counts in the summary.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kubegap.audit.runner import AuditResult
from kubegap.audit.spool import Spool
from kubegap.findings import Finding
from kubegap.policy import Policy
from kubegap.reports.report import Report


class _Listed:
    """The audit's findings in listing order, iterable as often as formats ask (they live on disk)."""

    def __init__(self, result: AuditResult) -> None:
        self._result = result

    def __iter__(self) -> Iterator[Finding]:
        return self._result.spool.findings("listed")


class _Joined:
    """Their JSON texts, made where each finding was (kubegap.audit.spool), in the same order and joined as
    the JSON report lists them; read again by each output that asks for JSON."""

    def __init__(self, spool: Spool) -> None:
        self._spool = spool

    def __iter__(self) -> Iterator[str]:
        return self._spool.joined()


def report(result: AuditResult, cluster: str = "", policies: Sequence[Policy] = ()) -> Report:
    return Report(
        findings=_Listed(result),
        summary=result.summary,
        policies=policies,
        # the costliest training workloads (the offenders), so a cluster's JSON stays small
        workloads=[o.cost for o in result.offenders if o.cost is not None],
        audit=result,
        cluster=cluster,
        findings_json=_Joined(result.spool) if result.spool.keep.json else None,
    )

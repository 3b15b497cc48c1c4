"""What every output format renders: one run's results, lint's or the audit's, in one record.

A format reads the fields it needs and ignores the rest. Work that only some formats need (the patches
SARIF offers, the line saying what `kubegap fix` could do) is passed as a function, run only by them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubegap import __version__
from kubegap.findings import Finding, Summary, WorkloadCost
from kubegap.policy import Policy

if TYPE_CHECKING:
    from kubegap.audit.runner import AuditResult
    from kubegap.fix.suggestions import Suggestion


@dataclass(frozen=True, slots=True)
class Report:
    """What a lint or an audit found, as every format renders it."""

    # Fail, error and skip results. Iterable more than once: the audit reads them back from disk each time.
    findings: Iterable[Finding]
    summary: Summary
    policies: Sequence[Policy] = ()
    passes: Sequence[Finding] = ()  # kept by lint for the formats that count or list them; the audit counts
    workloads: Sequence[WorkloadCost] = ()  # training workloads with their expected loss, costliest first
    base_dir: str | None = None  # where the run started: file names below it are written relative to it
    tool_version: str = __version__
    fixes: Callable[[], Mapping[Finding, Suggestion]] | None = None  # lint: each finding's patch
    fixable: tuple[int, int] | None = None  # lint: (fixed, left as TODO) by `kubegap fix`, where counted
    audit: AuditResult | None = None  # the audit's coverage, offenders and per-namespace counts
    cluster: str = ""  # the audited API server
    # The JSON report's list of findings: each finding's JSON text (kubegap.reports.json) in the order of
    # `findings`, separated by ", ", in pieces, where the audit made them beside the findings
    # (kubegap.audit.spool); None: the JSON format encodes the findings itself.
    findings_json: Iterable[str] | None = None
    # The JSON text of each of `workloads`, in its order, where lint's runs made them; None: the JSON
    # format encodes the workloads itself.
    workloads_json: Sequence[str] | None = None

"""The text part of every tool result: a short summary an agent reads first, hard-capped in size.

Agents count the text of a tool result against their context (Claude Code warns above 10,000 tokens); the
full records travel in structuredContent. Whatever the cluster's size, the text stays under TEXT_LIMIT
characters (about 10,000 tokens at four characters a token).
"""

from __future__ import annotations

from collections.abc import Sequence

from kubegap.durations import format_seconds
from kubegap.impact import gpu_hours_text
from kubegap.mcp.access import describe
from kubegap.mcp.models import (
    AuditOutput,
    CostOutput,
    FindingRecord,
    FixOutput,
    LintOutput,
    NodesOutput,
    PolicyDetail,
    PolicyList,
    RuleCount,
    SummaryRecord,
)

TEXT_LIMIT = 40_000
TOP_RULES = 10
_CUT = "\n… (summary cut at {limit:,} characters; every record is in structuredContent)\n"


def cap(text: str, limit: int = TEXT_LIMIT) -> str:
    if len(text) < limit:
        return text
    note = _CUT.format(limit=limit)
    return text[: limit - len(note) - 1] + note


def _counts(summary: SummaryRecord) -> str:
    fails = ", ".join(f"{n} {s}" for s, n in summary.failuresBySeverity.items() if n) or "none"
    results = summary.results
    line = (
        f"{summary.objects} object(s) checked; failures: {fails}; "
        f"errors {results.get('error', 0)}, exempted {results.get('skip', 0)}"
    )
    if summary.invalid:
        line += f"; {summary.invalid} document(s) could not be read"
    if summary.unresolvedObjects:
        line += f"; {summary.unresolvedObjects} object(s) with values kubegap could not read"
    return line


def _rules(rows: Sequence[RuleCount], examples: Sequence[FindingRecord]) -> list[str]:
    if not rows:
        return ["No failing rule."]
    lines = ["Failing rules (worst first):"]
    for row in rows[:TOP_RULES]:
        lines.append(f"  {row.severity:<8} {row.count:>6}x {row.policy}/{row.rule}")
        example = next((f for f in examples if (f.policy, f.rule) == (row.policy, row.rule)), None)
        if example is not None:
            lines.append(f"           e.g. {_subject(example)}: {example.message[:300]}")
    if len(rows) > TOP_RULES:
        lines.append(f"  … and {len(rows) - TOP_RULES} more rule(s) in structuredContent.byRule")
    return lines


def _subject(finding: FindingRecord) -> str:
    ref = finding.object
    name = f"{ref.kind}/{ref.namespace + '/' if ref.namespace else ''}{ref.name}" if ref.kind else "document"
    parts = (finding.role and f"role {finding.role}", finding.container and f"container {finding.container}")
    where = ", ".join(p for p in parts if p)
    at = f" at {finding.path}" if finding.path else ""
    return f"{name}{f' ({where})' if where else ''}{at}"


def lint_text(out: LintOutput) -> str:
    lines = [f"kubegap lint: {_counts(out.summary)}", "", *_rules(out.byRule, out.findings)]
    lines += ["", "Every finding, with remediation and field path, is in structuredContent.findings."]
    return cap("\n".join(lines) + "\n")


def fix_text(out: FixOutput) -> str:
    """Counts, then the diff itself (a patch an agent can show or apply), capped like every summary."""
    lines = [
        f"kubegap fix (nothing applied): {out.fixed} fixed, {out.todo} left as TODO, "
        f"{out.notFixed} without a safe fix",
        "",
    ]
    lines += [f"  not fixed: {o.policy}/{o.rule}: {o.note}" for o in out.outcomes if o.result == "not fixed"][
        :10
    ]
    lines += ["", out.diff or "(no change)"]
    return cap("\n".join(lines) + "\n")


def cost_text(out: CostOutput) -> str:
    """The costliest workloads first: what each is expected to lose, and the fix worth most."""
    lines = [f"kubegap cost model: {out.total} training workload(s) priced (docs/cost-model.md)", ""]
    for w in out.workloads[:TOP_RULES]:
        ref = w.object
        name = f"{ref.kind}/{ref.namespace + '/' if ref.namespace else ''}{ref.name}"
        lines.append(
            f"  ≈ {gpu_hours_text(w.lostGpuHoursPerMonth)} GPU-h/month at risk  {name} ({w.totalGpus} GPUs)"
        )
        best = [s for s in w.savings if s.savedGpuHoursPerMonth > 0][:3]
        lines += [
            f"      fixing {s.policy}/{s.rule} saves ≈ {gpu_hours_text(s.savedGpuHoursPerMonth)}"
            for s in best
        ]
        if w.youngCheckpointIntervalHours:
            young = format_seconds(round(w.youngCheckpointIntervalHours * 60) * 60)
            lines.append(f"      Young's optimal checkpoint interval ≈ {young}")
    if out.total > TOP_RULES:
        lines.append(f"  … and {out.total - TOP_RULES} more in structuredContent.workloads")
    lines += ["", "Model inputs, with their sources, are in structuredContent.workloads[].inputs."]
    return cap("\n".join(lines) + "\n")


def audit_text(out: AuditOutput) -> str:
    cluster = out.cluster
    complete = out.coverage.complete
    lines = [
        f"kubegap audit of {cluster.server} (context {cluster.context or '-'}, user {cluster.user or '-'})",
        f"Credentials: {describe(out.access)}",
        _counts(out.summary),
        f"Coverage: {'complete' if complete else 'INCOMPLETE: some kinds or namespaces were not evaluated'}",
    ]
    gaps = out.coverage.notEvaluated
    lines += [f"  not evaluated: {gap.kind or 'audit'}: {gap.reason}" for gap in gaps[:10]]
    if len(gaps) > 10:
        lines.append(f"  … and {len(gaps) - 10} more in structuredContent.coverage.notEvaluated")
    lines += ["", *_rules(out.byRule, out.findings), "", "Worst offenders:"]
    for o in out.offenders:
        ref = o.object
        name = f"{ref.kind}/{ref.namespace + '/' if ref.namespace else ''}{ref.name}"
        lines.append(f"  {o.severity:<8} {o.failures:>4} fails {o.gpus:>5} GPUs  {name}")
    if not out.offenders:
        lines.append("  none")
    page = f"{len(out.findings)} of {out.total} finding(s) in structuredContent.findings (worst first)"
    lines += ["", page + (f"; next page: cursor {out.nextCursor!r}" if out.nextCursor else "")]
    return cap("\n".join(lines) + "\n")


def nodes_text(out: NodesOutput) -> str:
    cluster = out.cluster
    lines = [
        f"kubegap GPU nodes of {cluster.server} (context {cluster.context or '-'})",
        f"Credentials: {describe(out.access)}",
        f"{out.gpuNodes} GPU node(s), {out.unhealthy} with problems"
        + ("" if out.complete else "; INCOMPLETE: " + "; ".join(out.problems)[:2000]),
    ]
    for node in out.nodes[:25]:
        if not node.findings and node.schedulable:
            continue
        gpus = ", ".join(f"{g.name} {g.allocatable}/{g.capacity}" for g in node.gpus)
        state = "schedulable" if node.schedulable else "cordoned" if node.cordoned else "tainted"
        problems = "; ".join(node.conditions) or "-"
        lines.append(f"  {node.name}: {state}; allocatable/capacity {gpus}; conditions: {problems}")
        lines += [f"    {f.severity} {f.policy}/{f.rule}: {f.message[:300]}" for f in node.findings]
    return cap("\n".join(lines) + "\n")


def policies_text(out: PolicyList) -> str:
    lines = [f"{len(out.policies)} policies (explain_policy gives the incident, parameters and fix):"]
    lines += [f"  {p.id:<22} {p.severity:<8} {p.title}" for p in out.policies]
    return cap("\n".join(lines) + "\n")


def policy_text(out: PolicyDetail) -> str:
    lines = [f"{out.id} ({out.severity}): {out.title}", "", out.description, ""]
    lines += [f"  param {name} = {value}" for name, value in out.params.items()]
    lines += [f"  rule {v.name} [{v.severity}]: {v.description}" for v in out.validations]
    lines += ["", f"Fix: {out.remediation}"]
    lines += [
        f"Why: {r.id + ': ' if r.id else ''}{r.title}{f' <{r.url}>' if r.url else ''}" for r in out.references
    ]
    lines.append(f"Exempt: {out.exemption}")
    return cap("\n".join(lines) + "\n")

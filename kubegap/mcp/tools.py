"""What each MCP tool does, independent of the protocol: arguments in, (record, text summary) out.

The server (kubegap.mcp.server) registers one row of TOOLS per tool; a new tool (estimate_cost,
suggest_fix) is one method here returning (record, text), one summary function and one row there.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Sequence
from dataclasses import replace

from kubegap import inputs, manifests
from kubegap.audit.scope import AuditScope, check_namespace
from kubegap.config import Settings
from kubegap.errors import UsageError
from kubegap.evaluate import Engine, build_engine
from kubegap.lint import LintReport, lint_documents
from kubegap.mcp import cluster, gpunodes, summary
from kubegap.mcp.cluster import Connection, ProgressFn, StoredAudit
from kubegap.mcp.models import (
    AuditOutput,
    CostOutput,
    CoverageRecord,
    FixOutput,
    LintOutput,
    NodesOutput,
    PolicyDetail,
    PolicyList,
    PolicyRecord,
)
from kubegap.mcp.records import (
    audit_rule_counts,
    cost_record,
    finding_record,
    fix_outcome,
    offender_record,
    rule_counts,
    summary_record,
)
from kubegap.policy import EXEMPTION_PREFIX
from kubegap.reports import catalogue
from kubegap.workloads import KindInfo

MAX_LIMIT = 200  # findings per page: about 135 KB of records; more would crowd an agent's context
MAX_MANIFEST_BYTES = manifests.MAX_FILE_BYTES


class Toolbox:
    def __init__(self, settings: Settings, connection: Connection, page_size: int = 500) -> None:
        self.settings, self.connection, self.page_size = settings, connection, page_size
        self.engine = build_engine(settings)
        self._engines: dict[tuple[str, ...], Engine] = {(): self.engine}
        self.audits = cluster.AuditStore()
        self._reading = threading.Lock()  # one audit or page read at a time: spools are not shared safely

    def _engine_for(self, policies: Sequence[str]) -> Engine:
        key = tuple(sorted(set(policies)))
        if key not in self._engines:
            self._engines[key] = build_engine(replace(self.settings, select=key))
        return self._engines[key]

    # --- lint and catalogue (no cluster) ---------------------------------------------------------------

    def lint(self, text: str, policies: Sequence[str] = ()) -> LintReport:
        """Manifest text read as `kubegap lint -` reads stdin: the base of every tool that takes manifests."""
        data = text.encode("utf-8")
        if len(data) > MAX_MANIFEST_BYTES:
            raise UsageError(f"manifests exceed {MAX_MANIFEST_BYTES:,} bytes; lint them in parts")
        reader = manifests.Reader()
        report = lint_documents(reader.read([inputs.STDIN], io.BytesIO(data)), self._engine_for(policies))
        report.summary.not_applicable += reader.skipped
        return report

    def estimate_cost(self, text: str) -> tuple[CostOutput, str]:
        """The cost model over manifest text: each training workload's loss, and what each fix saves."""
        report = self.lint(text)
        costs = sorted(report.workloads, key=lambda w: -w.lost)
        out = CostOutput(
            workloads=[cost_record(c) for c in costs],
            total=len(costs),
            summary=summary_record(report.summary),
        )
        return out, summary.cost_text(out)

    def suggest_fix(self, text: str) -> tuple[FixOutput, str]:
        """The patch `kubegap fix -` would make, as a diff; nothing is applied or written."""
        from kubegap.fix.files import Refused, Source, fix_source, scope_for

        data = text.encode("utf-8")
        if len(data) > MAX_MANIFEST_BYTES:
            raise UsageError(f"manifests exceed {MAX_MANIFEST_BYTES:,} bytes; fix them in parts")
        source = Source(inputs.STDIN_NAME, None, None, data)
        try:
            fixed = fix_source(source, scope_for([source], self.engine, lambda _finding: True))
        except Refused as err:
            raise UsageError(f"no fix can be planned: {err}") from None
        outcomes = [fix_outcome(o) for o in fixed.outcomes]
        out = FixOutput(
            diff=fixed.diff(),
            changed=fixed.changed,
            fixed=sum(o.result == "fixed" for o in outcomes),
            todo=sum(o.result == "todo" for o in outcomes),
            notFixed=sum(o.result == "not fixed" for o in outcomes),
            outcomes=outcomes,
        )
        return out, summary.fix_text(out)

    def lint_manifests(self, text: str, policies: Sequence[str] = ()) -> tuple[LintOutput, str]:
        report = self.lint(text, policies)
        out = LintOutput(
            findings=[finding_record(f) for f in report.findings],
            total=len(report.findings),
            byRule=rule_counts(report.findings),
            summary=summary_record(report.summary),
        )
        return out, summary.lint_text(out)

    def list_policies(self) -> tuple[PolicyList, str]:
        entries = json.loads(catalogue.render(list(self.engine.compiled), "json", detailed=True))
        out = PolicyList(policies=[PolicyRecord.model_validate(e) for e in entries])
        return out, summary.policies_text(out)

    def explain_policy(self, policy_id: str) -> tuple[PolicyDetail, str]:
        chosen = [c for c in self.engine.compiled if c.policy.id == policy_id]
        if not chosen:
            known = ", ".join(c.policy.id for c in self.engine.compiled)
            raise UsageError(f"no policy {policy_id!r}; known: {known}")
        entry = json.loads(catalogue.render(chosen, "json", detailed=True))[0]
        policy = chosen[0].policy
        out = PolicyDetail.model_validate(
            {
                **entry,
                "description": policy.description,
                "remediation": policy.remediation,
                "exemption": f'annotation {EXEMPTION_PREFIX}{policy.id}: "<reason>"',
            }
        )
        return out, summary.policy_text(out)

    # --- cluster --------------------------------------------------------------------------------------

    def audit_cluster(
        self,
        namespace: str | None = None,
        kinds: Sequence[str] = (),
        context: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        progress: ProgressFn | None = None,
    ) -> tuple[AuditOutput, str]:
        if not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
        chosen = cluster.kinds_named(kinds)
        if namespace is not None:
            check_namespace(namespace)
        with self._reading:
            if cursor:
                audit_id, stored, offset = self.audits.get(cursor)
            else:
                stored = self._audit(namespace, chosen, context, progress)
                audit_id, offset = self.audits.add(stored), 0
            return self._page(audit_id, stored, offset, limit)

    def _audit(
        self,
        namespace: str | None,
        kinds: Sequence[KindInfo],
        context: str | None,
        progress: ProgressFn | None,
    ) -> StoredAudit:
        scope = AuditScope(namespaces=(namespace,) if namespace else (), page_size=self.page_size)
        with self.connection.open(context, namespace) as (api, where, rights):
            result = cluster.run_audit(api, self.engine, scope, kinds, progress)
        return StoredAudit(result, where, rights)

    def _page(self, audit_id: str, stored: StoredAudit, offset: int, limit: int) -> tuple[AuditOutput, str]:
        result = stored.result
        findings = []
        for index, finding in enumerate(result.spool.findings("worst")):
            if index >= offset + limit:
                break
            if index >= offset:
                findings.append(finding_record(finding))
        total = result.spool.count
        more = offset + limit < total
        out = AuditOutput(
            cluster=stored.cluster,
            access=stored.access,
            findings=findings,
            total=total,
            truncated=more or offset > 0,
            nextCursor=f"{audit_id}:{offset + limit}" if more else None,
            byRule=audit_rule_counts(result),
            offenders=[offender_record(o) for o in result.offenders],
            summary=summary_record(result.summary),
            coverage=CoverageRecord.model_validate(result.coverage.to_json()),
        )
        return out, summary.audit_text(out)

    def check_nodes(self, context: str | None = None, limit: int = 100) -> tuple[NodesOutput, str]:
        if not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
        with self.connection.open(context) as (api, where, rights):
            nodes, problems = gpunodes.list_gpu_nodes(api, self.engine, self.page_size)
        out = NodesOutput(
            cluster=where,
            access=rights,
            nodes=nodes[:limit],
            gpuNodes=len(nodes),
            unhealthy=sum(gpunodes.unhealthy(n) for n in nodes),
            truncated=len(nodes) > limit,
            complete=not problems,
            problems=problems,
        )
        return out, summary.nodes_text(out)

    def close(self) -> None:
        self.audits.close()

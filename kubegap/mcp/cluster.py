"""Cluster reads for the MCP tools: the audit runner and a GPU-node view, behind one connection recipe.

Each call connects afresh (so a changed kubeconfig or token is picked up), checks the identity's rights
(kubegap.mcp.access) and reads with GET/LIST only. A finished audit is kept for its cursor: the next page
comes from the same audit, consistent with the first, without reading the cluster again.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from kubegap.audit import reader
from kubegap.audit.retry import Api
from kubegap.audit.runner import Auditor, AuditResult
from kubegap.audit.scope import AuditScope
from kubegap.errors import UsageError
from kubegap.evaluate import Evaluator
from kubegap.kinds import SUPPORTED_KINDS
from kubegap.mcp import access
from kubegap.mcp.models import AccessRecord, ClusterRecord
from kubegap.workloads import KindInfo

ProgressFn = Callable[[str, int], None]  # (message, objects so far)


@dataclass(frozen=True, slots=True)
class Target:
    kubeconfig: str | None
    context: str | None
    namespace: str  # where the rules review is asked (reviews are per namespace)


class RefusedError(UsageError):
    """--require-read-only and the credentials can do more than read."""


class Connection:
    def __init__(self, target: Target, require_read_only: bool, timeout: float) -> None:
        self.target, self.require_read_only, self.timeout = target, require_read_only, timeout

    @contextmanager
    def open(
        self, context: str | None = None, namespace: str | None = None
    ) -> Iterator[tuple[Api, ClusterRecord, AccessRecord]]:
        """An API handle, who it is, and what it may do; refused when read-only is required and not shown.

        The rules review is asked in `namespace` (the one audited), else in the configured one."""
        context = context or self.target.context
        name, user = reader.identity(self.target.kubeconfig, context)
        transport = reader.connect(self.target.kubeconfig, context, (reader.DEFAULT_TIMEOUT[0], self.timeout))
        try:
            api = Api(transport)
            rights = access.review(api, namespace or self.target.namespace)
            if self.require_read_only and not rights.readOnly:
                raise RefusedError(f"--require-read-only: {access.describe(rights)}")
            yield (
                api,
                ClusterRecord(server=transport.host, context=name, user=user, userAgent=reader.USER_AGENT),
                rights,
            )
        finally:
            transport.close()


def kinds_named(names: Sequence[str]) -> tuple[KindInfo, ...]:
    """`PyTorchJob`, `pytorchjobs` or `Job.batch.volcano.sh`; a bare kind matches it in every group."""
    chosen: list[KindInfo] = []
    for name in names:
        kind, _, group = name.partition(".")
        found = [
            info
            for info in SUPPORTED_KINDS
            if kind.lower() in (info.kind.lower(), info.plural) and (not group or group == info.group)
        ]
        if not found:
            known = ", ".join(sorted({i.kind for i in SUPPORTED_KINDS}))
            raise UsageError(f"unknown kind {name!r}; kubegap reads: {known}")
        chosen += [f for f in found if f not in chosen]
    return tuple(chosen)


@dataclass(slots=True)
class StoredAudit:
    result: AuditResult
    cluster: ClusterRecord
    access: AccessRecord


class AuditStore:
    """The last few audits, by id, for cursors; the oldest is closed (its spool deleted) when full."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._audits: OrderedDict[str, StoredAudit] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def add(self, audit: StoredAudit) -> str:
        with self._lock:
            audit_id = f"a{next(self._ids)}"
            self._audits[audit_id] = audit
            while len(self._audits) > self.keep:
                _, old = self._audits.popitem(last=False)
                old.result.spool.close()
            return audit_id

    def get(self, cursor: str) -> tuple[str, StoredAudit, int]:
        audit_id, _, offset = cursor.partition(":")
        with self._lock:
            audit = self._audits.get(audit_id)
        if audit is None or not offset.isdigit():
            raise UsageError(f"cursor {cursor!r} is unknown or expired: run audit_cluster again without it")
        return audit_id, audit, int(offset)

    def close(self) -> None:
        with self._lock:
            for audit in self._audits.values():
                audit.result.spool.close()
            self._audits.clear()


class _Progress:
    """The runner's progress protocol, forwarded to a callback (MCP progress notifications)."""

    def __init__(self, report: ProgressFn) -> None:
        self.report = report

    def update(self, kind: str, namespace: str | None, kind_count: int, total: int) -> None:
        where = f" in {namespace}" if namespace else ""
        self.report(f"auditing {kind}{where}: {total} objects so far", total)

    def done(self) -> None:
        """Nothing to clear: notifications are not a terminal line."""


def run_audit(
    api: Api,
    engine: Evaluator,
    scope: AuditScope,
    kinds: Sequence[KindInfo],
    report: ProgressFn | None,
) -> AuditResult:
    progress = _Progress(report) if report is not None else None
    return Auditor(api, engine, scope, progress, kinds=kinds or SUPPORTED_KINDS).run()

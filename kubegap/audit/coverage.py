"""What an audit looked at and what it could not: the part of every report that prevents a false pass."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kubegap.audit.retry import RetryStats


@dataclass(frozen=True, slots=True)
class Gap:
    """A scope that was not (fully) evaluated, and why."""

    namespace: str | None  # None: the whole kind (cluster-wide list or cluster-scoped kind)
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "reason": self.reason}


@dataclass(slots=True)
class KindCoverage:
    api_version: str
    kind: str
    resource: str  # plural.group
    installed: bool = True
    listed: bool = False  # at least one list of it completed
    out_of_scope: str = ""  # why it was deliberately not listed (not a gap)
    seen: int = 0  # objects the server returned
    evaluated: int = 0
    exempted: int = 0  # evaluated objects with at least one exempted (skip) result
    owned: int = 0  # pods skipped because an audited controller owns them
    excluded: int = 0  # in an excluded namespace (filtered on our side)
    not_evaluated: int = 0  # seen but not evaluated (deadline, internal error)
    gaps: list[Gap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if not self.installed:
            return "not-installed"
        if self.out_of_scope:
            return "out-of-scope"
        if not self.gaps and self.not_evaluated == 0:
            return "complete"
        return "partial" if self.listed or self.evaluated else "not-evaluated"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "resource": self.resource,
            "status": self.status,
            "seen": self.seen,
            "evaluated": self.evaluated,
            "exempted": self.exempted,
            "skippedOwned": self.owned,
            "excluded": self.excluded,
            "notEvaluated": self.not_evaluated,
            "gaps": [g.to_json() for g in self.gaps],
            "notes": list(self.notes),
        }
        if self.out_of_scope:
            out["notes"] = [self.out_of_scope, *self.notes]
        return out


_TOTALS = ("seen", "evaluated", "exempted", "owned", "excluded", "not_evaluated")
_TOTAL_NAMES = {"owned": "skippedOwned", "not_evaluated": "notEvaluated"}


@dataclass(slots=True)
class Coverage:
    kinds: list[KindCoverage] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # gaps not tied to one kind
    interrupted: bool = False
    requests: RetryStats = field(default_factory=RetryStats)
    scope: dict[str, Any] = field(default_factory=dict)

    def add_kind(self, api_version: str, kind: str, resource: str) -> KindCoverage:
        entry = KindCoverage(api_version, kind, resource)
        self.kinds.append(entry)
        return entry

    @property
    def complete(self) -> bool:
        return (
            not self.interrupted
            and not self.problems
            and all(k.status in ("complete", "not-installed", "out-of-scope") for k in self.kinds)
        )

    def gaps(self) -> Iterator[tuple[KindCoverage | None, Gap]]:
        """Every reason something was not evaluated, kind by kind, then the general ones."""
        for kind in self.kinds:
            for gap in kind.gaps:
                yield kind, gap
            if kind.not_evaluated and not kind.gaps:
                yield kind, Gap(None, f"{kind.not_evaluated} object(s) could not be evaluated")
        for problem in self.problems:
            yield None, Gap(None, problem)
        if self.interrupted:
            yield None, Gap(None, "interrupted: the audit was stopped before it finished")

    def totals(self) -> dict[str, int]:
        out = {_TOTAL_NAMES.get(name, name): sum(getattr(k, name) for k in self.kinds) for name in _TOTALS}
        out["kindsListed"] = sum(1 for k in self.kinds if k.listed)
        out["kindsNotInstalled"] = sum(1 for k in self.kinds if not k.installed)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "interrupted": self.interrupted,
            "scope": dict(self.scope),
            "totals": self.totals(),
            "notEvaluated": [
                {"kind": k.kind if k else None, "resource": k.resource if k else None, **g.to_json()}
                for k, g in self.gaps()
            ],
            "kinds": [k.to_json() for k in self.kinds],
            "requests": self.requests.to_json(),
        }

"""Identical findings told once (RULES.md §4): across the containers of one pod template, and across
identical pod templates.

The API server bounds an object's size, not its shape: a template with 10,000 identical containers, or a
JobSet with 64 identical replicated jobs, would otherwise give a copy of each finding per container or per
job, and every report and the webhook's answer would grow with them.

- Findings that differ only in their container (and in that container's index in the path) become one
  finding: `container` is the first container's name, `path` the first container's path, and
  `containers` lists every container it covers, in template order.
- Findings of identical templates (kubegap.facts.twins) that differ only in their role (and in the
  template's place in the path) become one finding: `role` and `path` are the first template's, and
  `roles` lists every template it covers. The engine tells most of them once as it judges
  (kubegap.judge); this merges the rest by the same rule (an exempted template, a message composed for
  each template that comes out the same).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from kubegap.facts import Unit
from kubegap.fieldpath import render
from kubegap.findings import Finding
from kubegap.records import changed

_INDEX: Final = re.compile(r"(containers|initContainers)\[\d+\]")


def _said(finding: Finding, role: str | None, path: str | None, *more: object) -> tuple[object, ...]:
    """What a finding says, with the role and path it is compared at, and `more` of its fields."""
    f = finding
    return (f.policy, f.rule, f.severity, f.result, f.message, f.remediation, f.unresolved, role, path, *more)


def _same(finding: Finding) -> tuple[object, ...]:
    """What must be equal for two container findings to be one: everything but the container."""
    path = _INDEX.sub(r"\1[*]", finding.path) if finding.path else None
    return _said(finding, finding.role, path, finding.roles)


def collapse(results: Sequence[Finding], templates: Sequence[Unit] = ()) -> tuple[Finding, ...]:
    """`results` with identical findings told once: those of the containers of one template, then those of
    identical `templates` (the object's template units); order and every other finding are kept."""
    return _templates(_containers(results), templates)


def _containers(results: Sequence[Finding]) -> tuple[Finding, ...]:
    # Only findings of the same rule and role can be one; most objects have none such, and the test
    # is far cheaper than normalising every path.
    seen: dict[tuple[str, str, str | None], int] = {}
    for finding in results:
        if finding.container is not None:
            key3 = (finding.policy, finding.rule, finding.role)
            seen[key3] = seen.get(key3, 0) + 1
    if all(n == 1 for n in seen.values()):
        return tuple(results)
    groups: dict[tuple[object, ...], list[Finding]] = {}
    order: list[Finding | tuple[object, ...]] = []
    for finding in results:
        if finding.container is None or seen[(finding.policy, finding.rule, finding.role)] == 1:
            order.append(finding)
            continue
        key = _same(finding)
        group = groups.get(key)
        if group is None:
            groups[key] = [finding]
            order.append(key)
        else:
            group.append(finding)
    if len(order) == len(results):
        return tuple(results)  # nothing to collapse: the common case costs one pass
    return tuple(item if isinstance(item, Finding) else _one(groups[item]) for item in order)


def _one(group: list[Finding]) -> Finding:
    first = group[0]
    if len(group) == 1:
        return first
    return changed(first, containers=tuple(f.container or "" for f in group))


# a twin template's role -> (its path, the first template's role, the first's path) of each template so
# named (names can repeat in a manifest the API server would refuse)
_Moves = dict[str, list[tuple[str, str, str]]]


def _templates(results: tuple[Finding, ...], templates: Sequence[Unit]) -> tuple[Finding, ...]:
    moves: _Moves = {}
    for unit in templates:
        original = unit.original
        if original is not None and unit.role and original.role and unit.path and original.path:
            moves.setdefault(unit.role, []).append((render(unit.path), original.role, render(original.path)))
    if not moves or not any(f.role in moves for f in results):
        return results
    firsts = {first for each in moves.values() for _, first, _ in each}
    index: dict[tuple[object, ...], int] = {}
    for at, finding in enumerate(results):
        if finding.role in firsts:
            index.setdefault(_told(finding, finding.role or "", finding.path), at)
    out: list[Finding | None] = list(results)
    more: dict[int, list[str]] = {}
    for at, finding in enumerate(results):
        found = moves.get(finding.role or "")
        if found is None:
            continue
        path = finding.path or ""
        own, first, first_path = next((m for m in found if _under(path, m[0])), found[0])
        moved = first_path + path[len(own) :] if _under(path, own) else finding.path
        same = index.get(_told(finding, first, moved))
        if same is not None and same != at and out[same] is not None:  # a name may repeat: never itself
            more.setdefault(same, []).extend(finding.roles or (finding.role or "",))
            out[at] = None
    for at, roles in more.items():
        kept = out[at]
        assert kept is not None
        out[at] = changed(kept, roles=(*(kept.roles or (kept.role or "",)), *roles))
    return tuple(f for f in out if f is not None)


def _under(path: str, template: str) -> bool:
    return path.startswith(template) and path[len(template) : len(template) + 1] in ("", ".", "[")


def _told(finding: Finding, role: str, path: str | None) -> tuple[object, ...]:
    """What must be equal for findings of identical templates to be one: everything but the role and the
    template's place in the path."""
    return _said(finding, role, path, finding.container, finding.containers, finding.scope, finding.impact)

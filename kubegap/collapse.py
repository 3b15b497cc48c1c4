"""Identical findings across the containers of one pod template, told once (RULES.md §4).

The API server bounds an object's size, not its shape: a template with 10,000 identical containers would
otherwise give 10,000 copies of each container-level finding, and every report and the webhook's answer
would grow with them. Findings that differ only in their container (and in that container's index in the
path) become one finding: `container` is the first container's name, `path` the first container's path,
and `containers` lists every container it covers, in template order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from kubegap.findings import Finding

_INDEX = re.compile(r"(containers|initContainers)\[\d+\]")


def _same(finding: Finding) -> tuple[object, ...]:
    """What must be equal for two container findings to be one: everything but the container."""
    path = _INDEX.sub(r"\1[*]", finding.path) if finding.path else None
    return (
        finding.policy,
        finding.rule,
        finding.severity,
        finding.result,
        finding.message,
        finding.remediation,
        finding.role,
        path,
        finding.unresolved,
    )


def collapse(results: Sequence[Finding]) -> tuple[Finding, ...]:
    """`results` with each group of identical container findings of one template replaced by the first of
    them listing every container; order and every other finding are kept."""
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
    return replace(first, containers=tuple(f.container or "" for f in group))

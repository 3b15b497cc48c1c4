"""docs/facts.md, written from the facts contract: `python -m kubegap.facts.reference > docs/facts.md`
(tests/test_contract.py fails while the checked-in file differs)."""

from __future__ import annotations

from collections.abc import Iterator

from kubegap.facts.contract import (
    CLAIM,
    CLAIM_OBJECT,
    CLUSTER_NODE,
    CONTAINER,
    NODE,
    NODE_OBJECT,
    POOL,
    POOL_OBJECT,
    SCOPES,
    SETTINGS,
    TEMPLATE,
    WORKLOAD,
)
from kubegap.facts.declare import ListOf, Record, Type

_INTRO = """\
# Facts reference

<!-- Generated from kubegap/facts/contract.py: python -m kubegap.facts.reference > docs/facts.md -->

Policies judge facts, not raw manifests: kubegap reads each object once and hands CEL plain maps and lists
(RULES.md §1). This page lists every fact a policy expression can read. A policy that reads a name not
listed here is refused when it loads, with the nearest listed name.

Types are CEL's: `int` and `double` do not mix (compare a `double` with `1.0`, not `1`). A fact marked
optional is absent when there is nothing to say: test it with `has()` before reading it. Keys of a map
(`env`, `annotations`, `envPaths`) come from the object, so any key may be read; test it with `in`.
Besides the variables below, every expression sees `params` and `paramsText` (its policy's parameters,
as values and as people write them) and `globbed` (for each `globs` parameter, the names of the fields
marked "globbed" below that it matches: test one with `n in globbed.NAME`), validations see `variables`
(the policy's variables of their scope), and `object` is the raw Kubernetes object, unchecked.

| Scope | Variables |
|---|---|
"""

_SECTIONS: tuple[tuple[str, str, Record, str], ...] = (
    ("facts", "`facts`: the workload", WORKLOAD, "Every scope of a workload sees these, once per object."),
    ("template", "`template`: each pod template", TEMPLATE, "Template and container scopes."),
    ("container", "`container`: each container", CONTAINER, "Container scope; init containers are not read."),
    ("node", "`node`: each Node", NODE, "Node scope."),
    ("facts", "`facts` of a Node", NODE_OBJECT, "Node scope: a Node has no workload facts."),
    ("node", "`node`: each GPU node with its pods", CLUSTER_NODE, "Cluster-node scope (audit only)."),
    ("pool", "`pool`: each node pool", POOL, "Pool scope (audit only)."),
    ("facts", "`facts` of a node pool", POOL_OBJECT, "Pool scope: a pool is no API object."),
    ("claim", "`claim`: each DRA claim", CLAIM, "Claim scope: ResourceClaim and ResourceClaimTemplate."),
    ("facts", "`facts` of a DRA claim", CLAIM_OBJECT, "Claim scope: a claim has no workload facts."),
)


def _rows(prefix: str, kind: Type) -> Iterator[tuple[str, str, str, str, str]]:
    """(path, type, unit, meaning, notes) of every field under `kind`, nested ones after their parent."""
    if isinstance(kind, ListOf):
        yield from _rows(f"{prefix}[]", kind.item)
        return
    if not isinstance(kind, Record):
        return
    for field in kind.fields:
        path = f"{prefix}.{field.name}"
        shown = field.type.describe() if not isinstance(field.type, Record) else "map"
        notes = (" (optional)" if field.optional else "") + (" (globbed)" if field.globbed else "")
        yield path, shown, field.unit, field.meaning, notes
        yield from _rows(path, field.type)


def _table(variable: str, kind: Record) -> list[str]:
    lines = ["| Fact | Type | Unit | Meaning |", "|---|---|---|---|"]
    for path, shown, unit, meaning, notes in _rows(variable, kind):
        lines.append(f"| `{path}` | {shown} | {unit} | {meaning}{notes} |")
    return lines


def markdown() -> str:
    lines = [_INTRO.rstrip("\n")]
    lines += [
        f"| {scope} | {', '.join(f'`{v}`' for v in variables)} |" for scope, variables in SCOPES.items()
    ]
    for variable, title, kind, note in _SECTIONS:
        lines += ["", f"## {title}", "", note, "", *_table(variable, kind)]
    lines += [
        "",
        "## Knob settings",
        "",
        "The `setting:` of a knob catalogue entry (policies/knobs.yaml, `--knobs FILE`) is one of these.",
        "",
        "| Setting | Meaning | Fact |",
        "|---|---|---|",
    ]
    lines += [f"| `{s.name}` | {s.meaning} | {f'`{s.fact}`' if s.fact else ''} |" for s in SETTINGS]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")

"""Facts: everything the policies judge, resolved once per object before any CEL runs (RULES.md §1).

The CEL side sees plain maps and lists: counts are ints, durations are float seconds, and a value that is
absent is a missing key (tested with `has()`), never null — the common ground of both CEL runtimes.

One module per fact family: `workload` (the entry point, `gather`), `template`, `container`, `checkpoint`,
`lifecycle` (restart and deadline per kind) and `node`; `model` holds the shapes. The readers they use sit
beside them: `argv` (command lines), `env` (the resolved environment), `mpi` (what a launcher hands its
workers), `readings` (knob values) over the `knobs` catalogue, and `purpose`.
"""

from __future__ import annotations

from kubegap.facts.model import InvalidDeclaration, ObjectFacts, Unit, UnreadableCount
from kubegap.facts.node import gather_node
from kubegap.facts.workload import gather

__all__ = ["InvalidDeclaration", "ObjectFacts", "Unit", "UnreadableCount", "gather", "gather_node"]

"""Facts: everything the policies judge, resolved once per object before any CEL runs (RULES.md §1).

The CEL side sees plain maps and lists: counts are ints, durations are float seconds, and a value that is
absent is a missing key (tested with `has()`), never null — the common ground of both CEL runtimes.

One module per fact family: `workload` (the entry point, `gather`), `template`, `container`, `checkpoint`,
`lifecycle` (the restart and deadline readers each row of the kinds table, `kubegap.kinds`, names) and `node`,
and the RULES.md v3 families `transport` (NCCL's InfiniBand timeouts), `recorder` (the NCCL flight recorder,
placed on a volume by `mounts`), `torchrun` (in-place restarts and rendezvous), `disruption` (restart budgets
and DisruptionTarget), `tolerations`, `persistence` (where checkpoints land and how a restart resumes),
`rails` (HCAs per GPU), `nics` (the NICs a pod requests) and `claim` (DRA claims); `health` (Node health
marks) and `cluster` (the audit's cross-object units). `model` holds the shapes. The readers they use sit
beside them: `argv` (command lines, split by `shell`), `env` (the resolved environment), `mpi` (what a
launcher hands its workers), `readings` (knob values) over the `knobs` catalogue, and `purpose`. What they
produce is declared once, in `contract` (with the records of `families` and `objects` and the knob `settings`,
in the vocabulary of `declare`): every fact per scope and every knob setting. `reads` checks each policy
expression against it when policies load, and `reference` writes docs/facts.md from it (`python -m
kubegap.facts.reference > docs/facts.md`).
"""

from __future__ import annotations

from kubegap.facts.model import InvalidDeclaration, ObjectFacts, Unit, UnreadableCount
from kubegap.facts.node import gather_node
from kubegap.facts.workload import gather

__all__ = ["InvalidDeclaration", "ObjectFacts", "Unit", "UnreadableCount", "gather", "gather_node"]

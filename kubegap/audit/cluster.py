"""The audit's cluster validations: policies of scope `pool` and `cluster-node`, judged once the Node and
Pod lists are read (RULES.md §2 v3). The runner feeds every listed Pod and every judged Node to `observe`
and `judged`, and calls `finish` at the end.

They are judged only over complete, unfiltered lists: a Pod missed (a namespace excluded, a selector, a
failed list) would make a busy node look idle and a monitored node look bare, so a limited audit says
"out of scope" and a failed list "not evaluated", never a pass.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubegap.evaluate import Evaluation
from kubegap.facts.cluster import POOL_API_VERSION, POOL_KIND, ClusterView, node_unit_facts, pools
from kubegap.findings import ObjectRef

if TYPE_CHECKING:
    from kubegap.audit.runner import Auditor

log = logging.getLogger(__name__)

CLUSTER_SCOPES = ("pool", "cluster-node")
POOL_LABEL_PARAM = "poolLabel"  # a pool-scope policy names the label that groups nodes into pools here


@dataclass(slots=True)
class ClusterSection:
    """What the report's cluster section shows besides the findings."""

    status: str = "evaluated"  # evaluated | out-of-scope | incomplete | no-policies
    reason: str = ""
    pools: list[dict[str, Any]] = field(default_factory=list)  # facts of each judged pool
    gpu_nodes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "gpuNodes": self.gpu_nodes, "pools": self.pools}


class ClusterChecks:
    def __init__(self, engine: Any, out_of_scope: str) -> None:
        self.engine = engine
        compiled = getattr(engine, "compiled", ())
        self.policies = [c for c in compiled if any(v.scope in CLUSTER_SCOPES for v in c.policy.validations)]
        self.active = bool(self.policies) and hasattr(engine, "evaluate_facts")
        self.section = ClusterSection()
        if not self.active:
            self.section.status, self.section.reason = "no-policies", "no cluster policy is selected"
        elif out_of_scope:
            self.section.status, self.section.reason = "out-of-scope", out_of_scope
        self.view = ClusterView(engine.catalogue) if self.active else None

    def observe(self, kind: str, api_version: str, obj: Mapping[str, Any]) -> None:
        """Every listed object, before any filter: an owned or excluded Pod still occupies its node."""
        if self.view is not None and kind == "Pod" and api_version == "v1":
            self.view.add_pod(obj)

    def judged(self, obj: Mapping[str, Any], ref: ObjectRef, flagged: bool) -> None:
        """An evaluated object; `flagged`: some result failed or erred."""
        if self.view is None or ref.kind != "Node" or ref.api_version != "v1":
            return
        self.view.add_node(obj, flagged)

    def finish(self, auditor: Auditor) -> None:
        """Judge the pools and GPU nodes, and record the results as the runner records an object's."""
        section = self.section
        auditor.result.cluster = section
        if self.view is None or section.status != "evaluated":
            return
        if problem := _incomplete(auditor):
            section.status, section.reason = "incomplete", problem
            auditor.coverage.problems.append(f"cluster validations not evaluated: {problem}")
            return
        for evaluation in self.judge(time.monotonic() + auditor.evaluation_timeout):
            auditor.tally_evaluation(evaluation)

    def judge(self, deadline: float | None) -> Iterator[Evaluation]:
        """Each GPU node's and each pool's evaluation over what was observed; the section gains the pools.
        Whether the lists were complete is the caller's to say (`finish`; `kubegap test` reads a file)."""
        if self.view is None:
            return
        nodes = self.view.gpu_nodes()
        self.section.gpu_nodes = len(nodes)
        for node in nodes:
            obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.name}}
            yield self.engine.evaluate_facts(obj, node_unit_facts(node), deadline)
        for label in sorted({str(c.params.get(POOL_LABEL_PARAM, "")) for c in self.policies} - {""}):
            for name, facts in pools(self.view, label):
                self.section.pools.append(dict(facts.units["pool"][0].bindings["pool"]))
                obj = {"apiVersion": POOL_API_VERSION, "kind": POOL_KIND, "metadata": {"name": name}}
                yield self.engine.evaluate_facts(obj, facts, deadline)


def out_of_scope(
    namespaces: tuple[str, ...], excluded: tuple[str, ...], selector: str, kinds: set[str]
) -> str:
    """Why an audit of this scope cannot see every Pod on every Node ("" when it can)."""
    if namespaces:
        return "the audit is limited to namespaces (Nodes are not read, Pods of others not seen)"
    if excluded:
        return "namespaces are excluded, so pods running there are not seen"
    if selector:
        return "a label selector limits the Nodes and Pods read"
    if not {"Node", "Pod"} <= kinds:
        return "Nodes and Pods are not both audited"
    return ""


def _incomplete(auditor: Auditor) -> str:
    for entry in auditor.coverage.kinds:
        if entry.api_version == "v1" and entry.kind in ("Node", "Pod") and entry.status != "complete":
            return f"the {entry.kind} list is {entry.status}"
    if auditor.coverage.interrupted:
        return "the audit was interrupted"
    return ""

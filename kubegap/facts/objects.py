"""Declared facts of the objects that are not workloads: Nodes, DRA claims, and the audit's cluster-level
units (a Node among all pods, a node pool); part of the facts contract (`kubegap.facts.contract`)."""

from __future__ import annotations

from kubegap.facts.declare import BOOL, DOUBLE, INT, STRING, ListOf, extend, fact, record

_RESOURCE = record(
    "an extended resource",
    fact("name", STRING, "the resource name, e.g. nvidia.com/gpu"),
    fact("capacity", INT, "status.capacity (0 when absent or unreadable)", "devices"),
    fact("allocatable", INT, "status.allocatable (0 when absent or unreadable)", "devices"),
)

NODE = record(
    "node facts",
    fact("schedulable", BOOL, "not cordoned and no NoSchedule or NoExecute taint"),
    fact("gpuCapacity", INT, "GPUs in status.capacity", "GPUs"),
    fact("gpuResources", ListOf(_RESOURCE), "the GPU resources among `resources`"),
    fact("resources", ListOf(_RESOURCE), "extended resources (names with a `/`), sorted by name"),
    fact(
        "conditions",
        ListOf(
            record(
                "a condition",
                fact("type", STRING, "condition type"),
                fact("status", STRING, "True, False or Unknown"),
            )
        ),
        "status.conditions",
    ),
    fact(
        "marks",
        ListOf(STRING),
        "every label, then every annotation, as key=value (line breaks as spaces)",
        globbed=True,
    ),
    fact(
        "deepChecks",
        ListOf(
            record(
                "a timestamped deep-check result",
                fact("label", STRING, "the label that holds it"),
                fact("result", STRING, "the result word: PASS, ERR, …"),
                fact("ran", STRING, "when the check ran, YYYY-MM-DD HH:MM UTC"),
                fact("ageSeconds", DOUBLE, "its age when the facts were gathered", "s"),
            )
        ),
        "labels whose value is a timed result (IBM Autopilot's RESULT_YYYY-MM-DD_HH.MM.SSUTC[_tests])",
    ),
)
NODE_OBJECT = record(
    "facts of a Node",
    fact("kind", STRING, "Node"),
    fact("group", STRING, "empty: the core group"),
)

# RULES.md v3: gpu-nic-alignment (kubegap/facts/claim.py)
CLAIM = record(
    "DRA claim facts",
    fact("kind", STRING, "ResourceClaim or ResourceClaimTemplate"),
    fact("path", STRING, "the field path of the claim's devices"),
    fact(
        "requests",
        ListOf(
            record(
                "a device request",
                fact("name", STRING, "the request's name"),
                fact("classesText", STRING, "the device classes it may be served from, one per line"),
                fact(
                    "alignedClassesText",
                    STRING,
                    "the classes of the requests a pcieRoot constraint holds it with, one per line",
                ),
                fact("path", STRING, "the request's field path"),
            )
        ),
        "spec.devices.requests, in order",
    ),
)
CLAIM_OBJECT = record(
    "facts of a DRA claim",
    fact("kind", STRING, "ResourceClaim or ResourceClaimTemplate"),
    fact("group", STRING, "resource.k8s.io"),
)

# Cluster scopes (facts/cluster.py): judged by the audit over its Node and Pod lists (RULES.md §2 v3).
CLUSTER_NODE = extend(
    NODE,
    "a GPU node with the pods bound to it",
    fact("name", STRING, "the node's name"),
    fact(
        "images",
        ListOf(STRING),
        "container images of the pods bound to it that have not finished, sorted",
        globbed=True,
    ),
)
POOL = record(
    "a node pool: the GPU nodes sharing a value of the pool label",
    fact("name", STRING, "`<label>=<value>`, or `<label> unset`"),
    fact("nodes", INT, "GPU nodes in the pool", "nodes"),
    fact("spares", INT, "schedulable nodes with no node-policy failure and no unfinished GPU pod", "nodes"),
    fact("spareNodes", ListOf(STRING), "the first 10 spares' names, sorted"),
    fact("busy", INT, "nodes running an unfinished GPU pod", "nodes"),
    fact("unhealthy", INT, "nodes unschedulable or failing a node policy", "nodes"),
    fact("largestGang", INT, "the most nodes of the pool one gang's GPU pods are bound to", "nodes"),
    fact("largestGangName", STRING, "that gang, `namespace/name` (empty when none)"),
)
POOL_OBJECT = record(
    "facts of a node pool",
    fact("kind", STRING, "NodePool"),
    fact("group", STRING, "kubegap.dev"),
)

from __future__ import annotations

from typing import Any

import pytest

from kubegap.facts import knobs
from kubegap.facts.node import node_facts

CATALOGUE = knobs.load()


def node(
    spec: Any = None, capacity: Any = None, allocatable: Any = None, conditions: Any = None
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if capacity is not None:
        status["capacity"] = capacity
    if allocatable is not None:
        status["allocatable"] = allocatable
    if conditions is not None:
        status["conditions"] = conditions
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "spec": spec or {},
        "status": status,
    }


@pytest.mark.parametrize(
    ("spec", "schedulable"),
    [
        ({}, True),
        ({"unschedulable": False}, True),
        ({"unschedulable": True}, False),
        ({"unschedulable": "true"}, True),  # only the boolean cordons
        ({"taints": [{"key": "gpu", "effect": "NoSchedule"}]}, False),
        ({"taints": [{"key": "gpu", "effect": "NoExecute"}]}, False),
        ({"taints": [{"key": "gpu", "effect": "PreferNoSchedule"}]}, True),
        (
            {"taints": [{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "NoExecute"}]},
            False,
        ),
        ({"taints": ["NoSchedule", None]}, True),
        ({"taints": "NoSchedule"}, True),
    ],
)
def test_schedulable(spec: dict[str, Any], schedulable: bool) -> None:
    assert node_facts(node(spec), CATALOGUE)["schedulable"] is schedulable


def test_resources_compare_capacity_with_allocatable() -> None:
    facts = node_facts(
        node(
            capacity={
                "cpu": "96",
                "memory": "2Ti",
                "nvidia.com/gpu": "8",
                "nvidia.com/mig-1g.10gb": 7,
                "vpc.amazonaws.com/efa": "32",
            },
            allocatable={"cpu": "95", "nvidia.com/gpu": "7", "vpc.amazonaws.com/efa": "32", "rdma/ib": "4"},
        ),
        CATALOGUE,
    )
    assert facts["resources"] == [
        {"name": "nvidia.com/gpu", "capacity": 8, "allocatable": 7},
        {"name": "nvidia.com/mig-1g.10gb", "capacity": 7, "allocatable": 0},
        {"name": "rdma/ib", "capacity": 0, "allocatable": 4},
        {"name": "vpc.amazonaws.com/efa", "capacity": 32, "allocatable": 32},
    ]
    assert [r["name"] for r in facts["gpuResources"]] == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]
    assert facts["gpuCapacity"] == 15


@pytest.mark.parametrize(
    ("capacity", "gpus"),
    [
        ({}, 0),
        ({"nvidia.com/gpu": 8}, 8),
        ({"amd.com/gpu": "8"}, 8),
        ({"habana.ai/gaudi": "8"}, 0),  # an accelerator, not a GPU
        ({"nvidia.com/gpu": "8k"}, 0),
        ({"nvidia.com/gpu": True}, 0),
        ({"nvidia.com/gpu": None}, 0),
    ],
)
def test_gpu_capacity(capacity: dict[str, Any], gpus: int) -> None:
    assert node_facts(node(capacity=capacity), CATALOGUE)["gpuCapacity"] == gpus


def test_conditions_are_type_and_status_text() -> None:
    facts = node_facts(
        node(
            conditions=[
                {"type": "Ready", "status": "True", "reason": "KubeletReady"},
                {"type": "XIDErrors", "status": True},
                "junk",
                {"status": "False"},
            ]
        ),
        CATALOGUE,
    )
    assert facts["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "XIDErrors", "status": "True"},
        {"type": "", "status": "False"},
    ]


@pytest.mark.parametrize("junk", [None, [], "x", 3])
def test_malformed_nodes_never_raise(junk: Any) -> None:
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": junk, "status": junk}
    facts = node_facts(obj, CATALOGUE)
    assert facts["schedulable"] is True
    assert facts["gpuCapacity"] == 0
    assert facts["resources"] == []

"""`kubegap audit --demo`: a whole audit with no cluster, through the real client, over the examples."""

from __future__ import annotations

import subprocess
import sys

from kubegap.audit import demo
from kubegap.testserver.server import ApiServer


def test_demo_serves_the_examples_and_a_node_pool_with_one_degraded_node() -> None:
    server = ApiServer()  # not started: only its store is read
    served = demo.load(server)
    node = server.store.resource_for("v1", "Node")
    assert node is not None
    nodes = {n["metadata"]["name"]: n for n in server.store.objects(node)}
    assert {"demo-gpu-0", "demo-gpu-1", "demo-gpu-2"} <= set(nodes)
    degraded = nodes["demo-gpu-2"]["status"]
    assert degraded["allocatable"]["nvidia.com/gpu"] < degraded["capacity"]["nvidia.com/gpu"]
    examples = len(list(demo.example_objects()))
    assert served >= len(demo.NODES) + examples * 0.9  # nearly every example: a few kinds are not served


def test_audit_demo_runs_end_to_end_and_reports_the_degraded_node() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kubegap", "audit", "--demo"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr  # the examples are meant to have findings
    out = done.stdout
    assert out.startswith("kubegap audit of http://127.0.0.1:")
    assert "gpu-node-health/gpus-healthy  Node/demo-gpu-2" in out
    assert "Node/demo-gpu-0" not in out and "Node/demo-gpu-1" not in out  # healthy nodes pass
    cluster = out[out.index("Cluster validations") : out.index("Coverage:")]
    assert "link-monitor/monitor-running  Node/demo-gpu-2" in cluster  # its monitor pod is missing
    assert "hot-spares/spares-available  NodePool/node.kubernetes.io/instance-type=demo.8gpu" in cluster
    assert "0 idle healthy spare node(s) for a largest gang of 2 nodes (demo-training/demo-llm)" in cluster
    assert "gpu-node-health/gpus-healthy  Node/demo-gpu-2" in cluster
    findings = out[out.index("Findings") : out.index("Cluster validations")]
    assert "Node/" not in findings, "node and pool findings are in the cluster section only"
    assert "Coverage: complete" in out
    assert "nccl-timeout/timeout-bounded" in out
    assert "serving" in done.stderr and "3 GPU nodes, one degraded" in done.stderr

"""Small inputs several test modules share."""

from __future__ import annotations

import json
import textwrap
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from kubegap import testing

WORKLOAD_FILES = sorted((Path(__file__).parent.parent / "data" / "workloads").glob("*.yaml"))


def example_objects(*more: Path) -> list[dict[str, Any]]:
    """Every object of every bundled policy example, then of `more` files."""
    paths = [e.path for e in testing.discover(Path(str(files("kubegap.policies"))))]
    return [d for p in (*paths, *more) for d in yaml.safe_load_all(p.read_text()) if isinstance(d, dict)]


# The finding record of RULES.md §4, plus `unresolved` (§3: an unseen value is listed, never silently a pass)
# `containers` (§4: every container an identical finding covers), `scope` (§4: workload, node or cluster)
# and `roles` (§4: every identical template an identical finding covers).
RECORD_FIELDS = frozenset(
    {
        "policy",
        "rule",
        "severity",
        "result",
        "message",
        "remediation",
        "object",
        "role",
        "container",
        "path",
        "file",
        "document",
        "line",
        "column",
        "unresolved",
        "impact",
        "containers",
        "scope",
        "roles",
    }
)

# A two-pod PyTorchJob with findings (no launcher kubegap knows, so no timeout; no NIC, no probe, no
# checkpoints).
FAILING_PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pretrain, namespace: llm}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: trainer
              image: registry.example/llm:1
              command: [python, train.py]
              resources:
                limits: {nvidia.com/gpu: 8}
"""


# A user policy comparing every pair of containers: cheap on a few, quadratic on thousands (issue: one such
# policy could stall the webhook until gunicorn killed the worker).
PAIRWISE = (
    "object.spec.containers.all(a, object.spec.containers.all(b, a.name == b.name || a.image != b.image))"
)


def user_policy(folder: Path, expression: str, pid: str = "unique-images") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = f"""\
    apiVersion: kubegap.dev/v1alpha1
    kind: Policy
    metadata: {{name: {pid}}}
    spec:
      title: Every container runs its own image
      severity: high
      scope: workload
      appliesTo: "true"
      remediation: Give each container its own image.
      validations:
        - name: pairwise
          expression: {json.dumps(expression)}
          message: two containers share an image
    """
    (folder / f"{pid}.yaml").write_text(textwrap.dedent(text), "utf-8")
    return folder


def wide_pod(containers: int, shared_image: bool = False) -> dict[str, Any]:
    listed = [
        {
            "name": f"c{i}",
            "image": "same" if shared_image else f"img-{i}",
            "resources": {"limits": {"nvidia.com/gpu": 1}},
        }
        for i in range(containers)
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wide"}, "spec": {"containers": listed}}

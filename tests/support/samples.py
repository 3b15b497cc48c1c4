"""Small inputs several test modules share."""

from __future__ import annotations

# The finding record of RULES.md §4, plus `unresolved` (§3: an unseen value is listed, never silently a pass)
# and `containers` (§4: every container an identical finding covers).
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
        "containers",
    }
)

# A two-pod PyTorchJob with high findings (no collective timeout, no NIC, no probe, no checkpoints).
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
              command: [torchrun, train.py]
              resources:
                limits: {nvidia.com/gpu: 8}
"""

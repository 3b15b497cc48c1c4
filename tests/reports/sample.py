"""A small repository of manifests for the CI-format tests: failures, an exemption, a blank exemption, an
unreadable document and a ConfigMap, so that every kind of result reaches the formats."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kubegap.evaluate import Engine
from kubegap.lint import LintReport

TRAIN = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: llm-settings, namespace: llm}
data: {DEEPSPEED_TIMEOUT: "20"}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llm-pretrain
  namespace: llm
  annotations:
    ignore.kubegap.dev/health-probes: "probes are added by the platform's mutating webhook"
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: trainer
              image: registry.example/llm:1
              command: [torchrun, train.py, --save_steps, "500"]
              env:
                - {name: NCCL_TIMEOUT, value: "1800"}
                - name: DEEPSPEED_TIMEOUT
                  valueFrom: {configMapKeyRef: {name: llm-settings, key: DEEPSPEED_TIMEOUT}}
              resources:
                limits: {nvidia.com/gpu: 8}
"""

BLANK_EXEMPTION = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
  namespace: vision
  annotations:
    ignore.kubegap.dev/restart-budget: ""
spec:
  backoffLimit: 0
  template:
    spec:
      containers:
        - name: trainer
          image: registry.example/vit:1
          resources:
            limits: {nvidia.com/gpu: 1}
"""

BROKEN = """\
apiVersion: batch/v1
kind: Job
metadata: {name: cpu-only}
spec:
  template:
    spec:
      containers: [{name: c, image: busybox}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: [unclosed
"""


@dataclass(frozen=True, slots=True)
class Sample:
    root: Path
    report: LintReport
    engine: Engine


def write_repo(root: Path) -> list[str]:
    """The sample manifests under `root`; returns their paths relative to it."""
    files = {
        "deploy/train.yaml": TRAIN,
        "deploy/vision/finetune.yml": BLANK_EXEMPTION,
        "deploy/broken.yaml": BROKEN,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, "utf-8")
    return sorted(files)

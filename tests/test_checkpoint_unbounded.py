"""A checkpoint schedule that is set but has no length in time (HF Trainer `--save_strategy epoch`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from kubegap.config import Settings
from kubegap.errors import PolicyError
from kubegap.evaluate import build_engine
from kubegap.facts import knobs

EXAMPLE = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "ft", "namespace": "ml"},
    "spec": {
        "parallelism": 2,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "train",
                        "image": "hf",
                        "command": ["torchrun", "train.py"],
                        "args": ["--save_strategy", "STRATEGY", "--save_steps", "200"],
                        "resources": {"limits": {"nvidia.com/gpu": 8}},
                    }
                ]
            }
        },
    },
}


def _checkpoint_findings(strategy: str) -> dict[str, Any]:
    obj: Any = copy.deepcopy(EXAMPLE)
    obj["spec"]["template"]["spec"]["containers"][0]["args"][1] = strategy
    evaluation = build_engine(Settings(select=("checkpoint-interval",))).evaluate(obj)
    return {f.rule: f for f in evaluation.findings}


def test_epoch_strategy_says_the_interval_is_set_but_unbounded() -> None:
    found = _checkpoint_findings("epoch")
    finding = found["interval-declared"]
    assert finding.message == (
        "the checkpoint interval is set (--save_strategy epoch (HF Trainer)) but cannot be bounded: "
        "the length of an epoch in time is unknown"
    )
    assert finding.path == "spec.template.spec.containers[0].args[0]"  # the flag
    assert "checkpointing-enabled" not in found


def test_other_strategies_keep_their_readings() -> None:
    assert _checkpoint_findings("steps")["interval-declared"].message.startswith(
        "checkpoints every 200 steps"
    )
    assert set(_checkpoint_findings("no")) == {"checkpointing-enabled"}


def test_an_unbounded_knob_needs_its_values(tmp_path: Path) -> None:
    path = tmp_path / "knobs.yaml"
    path.write_text(
        "apiVersion: kubegap.dev/v1alpha1\nkind: KnobCatalogue\n"
        "knobs:\n  - {setting: checkpointUnbounded, flags: [--ckpt-every]}\n"
    )
    with pytest.raises(PolicyError):
        knobs.load([str(path)])

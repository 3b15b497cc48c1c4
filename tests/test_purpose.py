"""What a workload is for (RULES.md v2 "purpose"): read from commands, or declared."""

from __future__ import annotations

from typing import Any

import pytest

from kubegap.facts import argv, purpose


def _container(command: list[str], args: list[str] | None = None) -> Any:
    return argv.tokenize({"command": command, "args": args or []})


@pytest.mark.parametrize(
    ("command", "recognised", "expected"),
    [
        (["torchrun", "train.py"], True, "training"),
        (["python", "train.py"], False, "training"),  # an unknown program counts as training
        (["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G"], False, "benchmark"),
        (["bash", "-c", "ib_write_bw -d mlx5_0 --report_gbits"], False, "benchmark"),
        (["osu_allreduce"], False, "benchmark"),
        (["dcgmi", "diag", "-r", "3"], False, "diagnostic"),
        (["./gpu_burn", "600"], False, "diagnostic"),
        (["sleep", "infinity"], False, "interactive"),
        (["/bin/bash", "-c", "exec sleep infinity"], False, "interactive"),
        (["tail", "-f", "/dev/null"], False, "interactive"),
        (["bash", "-c", "python train.py; sleep infinity"], False, "training"),  # keeps the pod after
        (["/usr/sbin/sshd", "-De"], False, None),  # an MPI worker: its launcher says what runs
        (["dcgmi", "discovery", "-l"], False, "training"),  # not a diagnostic run: nothing known
    ],
)
def test_container_purpose(command: list[str], recognised: bool, expected: str | None) -> None:
    assert purpose.of_container(_container(command), recognised) == expected


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        ([], "training"),
        ([None], "training"),
        (["benchmark", None], "benchmark"),
        (["interactive", "benchmark"], "benchmark"),
        (["benchmark", "training"], "training"),
    ],
)
def test_workload_purpose(found: list[str | None], expected: str) -> None:
    assert purpose.of_workload(found) == expected


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"labels": {"kubegap.dev/workload": "benchmark"}}, "benchmark"),
        ({"annotations": {"kubegap.dev/workload": "interactive"}}, "interactive"),
        (
            {
                "labels": {"kubegap.dev/workload": "training"},
                "annotations": {"kubegap.dev/workload": "benchmark"},
            },
            "training",
        ),
        ({"labels": {"kubegap.dev/workload": "batch"}}, None),  # unknown values are not declarations
        ({"labels": None}, None),
    ],
)
def test_declared_purpose(metadata: dict[str, Any], expected: str | None) -> None:
    assert purpose.declared(metadata) == expected

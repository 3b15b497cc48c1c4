"""torchrun restart and rendezvous facts (kubegap/facts/torchrun.py; RULES.md v3)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_facts import gather, gpu, job


def indexed(command: list[str], pods: int = 2, **extra: Any) -> dict[str, Any]:
    return job(gpu(command=command, **extra), parallelism=pods)


def torchrun_facts(obj: dict[str, Any]) -> dict[str, Any] | None:
    found: dict[str, Any] | None = gather(obj).facts.get("torchrun")
    return found


C10D = ["--rdzv-backend=c10d", "--rdzv-endpoint=h:29400"]


@pytest.mark.parametrize(
    ("command", "env", "in_place", "waits", "join"),
    [
        (["python", "train.py"], [], None, None, None),  # not torchrun: no facts
        (["torchrun", "--nnodes=2", "train.py"], [], False, False, None),  # default: no restarts
        (["torchrun", "--nnodes=2", "--max-restarts=3", *C10D, "t.py"], [], True, True, 600.0),
        (
            [
                "torchrun",
                "--nnodes=2",
                "--max_restarts",
                "3",
                *C10D,
                "--rdzv-conf",
                "join_timeout=1800",
                "t.py",
            ],
            [],
            True,
            True,
            1800.0,
        ),
        (["torchrun", "--nnodes=2", "--max-restarts=3", "t.py"], [], True, False, None),  # static rendezvous
        (
            ["torchrun", "--nnodes=1:2", "--max-restarts=3", *C10D, "t.py"],
            [],
            True,
            False,
            None,
        ),  # elastic size
        (["torchrun", "--standalone", "--max-restarts=3", "t.py"], [], True, False, None),
        (
            ["torchrun", "--nnodes=2", *C10D, "t.py"],
            [{"name": "PET_MAX_RESTARTS", "value": "2"}],
            True,
            True,
            600.0,
        ),
        (
            ["torchrun", "--nnodes=2", "--max-restarts=0", *C10D, "t.py"],
            [{"name": "PET_MAX_RESTARTS", "value": "2"}],
            False,
            False,
            None,
        ),  # the flag wins
        (
            ["python", "-m", "torch.distributed.run", "--nnodes=2", "--max-restarts=1", "t.py"],
            [
                {"name": "PET_RDZV_BACKEND", "value": "c10d"},
                {"name": "PET_RDZV_CONF", "value": "last_call_timeout=60,join_timeout=900"},
            ],
            True,
            True,
            900.0,
        ),
    ],
)
def test_restarts_and_rendezvous(
    command: list[str],
    env: list[dict[str, str]],
    in_place: bool | None,
    waits: bool | None,
    join: float | None,
) -> None:
    found = torchrun_facts(indexed(command, env=env))
    if in_place is None:
        assert found is None
        return
    assert found is not None
    assert (found["inPlace"], found["waitsForLostNode"]) == (in_place, waits)
    assert found.get("joinTimeoutSeconds") == join


def test_a_single_pod_never_waits_for_a_lost_node() -> None:
    found = torchrun_facts(indexed(["torchrun", "--max-restarts=3", *C10D, "t.py"], pods=1))
    assert found is not None and found["inPlace"] and not found["waitsForLostNode"]


def test_an_unreadable_join_timeout_is_not_a_number() -> None:
    command = ["torchrun", "--nnodes=2", "--max-restarts=3", *C10D, "--rdzv-conf=join_timeout=$JOIN", "t.py"]
    found = torchrun_facts(indexed(command))
    assert found is not None and found["waitsForLostNode"] and not found["joinTimeoutReadable"]


def pytorchjob(elastic: dict[str, Any], command: list[str]) -> dict[str, Any]:
    worker = {
        "replicas": 4,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [gpu(command=command)]}},
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "p"},
        "spec": {"elasticPolicy": elastic, "pytorchReplicaSpecs": {"Worker": worker}},
    }


@pytest.mark.parametrize(
    ("elastic", "command", "waits", "join", "source"),
    [
        # the operator writes PET_MAX_RESTARTS and PET_RDZV_BACKEND (default c10d) from elasticPolicy
        ({"maxRestarts": 3}, ["torchrun", "t.py"], True, 600.0, "default of the c10d rendezvous, 10m"),
        (
            {"maxRestarts": 3, "rdzvConf": [{"key": "join_timeout", "value": "3600"}]},
            ["torchrun", "t.py"],
            True,
            3600.0,
            "elasticPolicy.rdzvConf join_timeout=3600",
        ),
        ({"maxRestarts": 3, "minReplicas": 2, "maxReplicas": 4}, ["torchrun", "t.py"], False, None, None),
        ({"maxRestarts": 3}, ["torchrun", "--max-restarts=0", "t.py"], False, None, None),  # a flag wins
    ],
)
def test_elastic_policy(
    elastic: dict[str, Any], command: list[str], waits: bool, join: float | None, source: str | None
) -> None:
    found = torchrun_facts(pytorchjob(elastic, command))
    assert found is not None and found["waitsForLostNode"] is waits
    assert found.get("joinTimeoutSeconds") == join and found.get("joinTimeoutSource") == source

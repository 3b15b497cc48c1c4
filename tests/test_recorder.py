"""Flight-recorder facts and where a path lives (kubegap/facts/recorder.py, mounts.py)."""

from __future__ import annotations

import posixpath
from typing import Any

import pytest

from kubegap.facts import mounts, recorder

ON = {"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}
POD = {
    "volumes": [
        {"name": "ckpt", "persistentVolumeClaim": {"claimName": "c"}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "cfg", "configMap": {"name": "x"}},
    ]
}
CONTAINER = {
    "volumeMounts": [
        {"name": "ckpt", "mountPath": "/ckpt"},
        {"name": "scratch", "mountPath": "/ckpt/tmp"},
        {"name": "cfg", "mountPath": "/etc/cfg"},
        {"name": "ckpt", "mountPath": "/ro", "readOnly": True},
    ]
}
BASE = ("spec", "containers", 0)


def facts(env: dict[str, str], seen: tuple[str, ...] = ()) -> dict[str, Any]:
    return recorder.gather(env, tuple(env) + seen, POD, CONTAINER, BASE)


@pytest.mark.parametrize(
    ("env", "seen", "problem"),
    [
        (ON, (), ""),
        ({"TORCH_FR_BUFFER_SIZE": "20000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "true"}, (), ""),
        (
            {**ON, "TORCH_FR_BUFFER_SIZE": "0"},
            (),
            "TORCH_FR_BUFFER_SIZE=0 records nothing",
        ),  # the newer name wins
        ({"TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}, (), "TORCH_NCCL_TRACE_BUFFER_SIZE is not set"),
        ({"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}, (), "TORCH_NCCL_DUMP_ON_TIMEOUT is not set"),
        ({**ON, "TORCH_NCCL_DUMP_ON_TIMEOUT": "0"}, (), "TORCH_NCCL_DUMP_ON_TIMEOUT=0 turns the dump off"),
        ({**ON, "TORCH_NCCL_DUMP_ON_TIMEOUT": "yes"}, (), "is not read as on"),
        ({"TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}, ("TORCH_NCCL_TRACE_BUFFER_SIZE",), "cannot be seen"),
    ],
)
def test_recording(env: dict[str, str], seen: tuple[str, ...], problem: str) -> None:
    found = facts(env, seen)
    assert found["on"] is (problem == "")
    assert problem in found["problem"] and bool(found["problem"]) is bool(problem)


@pytest.mark.parametrize(
    ("prefix", "kept", "unresolved", "where"),
    [
        (None, False, False, "the container's own filesystem"),  # default /tmp/nccl_trace_rank_
        ("/ckpt/fr/rank_", True, False, "volume ckpt (persistentVolumeClaim) at /ckpt"),
        ("/ckpt/tmp/fr/rank_", False, False, "volume scratch (emptyDir) at /ckpt/tmp"),  # the longest mount
        ("/ckpt/", True, False, "volume ckpt"),  # a directory prefix
        ("/ckptx/rank_", False, False, "the container's own filesystem"),  # not under /ckpt
        ("/etc/cfg/rank_", False, False, "(configMap)"),
        ("/ro/rank_", False, False, "(read-only)"),
        ("fr/rank_", False, True, "a relative path"),
    ],
)
def test_dump_file(prefix: str | None, kept: bool, unresolved: bool, where: str) -> None:
    env = {**ON, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": prefix} if prefix else dict(ON)
    found = facts(env)
    assert (found["fileKept"], found["fileUnresolved"]) == (kept, unresolved)
    assert where in found["fileWhere"]


def test_an_unseen_dump_file_is_unresolved_not_the_default() -> None:
    found = facts(dict(ON), ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE",))
    assert found["fileUnresolved"] and not found["fileKept"]
    assert found["fileSource"] == "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"


@pytest.mark.parametrize(
    ("value", "flagged"), [("1", "TORCH_NCCL_BLOCKING_WAIT"), ("0", ""), ("TRUE", "TORCH_NCCL_BLOCKING_WAIT")]
)
def test_blocking_wait(value: str, flagged: str) -> None:
    assert facts({"TORCH_NCCL_BLOCKING_WAIT": value})["blockingWait"] == flagged


def test_a_mount_of_an_undeclared_volume_keeps_nothing() -> None:
    found = mounts.volume_at({}, {"volumeMounts": [{"name": "gone", "mountPath": "/data"}]}, BASE, "/data/x")
    assert found["kind"] == "" and not mounts.kept(found)
    assert found["path"] == "spec.containers[0].volumeMounts[0]"


@pytest.mark.parametrize("path", ["/a//b/../c/", "//x/./y", "/", "/" + "d/" * 200 + "e"])
def test_paths_are_normalised_and_parented_as_posixpath_does_and_only_short_ones_kept(path: str) -> None:
    """mounts remembers posixpath's answers for the paths a fleet repeats; a path past 256 characters,
    which only a hostile manifest writes, is worked out and not kept."""
    kept = mounts._NORMAL.cache_info().currsize, mounts._PARENT.cache_info().currsize
    assert mounts.normal(path) == posixpath.normpath(path)
    assert mounts.parent(path) == posixpath.dirname(path)
    assert mounts.normal(path) == posixpath.normpath(path)  # and again, from what was kept
    grown = 0 if len(path) > 256 else 1
    after = mounts._NORMAL.cache_info().currsize, mounts._PARENT.cache_info().currsize
    assert after[0] - kept[0] <= grown and after[1] - kept[1] <= grown
    if len(path) > 256:
        assert after == kept

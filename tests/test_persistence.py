"""Checkpoint recovery facts: where a directory lives, whether a restart resumes, switches (RULES.md v3)."""

from __future__ import annotations

from typing import Any

import pytest

from kubegap import facts
from kubegap.facts import knobs, persistence
from kubegap.kinds import workload_of

CATALOGUE = knobs.load()

VOLUMES = [
    {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}},
    {"name": "nfs", "nfs": {"server": "s", "path": "/x"}},
    {"name": "gcs", "csi": {"driver": "gcsfuse.csi.storage.gke.io"}},
    {"name": "scratch", "emptyDir": {}},
    {"name": "local", "hostPath": {"path": "/mnt/nvme"}},
    {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
    {"name": "cfg", "configMap": {"name": "c"}},
]
MOUNTS = [
    {"name": "pvc", "mountPath": "/ckpt"},
    {"name": "scratch", "mountPath": "/ckpt/tmp"},
    {"name": "nfs", "mountPath": "/nfs/"},
    {"name": "gcs", "mountPath": "/gcs"},
    {"name": "local", "mountPath": "/local"},
    {"name": "eph", "mountPath": "/eph"},
    {"name": "cfg", "mountPath": "/etc/cfg"},
    {"name": "missing", "mountPath": "/gone"},
]


def pod(args: list[str], env: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    container = {
        "name": "trainer",
        "image": "t",
        "command": ["torchrun", "train.py"],
        "args": args,
        "env": env or [],
        "volumeMounts": MOUNTS,
        "resources": {"limits": {"nvidia.com/gpu": 8}},
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [container], "volumes": VOLUMES, **spec}}  # fmt: skip


def recovery(obj: dict[str, Any]) -> dict[str, Any]:
    workload = workload_of(obj)
    assert workload is not None
    found: dict[str, Any] = facts.gather(obj, workload, CATALOGUE, {}).facts["recovery"]
    return found


@pytest.mark.parametrize(
    ("directory", "kind", "words"),
    [
        ("/ckpt/run1", "persistent", "persistentVolumeClaim volume pvc"),
        ("/ckpt", "persistent", "persistentVolumeClaim volume pvc"),
        ("/ckpt/tmp/x", "lost", "emptyDir volume scratch"),  # the longest mount path wins
        ("/ckpt/tmpx", "persistent", "pvc"),  # a prefix counts only at a path boundary
        ("/nfs/a/../b", "persistent", "nfs volume nfs"),
        ("/gcs/run", "persistent", "csi volume gcs"),
        ("/local/c", "lost", "hostPath volume local"),
        ("/eph/c", "lost", "its PVC is deleted with the pod"),
        ("/etc/cfg/c", "lost", "configMap volume cfg"),
        ("/gone/c", "unresolved", "volume missing is not defined"),
        ("/workspace/out", "lost", "container's own filesystem"),
        ("s3://bucket/run", "object-store", "s3://"),
        ("GS://bucket/run", "object-store", "gs://"),
        ("hf://org/model", "object-store", "hf://"),
        ("file:///ckpt/x", "persistent", "pvc"),
        ("out/run", "unresolved", "relative to the image's working directory"),
    ],
)
def test_a_directory_is_placed_through_the_longest_mount(directory: str, kind: str, words: str) -> None:
    found = recovery(pod(["--output_dir", directory]))["storage"]
    assert (found["kind"], found["source"]) == (kind, f"--output_dir {directory} (HF Trainer)")
    assert words in found["text"]


def test_a_relative_directory_lies_under_the_working_directory() -> None:
    obj = pod(["--output_dir", "run1"])
    obj["spec"]["containers"][0]["workingDir"] = "/ckpt"
    assert recovery(obj)["storage"]["kind"] == "persistent"


@pytest.mark.parametrize(
    ("value", "env", "kind"),
    [
        ("$(DIR)", [{"name": "DIR", "value": "/ckpt/a"}], "persistent"),
        ("${DIR}", [{"name": "DIR", "value": "/local/a"}], "lost"),
        ("/ckpt/$(RUN)", [], "persistent"),  # the directory before the variable places it
        ("$(DIR)", [{"name": "DIR", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}], "unresolved"),
        ("/$(RUN)", [], "unresolved"),
    ],
)
def test_variables_are_expanded_or_unresolved(value: str, env: list[dict[str, Any]], kind: str) -> None:
    assert recovery(pod(["--output_dir", value], env))["storage"]["kind"] == kind


def test_a_trainjob_directory_lives_in_its_runtime() -> None:
    obj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "t"},
           "spec": {"trainer": {"command": ["torchrun", "train.py", "--output_dir", "/ckpt"],
                                "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}}}  # fmt: skip
    found = recovery(obj)["storage"]
    assert found["kind"] == "unresolved" and "training runtime" in found["text"]


@pytest.mark.parametrize(
    ("args", "folder_kind"),
    [
        (["--checkpoint.folder", "/ckpt/titan"], "persistent"),
        (["--job.dump_folder", "/ckpt/out", "--checkpoint.folder", "checkpoint"], "persistent"),
        (["--job.dump_folder", "/local/out", "--checkpoint.folder", "checkpoint"], "lost"),
        (["--checkpoint.folder", "checkpoint"], "unresolved"),  # ./outputs/checkpoint: relative
        (["--job.dump_folder", "/ckpt/out"], "persistent"),
    ],
)
def test_torchtitan_writes_under_its_dump_folder(args: list[str], folder_kind: str) -> None:
    found = recovery(pod(args))
    assert found["storage"]["kind"] == folder_kind
    assert found["resume"]["state"] == "latest"  # torchtitan loads the latest step of its folder
    assert found["async"] == {"on": False, "source": "default of torchtitan", "path": found["async"]["path"]}


@pytest.mark.parametrize(
    ("args", "state"),
    [
        (["--save", "/ckpt/a", "--load", "/ckpt/a/"], "latest"),
        (["--save", "/ckpt/a", "--load", "/ckpt/b"], "elsewhere"),
        (["--save", "/ckpt/a"], "missing"),
        (["--output_dir", "/ckpt", "--resume_from_checkpoint", "True"], "latest"),
        (["--output_dir", "/ckpt", "--resume_from_checkpoint", "false"], "missing"),
        (["--output_dir", "/ckpt"], "missing"),
        (["exp_manager.exp_dir=/ckpt", "exp_manager.resume_if_exists=true"], "latest"),
        (["exp_manager.exp_dir=/ckpt"], "missing"),
        (["base_output_directory=gs://b/x"], "latest"),
    ],
)
def test_a_restart_resumes_from_the_latest_checkpoint(args: list[str], state: str) -> None:
    assert recovery(pod(args))["resume"]["state"] == state


def test_lightning_resume_is_not_judged() -> None:
    assert "resume" not in recovery(pod(["--trainer.default_root_dir", "/ckpt"]))


@pytest.mark.parametrize(
    ("args", "on", "source"),
    [
        (["--save", "/ckpt"], False, "default of Megatron-LM"),
        (["--save", "/ckpt", "--async-save"], True, "--async-save (Megatron-LM)"),
        (["--checkpoint.folder", "/ckpt", "--checkpoint.async_mode", "async"], True, None),
        (["--checkpoint.folder", "/ckpt", "--checkpoint.async_mode=disabled"], False, None),
        (["base_output_directory=gs://b", "async_checkpointing=False"], False, None),
        (["base_output_directory=gs://b"], True, "default of MaxText"),
    ],
)
def test_asynchronous_saves(args: list[str], on: bool, source: str | None) -> None:
    found = recovery(pod(args))["async"]
    assert found["on"] is on
    assert source is None or found["source"] == source


def test_nothing_known_means_no_switch() -> None:
    assert recovery(pod(["--trainer.default_root_dir", "/ckpt"])) == {
        "storage": recovery(pod(["--trainer.default_root_dir", "/ckpt"]))["storage"]
    }


@pytest.mark.parametrize(
    ("args", "spec", "grace"),
    [
        (["--save", "/ckpt", "--exit-signal-handler"], {},
         {"seconds": 30.0, "source": "the default of 30 s"}),
        (["--save", "/ckpt", "--exit-signal-handler"], {"terminationGracePeriodSeconds": 90},
         {"seconds": 90.0, "source": "terminationGracePeriodSeconds 90"}),
        (["--output_dir", "/ckpt", "--enable_jit_checkpoint", "False"], {}, None),
        (["exp_manager.exp_dir=/ckpt"], {}, {"seconds": 30.0, "source": "the default of 30 s"}),
        (["exp_manager.exp_dir=/ckpt", "exp_manager.create_preemption_callback=false"], {}, None),
    ],
)  # fmt: skip
def test_a_save_on_sigterm_brings_the_grace_period(
    args: list[str], spec: dict[str, Any], grace: dict[str, Any] | None
) -> None:
    found = recovery(pod(args, **spec))
    assert ("onSignal" in found) is (grace is not None)
    if grace is not None:
        assert {k: found["grace"][k] for k in grace} == grace


def test_an_unreadable_grace_period_is_unresolved() -> None:
    found = recovery(pod(["--save", "/ckpt", "--exit-signal-handler"], terminationGracePeriodSeconds="1m"))
    assert "grace" not in found and "cannot be read" in found["graceUnresolved"]


def test_the_least_safe_container_counts() -> None:
    obj = pod(["--save", "/ckpt", "--load", "/ckpt"])
    second = {**obj["spec"]["containers"][0], "name": "b", "args": ["--save", "/local/x"]}
    obj["spec"]["containers"].append(second)
    found = recovery(obj)
    assert found["storage"]["kind"] == "lost" and found["resume"]["state"] == "missing"


def test_place_keeps_object_store_schemes_apart_from_paths() -> None:
    workload = workload_of(pod([]))
    assert workload is not None
    template = workload.templates[0]
    assert persistence.place("az://c/x", template, template.containers[0])[0] == "object-store"
    assert persistence.place("/x", template, template.containers[0])[0] == "lost"


def test_a_declared_directory_stands_in_for_code_and_a_flag_wins_over_it() -> None:
    obj = pod([])
    obj["metadata"]["annotations"] = {"kubegap.dev/checkpoint-dir": "/local/run"}
    found = recovery(obj)["storage"]
    assert (found["kind"], found["source"]) == ("lost", "kubegap.dev/checkpoint-dir: /local/run")
    assert found["path"] == "metadata.annotations['kubegap.dev/checkpoint-dir']"
    obj["spec"]["containers"][0]["args"] = ["--save", "/ckpt"]
    assert recovery(obj)["storage"]["kind"] == "persistent"

from __future__ import annotations

from typing import Any

import pytest

from kubegap import facts
from kubegap.facts import argv, env, knobs
from kubegap.kinds import workload_of

CATALOGUE = knobs.load()
BASE = ("spec", "containers", 0)
CONFIGMAPS = {("ml", "tuning"): {"NCCL_IB_HCA": "mlx5_0", "B": "from-configmap"}}


def resolve(container: dict[str, Any], configmaps: env.ConfigMaps = CONFIGMAPS) -> env.Environment:
    cmd = argv.tokenize(container)
    return env.resolve(container, BASE, "ml", configmaps, cmd.env)


def cm_ref(name: str, key: str) -> dict[str, Any]:
    return {"valueFrom": {"configMapKeyRef": {"name": name, "key": key}}}


# (case, container, name, value, source, path below the container)
PRECEDENCE: list[tuple[str, dict[str, Any], str, str | None, str, tuple[Any, ...]]] = [
    ("plain value", {"env": [{"name": "A", "value": "1"}]}, "A", "1", "env", ("env", 0)),
    ("number value", {"env": [{"name": "A", "value": 5}]}, "A", "5", "env", ("env", 0)),
    ("null value is empty", {"env": [{"name": "A", "value": None}]}, "A", "", "env", ("env", 0)),
    ("no value is empty", {"env": [{"name": "A"}]}, "A", "", "env", ("env", 0)),
    (
        "later env entry wins",
        {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]},
        "A",
        "2",
        "env",
        ("env", 1),
    ),
    (
        "envFrom ConfigMap",
        {"envFrom": [{"configMapRef": {"name": "tuning"}}]},
        "NCCL_IB_HCA",
        "mlx5_0",
        "ConfigMap ml/tuning",
        ("envFrom", 0),
    ),
    (
        "envFrom prefix",
        {"envFrom": [{"configMapRef": {"name": "tuning"}, "prefix": "X_"}]},
        "X_B",
        "from-configmap",
        "ConfigMap ml/tuning",
        ("envFrom", 0),
    ),
    (
        "env beats envFrom",
        {"envFrom": [{"configMapRef": {"name": "tuning"}}], "env": [{"name": "B", "value": "from-env"}]},
        "B",
        "from-env",
        "env",
        ("env", 0),
    ),
    (
        "configMapKeyRef",
        {"env": [{"name": "HCA", **cm_ref("tuning", "NCCL_IB_HCA")}]},
        "HCA",
        "mlx5_0",
        "ConfigMap ml/tuning",
        ("env", 0),
    ),
    (
        "export beats env",
        {"env": [{"name": "B", "value": "from-env"}], "command": ["bash", "-c", "export B=from-export; run"]},
        "B",
        "from-export",
        "export",
        ("command", 2),
    ),
    (
        "prefix assignment beats env",
        {"env": [{"name": "B", "value": "from-env"}], "command": ["sh", "-c", "B=from-prefix run"]},
        "B",
        "from-prefix",
        "prefix",
        ("command", 2),
    ),
    (
        "last export wins",
        {"command": ["sh", "-c", "export B=1\nexport B=2"]},
        "B",
        "2",
        "export",
        ("command", 2),
    ),
]


@pytest.mark.parametrize(
    ("case", "container", "name", "value", "source", "path"), PRECEDENCE, ids=[p[0] for p in PRECEDENCE]
)
def test_precedence(
    case: str, container: dict[str, Any], name: str, value: str | None, source: str, path: tuple[Any, ...]
) -> None:
    variable = resolve(container).variables[name]
    assert (variable.value, variable.source, variable.path) == (value, source, (*BASE, *path))


# (case, container, name or None, what `unresolved` must say)
UNRESOLVED: list[tuple[str, dict[str, Any], str | None, str]] = [
    (
        "Secret key",
        {"env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "t"}}}]},
        "TOKEN",
        "env TOKEN from Secret creds (never read)",
    ),
    (
        "field ref",
        {"env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]},
        "POD",
        "env POD from field",
    ),
    (
        "resource field ref",
        {"env": [{"name": "CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]},
        "CPUS",
        "env CPUS from resource",
    ),
    (
        "ConfigMap not in the input",
        {"env": [{"name": "HCA", **cm_ref("elsewhere", "k")}]},
        "HCA",
        "env HCA from ConfigMap ml/elsewhere key k (not available)",
    ),
    (
        "key missing from the ConfigMap",
        {"env": [{"name": "HCA", **cm_ref("tuning", "nope")}]},
        "HCA",
        "env HCA from ConfigMap ml/tuning key nope (not available)",
    ),
    (
        "envFrom Secret",
        {"envFrom": [{"secretRef": {"name": "creds"}}]},
        None,
        "envFrom Secret creds (never read)",
    ),
    (
        "envFrom ConfigMap not in the input",
        {"envFrom": [{"configMapRef": {"name": "other"}}]},
        None,
        "envFrom ConfigMap ml/other (not available)",
    ),
]


@pytest.mark.parametrize(("case", "container", "name", "text"), UNRESOLVED, ids=[u[0] for u in UNRESOLVED])
def test_unresolved_sources_are_described(
    case: str, container: dict[str, Any], name: str | None, text: str
) -> None:
    environment = resolve(container)
    assert environment.unresolved == (text,)
    if name is not None:
        assert name in environment.variables
        assert environment.value(name) is None


def test_configmaps_are_looked_up_in_the_object_namespace() -> None:
    container = {"env": [{"name": "HCA", **cm_ref("tuning", "NCCL_IB_HCA")}]}
    cmd = argv.tokenize(container)
    environment = env.resolve(container, BASE, "other-ns", CONFIGMAPS, cmd.env)
    assert environment.value("HCA") is None


def test_malformed_env_entries_are_skipped() -> None:
    container = {
        "env": ["junk", None, {"value": "no name"}, {"name": 7}, {"name": "OK", "value": "1"}],
        "envFrom": "x",
    }
    environment = resolve(container)
    assert list(environment.variables) == ["OK"]
    assert environment.variables["OK"].path == (*BASE, "env", 4)


@pytest.mark.parametrize("junk", [None, "x", 3, {"a": 1}])
def test_env_that_is_not_a_list(junk: Any) -> None:
    environment = resolve({"env": junk, "envFrom": junk})
    assert environment.variables == {}
    assert environment.unresolved == ()


# mpirun -x: through `facts.gather`, because it crosses containers.


def mpijob(launcher: dict[str, Any], worker: dict[str, Any] | None = None) -> dict[str, Any]:
    worker = worker or {}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "m", "namespace": "ml"},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "launcher", **launcher}]}},
                },
                "Worker": {
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "worker",
                                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                                    **worker,
                                },
                                {"name": "sidecar", "image": "log-shipper"},
                            ]
                        }
                    },
                },
            }
        },
    }


def containers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    workload = workload_of(obj)
    assert workload is not None
    gathered = facts.gather(obj, workload, CATALOGUE, {})
    return {
        unit.bindings["container"]["name"]: unit.bindings["container"] for unit in gathered.units["container"]
    }


LAUNCH = "mpirun -np 16 -x NCCL_IB_HCA=mlx5_0 -x NCCL_DEBUG python train.py"


def test_mpirun_x_reaches_every_gpu_container() -> None:
    found = containers(
        mpijob({"command": ["bash", "-c", LAUNCH], "env": [{"name": "NCCL_DEBUG", "value": "WARN"}]})
    )
    worker = found["worker"]
    assert worker["env"]["NCCL_IB_HCA"] == "mlx5_0"
    assert worker["env"]["NCCL_DEBUG"] == "WARN"  # `-x NAME` forwards the launcher's own value
    launcher_path = "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].command[2]"
    assert worker["envPaths"]["NCCL_IB_HCA"] == launcher_path
    assert "NCCL_IB_HCA" not in found["launcher"]["env"]  # the launcher runs no rank


def test_mpirun_x_name_resolved_from_a_launcher_export() -> None:
    found = containers(mpijob({"command": ["bash", "-c", "export NCCL_DEBUG=INFO\n" + LAUNCH]}))
    assert found["worker"]["env"]["NCCL_DEBUG"] == "INFO"


def test_mpirun_x_beats_the_worker_own_env() -> None:
    worker = {"env": [{"name": "NCCL_IB_HCA", "value": "mlx5_9"}]}
    found = containers(mpijob({"command": ["bash", "-c", LAUNCH]}, worker))
    assert found["worker"]["env"]["NCCL_IB_HCA"] == "mlx5_0"


def test_mpirun_x_from_a_secret_is_unresolved_where_it_lands() -> None:
    launcher = {
        "command": ["bash", "-c", "mpirun -x DEEPSPEED_TIMEOUT python train.py"],
        "env": [{"name": "DEEPSPEED_TIMEOUT", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
    }
    worker = containers(mpijob(launcher))["worker"]
    assert "DEEPSPEED_TIMEOUT" in worker["envNames"]
    assert "DEEPSPEED_TIMEOUT" not in worker["env"]
    assert "collectiveTimeout" not in worker
    assert any("DEEPSPEED_TIMEOUT" in u for u in worker["unresolved"]), worker["unresolved"]


def test_mpirun_x_value_sets_a_knob_on_the_workers() -> None:
    worker = containers(mpijob({"command": ["mpirun", "-x", "DEEPSPEED_TIMEOUT=20", "deepspeed", "t.py"]}))[
        "worker"
    ]
    assert worker["collectiveTimeout"]["seconds"] == 1200.0
    assert worker["collectiveTimeout"]["source"] == "DEEPSPEED_TIMEOUT=20 (mpirun -x in launcher) (DeepSpeed)"


def test_mpirun_x_reaches_gpu_pods_of_other_kinds() -> None:
    """A JobSet whose launcher role runs mpirun: the variables land on the GPU workers too."""
    obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "launcher",
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "containers": [
                                        {"name": "l", "command": ["mpirun", "-x", "NCCL_NET=Socket", "t"]}
                                    ]
                                }
                            }
                        }
                    },
                },
                {
                    "name": "workers",
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "containers": [
                                        {"name": "w", "resources": {"limits": {"nvidia.com/gpu": 8}}}
                                    ]
                                }
                            }
                        }
                    },
                },
            ]
        },
    }
    assert containers(obj)["w"]["env"]["NCCL_NET"] == "Socket"


def test_mpirun_x_name_ignores_an_export_that_comes_later() -> None:
    launcher = {
        "command": ["bash", "-c", "mpirun -x NCCL_SOCKET_IFNAME python t.py\nexport NCCL_SOCKET_IFNAME=eth0"]
    }
    worker = containers(mpijob(launcher))["worker"]
    assert "NCCL_SOCKET_IFNAME" not in worker["env"]
    assert "mpirun -x NCCL_SOCKET_IFNAME (launcher value not visible)" in worker["unresolved"]


def test_mpirun_flags_count_for_the_ranks() -> None:
    """The ranks run the command mpirun starts: its flags are the GPU containers' flags."""
    launcher = {"command": ["bash", "-c", "mpirun -np 16 python train.py --save_steps 500 --ddp_timeout 900"]}
    obj = mpijob(launcher)
    worker = containers(obj)["worker"]
    assert worker["collectiveTimeout"]["seconds"] == 900.0
    workload = workload_of(obj)
    assert workload is not None
    assert facts.gather(obj, workload, CATALOGUE, {}).facts["checkpoint"]["steps"]["steps"] == 500

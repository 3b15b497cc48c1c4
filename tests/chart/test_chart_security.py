"""Every pod the chart renders passes the Pod Security `restricted` profile and runs read-only."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from chart.helm import Job, pod_specs, scenario_names
from chart.pss import restricted_violations, writable_root_filesystems

JOBS = [f"scenario:{name}" for name in scenario_names()] + ["extras", "elsewhere", "kube-1.28"]

_GOOD: dict[str, Any] = {
    "securityContext": {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    },
    "containers": [
        {
            "name": "c",
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            },
        }
    ],
    "volumes": [{"name": "tmp", "emptyDir": {}}],
}


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(_GOOD)
    target: Any = spec
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[path[-1]] = value
    return spec


@pytest.mark.parametrize(
    ("spec", "violation"),
    [
        (_with(("hostNetwork",), True), "hostNetwork"),
        (_with(("volumes",), [{"name": "h", "hostPath": {"path": "/"}}]), "volume h"),
        (_with(("securityContext", "runAsNonRoot"), False), "runAsNonRoot"),
        (_with(("securityContext", "runAsUser"), 0), "runAsUser is 0"),
        (_with(("securityContext", "seccompProfile"), {"type": "Unconfined"}), "seccompProfile"),
        (
            _with(("containers", 0, "securityContext", "allowPrivilegeEscalation"), True),
            "allowPrivilegeEscalation",
        ),
        (_with(("containers", 0, "securityContext", "capabilities"), {"drop": ["NET_RAW"]}), "drop ALL"),
        (
            _with(("containers", 0, "securityContext", "capabilities", "add"), ["SYS_ADMIN"]),
            "capabilities add",
        ),
        (_with(("containers", 0, "securityContext", "privileged"), True), "privileged"),
        (_with(("containers", 0, "ports"), [{"containerPort": 80, "hostPort": 80}]), "hostPort"),
        (_with(("securityContext", "sysctls"), [{"name": "kernel.msgmax", "value": "1"}]), "sysctl"),
    ],
)
def test_checker_catches_each_control(spec: dict[str, Any], violation: str) -> None:
    assert restricted_violations(_GOOD) == []
    found = restricted_violations(spec)
    assert any(violation in v for v in found), found


def test_checker_catches_a_writable_root() -> None:
    assert writable_root_filesystems(_GOOD) == []
    assert writable_root_filesystems(
        _with(("containers", 0, "securityContext", "readOnlyRootFilesystem"), False)
    )


@pytest.mark.parametrize("job", JOBS)
def test_every_pod_is_restricted_and_read_only(jobs: Mapping[str, Job], job: str) -> None:
    specs = list(pod_specs(jobs[job].last.objects))
    assert specs, "no pod template rendered"
    for name, spec in specs:
        assert restricted_violations(spec) == [], name
        assert writable_root_filesystems(spec) == [], name
        # gunicorn and Python need a writable temporary directory on a read-only root.
        (container,) = spec["containers"]
        tmp = next(m for m in container["volumeMounts"] if m["mountPath"] == "/tmp")
        volume = next(v for v in spec["volumes"] if v["name"] == tmp["name"])
        assert "emptyDir" in volume and volume["emptyDir"].get("sizeLimit")
        assert spec["securityContext"]["runAsUser"] == 65532  # the image's user (see the Dockerfile)


def test_service_accounts_do_not_mount_tokens_by_default(jobs: Mapping[str, Job]) -> None:
    accounts = jobs["scenario:defaults"].last.find("ServiceAccount")
    assert len(accounts) == 2
    assert all(a["automountServiceAccountToken"] is False for a in accounts)


@pytest.mark.parametrize(
    ("job", "image"),
    [
        ("scenario:defaults", "kubegap/kubegap:0.1.0"),
        (
            "scenario:enforce",
            "kubegap/kubegap@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ),
    ],
)
def test_image_reference(jobs: Mapping[str, Job], job: str, image: str) -> None:
    images = {c["image"] for _, spec in pod_specs(jobs[job].last.objects) for c in spec["containers"]}
    assert images == {image}

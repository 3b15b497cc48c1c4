"""Fixes of environment variables: removing switches that turn safety off or send NCCL down a slow path,
and the NIC hint the attached fabric names."""

from __future__ import annotations

from collections.abc import Callable

from kubegap import raw
from kubegap.facts import argv
from kubegap.fix import edits, scripts
from kubegap.fix.nodes import Unsafe
from kubegap.fix.target import Patch, Target


def _remove_variable(target: Target, offending: Callable[[str, str | None], bool]) -> Patch:
    _, container = target.container()
    relative = target.path[len(container.path) :]
    if relative[:1] == ("envFrom",) or (
        relative[:1] == ("env",)
        and len(relative) == 2
        and "valueFrom" in raw.mapping(raw.dig(container.spec, relative))
    ):
        raise Unsafe("the value comes from a ConfigMap that other workloads may share: change it there")
    if relative[:1] == ("env",) and len(relative) == 2 and isinstance(index := relative[1], int):
        entry = raw.mapping(raw.dig(container.spec, relative))
        name = str(entry.get("name"))
        if not offending(name, None if entry.get("value") is None else str(entry.get("value"))):
            raise Unsafe(f"env {name} is not the offending variable")
        edit = edits.remove_items(target.tree, target.at((*container.path, "env")), index, index)
        return Patch((edit,), f"removed env {name}")
    cmd = argv.tokenize(container.spec)
    found = [a for a in (*cmd.env, *cmd.forwarded) if a.path == relative and offending(a.name, a.value)]
    if not found:
        raise Unsafe("the variable is not set where the finding points")
    assignment = found[-1]
    element = target.at(target.path)
    written = raw.dig(container.spec, relative)
    if assignment.how == "mpirun -x" and written == "-x" and isinstance(relative[-1], int):
        sequence = target.at((*container.path, *relative[:-1]))
        edit = edits.remove_items(target.tree, sequence, relative[-1], relative[-1] + 1)
    else:
        edit = scripts.remove_assignment(target.tree, element, assignment.name, assignment.how)
    return Patch((edit,), f"removed {assignment.name}={assignment.value} ({assignment.how})")


def _zero(*names: str) -> Callable[[str, str | None], bool]:
    return lambda name, value: name in names and (value or "").strip() == "0"


def async_error_handling(target: Target) -> Patch:
    return _remove_variable(target, _zero("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"))


def watchdog_enabled(target: Target) -> Patch:
    # Without the variable PyTorch uses its default heartbeat timeout (480 s, under the policy's 10m bound).
    monitoring_off = _zero("TORCH_NCCL_ENABLE_MONITORING")
    return _remove_variable(
        target, lambda n, v: monitoring_off(n, v) or n == "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"
    )


def no_placebo_timeout(target: Target) -> Patch:
    return _remove_variable(target, lambda name, value: name == "NCCL_TIMEOUT")


# The switches gpu-nic-topology's no-transport-fallback names (RULES.md §2).
def _fallback(name: str, value: str | None) -> bool:
    text = (value or "").strip().lower()
    return (
        (name in ("NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE") and text == "1")
        or (name == "NCCL_NET" and text == "socket")
        or (name == "NCCL_NET_GDR_LEVEL" and text in ("loc", "0"))
    )


def no_transport_fallback(target: Target) -> Patch:
    return _remove_variable(target, _fallback)


# AWS: EFA is used by NCCL through libfabric's `efa` provider (aws-ofi-nccl), selected by FI_PROVIDER=efa.
_FABRIC_HINTS = {"vpc.amazonaws.com/efa": ("FI_PROVIDER", "efa")}


def nccl_nic_hints(target: Target) -> Patch:
    template, container = target.container()
    names = {n for c in template.containers for n in _resources(c.spec)}
    hints = sorted({_FABRIC_HINTS[n] for n in names if n in _FABRIC_HINTS})
    if len(hints) != 1:
        raise Unsafe(
            "the attached fabric does not say which NIC to use: "
            "set NCCL_IB_HCA or NCCL_SOCKET_IFNAME to your nodes' devices"
        )
    name, value = hints[0]
    edit = edits.append_items(
        target.tree, target.at((*container.path, "env")), [{"name": name, "value": value}]
    )
    return Patch((edit,), f"added env {name}={value} (the pod requests EFA)")


def _resources(spec: object) -> set[str]:
    resources = raw.mapping(raw.mapping(spec).get("resources"))
    return {str(k) for part in ("limits", "requests") for k in raw.mapping(resources.get(part))}

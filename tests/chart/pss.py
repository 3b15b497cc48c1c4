"""The Pod Security Standards `restricted` profile (baseline included) as a checker for rendered pod specs.

Each check follows the profile's published controls; the kubegap chart adds one of its own (read-only root
file system), reported separately so that a failure says which rule it broke.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

_RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
_SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}
_SELINUX_TYPES = {None, "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


def _effective(spec: Mapping[str, Any], container: Mapping[str, Any], field: str) -> Any:
    """A security setting of the container, else the pod's (container settings win)."""
    own = (container.get("securityContext") or {}).get(field)
    return own if own is not None else (spec.get("securityContext") or {}).get(field)


def _pod_violations(spec: Mapping[str, Any]) -> Iterator[str]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            yield f"{field} is true"
    pod_context = spec.get("securityContext") or {}
    for sysctl in pod_context.get("sysctls") or []:
        if sysctl.get("name") not in _SAFE_SYSCTLS:
            yield f"unsafe sysctl {sysctl.get('name')}"
    for volume in spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= _RESTRICTED_VOLUMES:
            yield f"volume {volume.get('name')} of type {sorted(kinds - _RESTRICTED_VOLUMES)}"


def _container_violations(spec: Mapping[str, Any], container: Mapping[str, Any]) -> Iterator[str]:
    context = container.get("securityContext") or {}
    if context.get("privileged"):
        yield "privileged"
    if context.get("allowPrivilegeEscalation") is not False:
        yield "allowPrivilegeEscalation is not false"
    if context.get("procMount") not in (None, "Default"):
        yield "procMount is not Default"
    if _effective(spec, container, "runAsNonRoot") is not True:
        yield "runAsNonRoot is not true"
    if _effective(spec, container, "runAsUser") == 0:
        yield "runAsUser is 0"
    seccomp = (_effective(spec, container, "seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        yield f"seccompProfile is {seccomp}"
    capabilities = context.get("capabilities") or {}
    if "ALL" not in (capabilities.get("drop") or []):
        yield "capabilities do not drop ALL"
    if not set(capabilities.get("add") or []) <= {"NET_BIND_SERVICE"}:
        yield f"capabilities add {capabilities.get('add')}"
    if (_effective(spec, container, "windowsOptions") or {}).get("hostProcess"):
        yield "windows hostProcess"
    selinux = _effective(spec, container, "seLinuxOptions") or {}
    if selinux.get("type") not in _SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
        yield "seLinuxOptions outside the allowed set"
    apparmor = (_effective(spec, container, "appArmorProfile") or {}).get("type")
    if apparmor not in (None, "RuntimeDefault", "Localhost"):
        yield f"appArmorProfile is {apparmor}"
    if any(port.get("hostPort") for port in container.get("ports") or []):
        yield "hostPort set"


def restricted_violations(spec: Mapping[str, Any]) -> list[str]:
    """Why a pod spec fails the restricted profile; [] when it passes."""
    found = list(_pod_violations(spec))
    for container in _containers(spec):
        found += [f"{container.get('name')}: {v}" for v in _container_violations(spec, container)]
    return found


def writable_root_filesystems(spec: Mapping[str, Any]) -> list[str]:
    """Containers whose root file system is writable (the chart's own hardening rule)."""
    return [
        str(c.get("name"))
        for c in _containers(spec)
        if (c.get("securityContext") or {}).get("readOnlyRootFilesystem") is not True
    ]

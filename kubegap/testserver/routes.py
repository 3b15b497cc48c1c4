"""Routing of the test API server: discovery documents, resource paths, Status errors of injected faults."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegap.testserver.store import ApiError, Resource, Store

_REASONS = {
    429: "TooManyRequests",
    500: "InternalError",
    502: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass(slots=True)
class Fault:
    """One injected fault; it fires on matching requests while `times` lasts (None: forever)."""

    action: str  # forbidden | expire | throttle | error | drop | slow
    plural: str | None = None  # None: any resource
    group: str | None = None
    namespace: str | None = None  # forbidden: also every cluster-wide list of a namespaced resource
    verb: str | None = None  # get, list, create, update
    path: str | None = None  # a path prefix instead of a resource (discovery faults)
    times: int | None = 1
    on_continue: int | None = None  # fire on the Nth continue request of the resource (1-based)
    status: int = 500
    retry_after: int | None = None
    gate: threading.Event | None = None  # slow: hold the response until set (or `delay` passes)
    delay: float = 0.0
    fired: int = 0


@dataclass(frozen=True, slots=True)
class Target:
    verb: str
    resource: Resource
    namespace: str | None
    name: str | None


def _group_versions(store: Store) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for resource in store.resources:
        versions = groups.setdefault(resource.group, [])
        if resource.version not in versions:
            versions.append(resource.version)
    return groups


def _api_group(name: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": listed[0]}


def _resource_list(store: Store, group: str, version: str) -> dict[str, Any] | None:
    served = [r for r in store.resources if r.group == group and r.version == version]
    if not served:
        return None
    entries: list[dict[str, Any]] = []
    for resource in served:
        entries.append(resource.discovery())
        if "update" in resource.verbs:  # the status subresource, as real lists show it
            entries.append(
                {
                    "name": f"{resource.plural}/status",
                    "singularName": "",
                    "namespaced": resource.namespaced,
                    "kind": resource.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": entries}


def discovery(store: Store, path: str, address: Any) -> dict[str, Any] | None:
    """The discovery document at `path`; None when `path` is not a discovery path."""
    parts = path.strip("/").split("/")
    groups = _group_versions(store)
    if path == "/version":
        return {"major": "1", "minor": "34", "gitVersion": "v1.34.0-kubegap-test", "platform": "linux/amd64"}
    if parts == ["api"]:
        cidr = {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{address[0]}:{address[1]}"}
        return {"kind": "APIVersions", "versions": groups.get("", []), "serverAddressByClientCIDRs": [cidr]}
    if parts == ["apis"]:
        listed = [_api_group(name, versions) for name, versions in groups.items() if name]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": listed}
    if (parts[0] == "api" and len(parts) == 2) or (parts[0] == "apis" and len(parts) in (2, 3)):
        group = "" if parts[0] == "api" else parts[1]
        if len(parts) == 2 and parts[0] == "apis":
            if group not in groups:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return {"kind": "APIGroup", "apiVersion": "v1", **_api_group(group, groups[group])}
        doc = _resource_list(store, group, parts[-1])
        if doc is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return doc
    return None


def target_of(store: Store, method: str, path: str, query: Mapping[str, str]) -> Target:
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) > 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) > 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 2:
        raise ApiError(404, "NotFound", "the server could not find the requested resource (subresource)")
    resource = store.table(group, version, rest[0]).resource
    name = rest[1] if len(rest) == 2 else None
    cluster_wide_list = method == "GET" and name is None
    if (namespace is not None and not resource.namespaced) or (
        namespace is None and resource.namespaced and not cluster_wide_list
    ):
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    verb = {
        ("GET", True): "get",
        ("GET", False): "list",
        ("POST", False): "create",
        ("PUT", True): "update",
    }.get((method, name is not None))
    if query.get("watch") in ("1", "true"):
        raise ApiError(400, "BadRequest", "watch is not served by the test API server")
    if verb is None or verb not in resource.verbs:
        raise ApiError(
            405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
        )
    return Target(verb, resource, namespace, name)


def resource_request(
    store: Store, target: Target, query: Mapping[str, str], body: bytes
) -> tuple[int, bytes]:
    resource = target.resource
    if target.verb == "list":
        page = store.list_page(resource, target.namespace, query)
        meta: dict[str, Any] = {"resourceVersion": str(page.rv)}
        if page.continue_token:
            meta["continue"] = page.continue_token
        if page.remaining is not None:
            meta["remainingItemCount"] = page.remaining
        head = {"kind": f"{resource.kind}List", "apiVersion": resource.api_version, "metadata": meta}
        prefix = json.dumps(head)[:-1].encode()
        return 200, prefix + b',"items":[' + b",".join(page.items) + b"]}"
    if target.verb == "get":
        assert target.name is not None
        return 200, json.dumps(store.get(resource, target.namespace or "", target.name)).encode()
    try:
        obj = json.loads(body)
    except ValueError as exc:
        raise ApiError(400, "BadRequest", f"the body of the request was in an unknown format: {exc}") from exc
    if not isinstance(obj, dict) or obj.get("kind") != resource.kind:
        raise ApiError(400, "BadRequest", f"the body is not a {resource.kind}")
    meta = obj.setdefault("metadata", {})
    if target.namespace is not None and meta.setdefault("namespace", target.namespace) != target.namespace:
        raise ApiError(400, "BadRequest", "the namespace of the object does not match the request")
    if target.verb == "create":
        return 201, json.dumps(store.create(resource, obj)).encode()
    assert target.name is not None
    if meta.get("name") != target.name:
        raise ApiError(400, "BadRequest", "the name of the object does not match the request")
    return 200, json.dumps(store.replace(resource, target.namespace or "", target.name, obj)).encode()


def fault_error(fault: Fault, target: Target | None, user: str) -> ApiError:
    if fault.action == "forbidden":
        if target is None:
            return ApiError(403, "Forbidden", f'forbidden: User "{user}" cannot get path "{fault.path}"')
        resource = target.resource
        where = f'in the namespace "{target.namespace}"' if target.namespace else "at the cluster scope"
        message = (
            f'{resource.plural} is forbidden: User "{user}" cannot {target.verb} resource '
            f'"{resource.plural}" in API group "{resource.group}" {where}'
        )
        return ApiError(403, "Forbidden", message, {"kind": resource.plural, "group": resource.group})
    if fault.action == "expire":
        return ApiError(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list "
            "result. You can start a new list without the continue parameter.",
        )
    status = 429 if fault.action == "throttle" and fault.status == 500 else fault.status
    details = {} if fault.retry_after is None else {"retryAfterSeconds": fault.retry_after}
    message = (
        "Too many requests, please try again later." if status == 429 else "Internal error occurred: injected"
    )
    return ApiError(status, _REASONS.get(status, "InternalError"), message, details)

"""The state behind the test API server: resource catalogue, objects, paging and selectors.

Lists are ordered the way etcd keys order them (namespace, then name); a continue token is the base64 of
the resource version and the key to start after, as the real server encodes it. What is not emulated:
MVCC snapshots (a continued list sees writes made after its first page), watch, Table output, protobuf,
aggregated discovery (v2), field selectors beyond metadata.name and metadata.namespace.
"""

from __future__ import annotations

import bisect
import json
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegap.testserver.catalog import DEFAULT_RESOURCES, ApiError, Resource
from kubegap.testserver.query import (
    decode_continue,
    encode_continue,
    labels_match,
    parse_field_selector,
    parse_label_selector,
)

__all__ = ["DEFAULT_RESOURCES", "ApiError", "Page", "Resource", "Store"]


# --- the store -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Table:
    resource: Resource
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)  # "ns/name" -> object
    keys: list[str] = field(default_factory=list)  # sorted before every list
    unsorted: bool = False
    encoded: dict[str, bytes] = field(default_factory=dict)  # list-item JSON, built on first list


@dataclass(frozen=True, slots=True)
class Page:
    items: list[bytes]  # JSON of each item
    rv: int
    continue_token: str
    remaining: int | None


class Store:
    def __init__(self, resources: Iterable[Resource] = DEFAULT_RESOURCES) -> None:
        self._lock = threading.Lock()
        self._tables: dict[tuple[str, str], _Table] = {(r.group, r.plural): _Table(r) for r in resources}
        self.rv = 1000

    @property
    def resources(self) -> list[Resource]:
        return [t.resource for t in self._tables.values()]

    def remove_group(self, group: str) -> None:
        """A CRD group that is not installed: gone from discovery, 404 on its paths."""
        with self._lock:
            for key in [k for k in self._tables if k[0] == group]:
                del self._tables[key]

    def resource_for(self, api_version: str, kind: str) -> Resource | None:
        group = api_version.rpartition("/")[0]
        for table in self._tables.values():
            if table.resource.group == group and table.resource.kind == kind:
                return table.resource
        return None

    def table(self, group: str, version: str, plural: str) -> _Table:
        table = self._tables.get((group, plural))
        if table is None or table.resource.version != version:
            raise ApiError(
                404,
                "NotFound",
                "the server could not find the requested resource",
                {"group": group, "kind": plural},
            )
        return table

    def add(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store an object as created (uid, resourceVersion, creationTimestamp filled in)."""
        resource = self.resource_for(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if resource is None:
            raise ValueError(f"no resource serves {obj.get('apiVersion')} {obj.get('kind')}")
        return self.create(resource, obj)

    def create(self, resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        stored: dict[str, Any] = json.loads(json.dumps(obj))
        meta = stored.setdefault("metadata", {})
        if not resource.namespaced:
            meta.pop("namespace", None)
        elif not meta.get("namespace"):
            meta["namespace"] = "default"
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        with self._lock:
            table = self._tables[(resource.group, resource.plural)]
            if key in table.objects:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{resource.plural}.{resource.group} "{meta.get("name")}" already exists',
                )
            self.rv += 1
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
            meta["resourceVersion"] = str(self.rv)
            stored["apiVersion"], stored["kind"] = resource.api_version, resource.kind
            table.objects[key] = stored
            table.keys.append(key)
            table.unsorted = True
        return stored

    def replace(
        self, resource: Resource, namespace: str, name: str, obj: Mapping[str, Any]
    ) -> dict[str, Any]:
        key = f"{namespace}/{name}"
        with self._lock:
            table = self._tables[(resource.group, resource.plural)]
            current = table.objects.get(key)
            if current is None:
                raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')
            stored: dict[str, Any] = json.loads(json.dumps(obj))
            meta = stored.setdefault("metadata", {})
            sent = meta.get("resourceVersion")
            if not sent:  # custom resources refuse unconditional updates
                raise ApiError(
                    422,
                    "Invalid",
                    f'{resource.kind} "{name}" is invalid: metadata.resourceVersion: '
                    "Invalid value: 0x0: must be specified for an update",
                )
            if sent != current["metadata"]["resourceVersion"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {resource.plural} "{name}": '
                    "the object has been modified; please apply your changes to the latest version",
                )
            self.rv += 1
            meta["uid"] = current["metadata"]["uid"]
            meta["resourceVersion"] = str(self.rv)
            table.objects[key] = stored
            table.encoded.pop(key, None)
        return stored

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any]:
        table = self._tables[(resource.group, resource.plural)]
        obj = table.objects.get(f"{namespace}/{name}")
        if obj is None:
            group = f".{resource.group}" if resource.group else ""
            raise ApiError(
                404,
                "NotFound",
                f'{resource.plural}{group} "{name}" not found',
                {"name": name, "group": resource.group, "kind": resource.plural},
            )
        return obj

    def objects(self, resource: Resource) -> list[dict[str, Any]]:
        table = self._tables[(resource.group, resource.plural)]
        return [table.objects[k] for k in sorted(table.keys)]

    def list_page(self, resource: Resource, namespace: str | None, query: Mapping[str, str]) -> Page:
        table = self._tables[(resource.group, resource.plural)]
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""))
        limit = int(query.get("limit") or 0)
        with self._lock:
            rv = self.rv
            if table.unsorted:
                table.keys.sort()
                table.unsorted = False
            keys = table.keys
            start = bisect.bisect_left(keys, f"{namespace}/") if namespace is not None else 0
            if query.get("continue"):
                rv, after = decode_continue(query["continue"])
                start = bisect.bisect_right(keys, after)
            items: list[bytes] = []
            index = start
            while index < len(keys) and (limit <= 0 or len(items) < limit):
                key = keys[index]
                index += 1
                if namespace is not None and not key.startswith(f"{namespace}/"):
                    break
                obj = table.objects[key]
                if self._selected(obj, labels, fields):
                    items.append(self._encoded(table, key, obj))
            more = index < len(keys) and (namespace is None or keys[index].startswith(f"{namespace}/"))
            token = encode_continue(rv, keys[index - 1]) if more and limit > 0 else ""
            remaining = None
            if token and not labels and not fields:
                end = bisect.bisect_left(keys, f"{namespace}0") if namespace is not None else len(keys)
                remaining = end - index
        return Page(items, rv, token, remaining)

    @staticmethod
    def _selected(
        obj: Mapping[str, Any],
        labels: list[tuple[str, str, frozenset[str]]],
        fields: list[tuple[str, bool, str]],
    ) -> bool:
        meta = obj.get("metadata", {})
        if labels and not labels_match(meta.get("labels") or {}, labels):
            return False
        for name, equal, value in fields:
            actual = meta.get(name.partition(".")[2], "")
            if (actual == value) != equal:
                return False
        return True

    @staticmethod
    def _encoded(table: _Table, key: str, obj: Mapping[str, Any]) -> bytes:
        cached = table.encoded.get(key)
        if cached is None:
            item = dict(obj)
            if table.resource.builtin:
                item.pop("apiVersion", None)
                item.pop("kind", None)
            cached = json.dumps(item, separators=(",", ":")).encode()
            table.encoded[key] = cached
        return cached

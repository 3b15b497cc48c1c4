"""ConfigMaps the audited objects reference, read one by one with `get` and cached.

Only the ConfigMaps an object names (`env[].valueFrom.configMapKeyRef`, `envFrom[].configMapRef`) are read,
so the audit needs `get` on configmaps, never `list`, and never touches Secrets.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

from kubegap.audit.retry import Api
from kubegap.audit.transport import ApiFailure, TransportError
from kubegap.evaluate import Context

log = logging.getLogger(__name__)

_REF_KEYS = ("configMapKeyRef", "configMapRef")


def referenced(obj: Mapping[str, Any]) -> set[str]:
    """Names of the ConfigMaps an object's env refers to, wherever its pod templates sit."""
    names: set[str] = set()
    stack: list[Any] = [obj.get("spec")]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            for key, item in value.items():
                if key in _REF_KEYS and isinstance(item, Mapping) and isinstance(item.get("name"), str):
                    names.add(item["name"])
                elif isinstance(item, (Mapping, list)):
                    stack.append(item)
        elif isinstance(value, list):
            stack.extend(v for v in value if isinstance(v, (Mapping, list)))
    return names


class ConfigMapResolver:
    """Builds the evaluation Context of an object; remembers the last `capacity` ConfigMaps it read."""

    def __init__(self, api: Api, capacity: int = 2048) -> None:
        self.api, self.capacity = api, capacity
        self._cache: OrderedDict[tuple[str, str], Mapping[str, str] | None] = OrderedDict()
        self.problems: list[str] = []
        self.reads = 0

    def context_for(self, obj: Mapping[str, Any]) -> Context:
        meta = obj.get("metadata")
        namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
        if not isinstance(namespace, str) or not namespace:
            return Context()
        found = {}
        for name in sorted(referenced(obj)):
            data = self._get(namespace, name)
            if data is not None:
                found[(namespace, name)] = data
        return Context(configmaps=found)

    def _get(self, namespace: str, name: str) -> Mapping[str, str] | None:
        key = (namespace, name)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        data = self._fetch(namespace, name)
        self._cache[key] = data
        if len(self._cache) > self.capacity:
            self._cache.popitem(last=False)
        return data

    def _fetch(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """The ConfigMap's data; None when absent or unreadable (the engine then reports it unresolved)."""
        self.reads += 1
        try:
            doc = self.api.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        except ApiFailure as failure:
            if failure.code != 404:
                verb = " (get configmaps)" if failure.code == 403 else ""
                self._problem(f"configmap {namespace}/{name}: {failure.code} {failure.reason}{verb}")
            return None
        except (TransportError, ValueError) as exc:
            self._problem(f"configmap {namespace}/{name}: {exc}")
            return None
        data = doc.get("data") if isinstance(doc, Mapping) else None
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, Mapping) else {}

    def _problem(self, text: str) -> None:
        log.warning("cannot resolve %s", text)
        self.problems.append(text)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._cache)

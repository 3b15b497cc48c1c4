"""Which supported kinds the cluster serves, at which version (API discovery).

A kind whose group or resource is absent is "not installed" (skipped, not a gap). A discovery request that
fails (forbidden, an aggregated API down) leaves the kinds behind it "not evaluated" with the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubegap.audit.retry import Api
from kubegap.audit.transport import ApiFailure, TransportError
from kubegap.workloads import KindInfo

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServedKind:
    info: KindInfo
    version: str

    @property
    def api_version(self) -> str:
        return f"{self.info.group}/{self.version}" if self.info.group else self.version

    @property
    def resource(self) -> str:
        """`plural.group`, the name RBAC rules and kubectl use."""
        return f"{self.info.plural}.{self.info.group}" if self.info.group else self.info.plural

    def collection(self, namespace: str | None) -> str:
        base = f"/apis/{self.info.group}/{self.version}" if self.info.group else f"/api/{self.version}"
        where = f"/namespaces/{namespace}" if namespace is not None and self.info.namespaced else ""
        return f"{base}{where}/{self.info.plural}"


@dataclass(frozen=True, slots=True)
class Unserved:
    info: KindInfo
    installed: bool  # False: "not installed"; True: served perhaps, but discovery failed
    reason: str


def discover(api: Api, kinds: Iterable[KindInfo]) -> tuple[list[ServedKind], list[Unserved]]:
    served: list[ServedKind] = []
    unserved: list[Unserved] = []
    resources = _ResourceLists(api)
    groups = resources.groups()
    for info in kinds:
        if not info.group:
            versions: list[str] = ["v1"]
        elif isinstance(groups, str):
            unserved.append(Unserved(info, True, groups))
            continue
        else:
            versions = groups.get(info.group, [])
        candidates = [v for v in info.versions if v in versions]
        if not candidates:
            unserved.append(Unserved(info, False, "not installed"))
            continue
        found = _first_serving(resources, info, candidates)
        if isinstance(found, ServedKind):
            served.append(found)
        else:
            unserved.append(found)
    return served, unserved


def _first_serving(resources: _ResourceLists, info: KindInfo, versions: list[str]) -> ServedKind | Unserved:
    failure: str | None = None
    for version in versions:
        names = resources.names(info.group, version)
        if isinstance(names, str):
            failure = failure or names
        elif info.plural in names and names[info.plural] == info.kind:
            return ServedKind(info, version)
    if failure is not None:
        return Unserved(info, True, failure)
    return Unserved(info, False, "not installed")


class _ResourceLists:
    """Discovery documents fetched once each; a failed fetch is remembered as its reason text."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._lists: dict[tuple[str, str], dict[str, str] | str] = {}

    def groups(self) -> dict[str, list[str]] | str:
        doc = self._fetch("/apis")
        if isinstance(doc, str):
            return doc
        out: dict[str, list[str]] = {}
        for group in doc.get("groups") or ():
            if isinstance(group, Mapping) and isinstance(group.get("name"), str):
                out[group["name"]] = [
                    str(v.get("version")) for v in group.get("versions") or () if isinstance(v, Mapping)
                ]
        return out

    def names(self, group: str, version: str) -> dict[str, str] | str:
        """Resource name -> kind for one group version (subresources left out)."""
        key = (group, version)
        if key not in self._lists:
            doc = self._fetch(f"/apis/{group}/{version}" if group else f"/api/{version}")
            if isinstance(doc, str):
                self._lists[key] = doc
            else:
                self._lists[key] = {
                    str(r.get("name")): str(r.get("kind"))
                    for r in doc.get("resources") or ()
                    if isinstance(r, Mapping) and "/" not in str(r.get("name"))
                }
        return self._lists[key]

    def _fetch(self, path: str) -> Mapping[str, Any] | str:
        try:
            doc = self.api.get(path)
        except ApiFailure as failure:
            if failure.code == 404:
                return {}
            log.warning("discovery of %s failed: %s", path, failure)
            verb = " (get)" if failure.code == 403 else ""
            return f"discovery failed: {path}: {failure.code} {failure.reason}{verb}"
        except (TransportError, ValueError) as exc:
            log.warning("discovery of %s failed: %s", path, exc)
            return f"discovery failed: {path}: {exc}"
        return doc if isinstance(doc, Mapping) else {}

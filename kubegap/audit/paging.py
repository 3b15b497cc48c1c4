"""Page-by-page lists with `limit` and `continue`, so that memory holds one page at a time.

An expired continue token (410) restarts the list from the first page once; objects already handed out are
recognised by uid and not handed out again, so a restart neither loses nor double-counts what still exists.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kubegap.audit.discovery import ServedKind
from kubegap.audit.retry import Api
from kubegap.audit.transport import ApiFailure

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ListScope:
    namespace: str | None = None  # None: cluster-wide
    label_selector: str = ""
    field_selector: str = ""


class Lister:
    """Lists one kind in one scope; `restarts` tells how often an expired token forced a new list."""

    max_restarts = 1

    def __init__(self, api: Api, kind: ServedKind, scope: ListScope, page_size: int) -> None:
        self.api, self.kind, self.scope, self.page_size = api, kind, scope, page_size
        self.restarts = 0
        self.pages_read = 0

    def pages(self) -> Iterator[list[dict[str, Any]]]:
        path = self.kind.collection(self.scope.namespace)
        token: str | None = None
        seen: set[str] = set()
        while True:
            try:
                doc = self.api.get(path, self._query(token))
            except ApiFailure as failure:
                if failure.code == 410 and token and self.restarts < self.max_restarts:
                    self.restarts += 1
                    log.warning("%s: continue token expired; listing again from the start", path)
                    token = None
                    continue
                raise
            self.pages_read += 1
            yield self._fresh(doc, seen)
            meta = doc.get("metadata") if isinstance(doc, Mapping) else None
            token = meta.get("continue") if isinstance(meta, Mapping) else None
            if not token:
                return

    def _query(self, token: str | None) -> list[tuple[str, str]]:
        query = [("limit", str(self.page_size))]
        if self.scope.label_selector:
            query.append(("labelSelector", self.scope.label_selector))
        if self.scope.field_selector:
            query.append(("fieldSelector", self.scope.field_selector))
        if token:
            query.append(("continue", token))
        return query

    def _fresh(self, doc: Any, seen: set[str]) -> list[dict[str, Any]]:
        """The page's objects not handed out before, each with its apiVersion and kind.

        Built-in types omit apiVersion and kind on list items; the engine matches on them.
        """
        items = doc.get("items") if isinstance(doc, Mapping) else None
        out: list[dict[str, Any]] = []
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, dict):
                continue
            meta = item.get("metadata")
            meta = meta if isinstance(meta, Mapping) else {}
            key = str(meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}")
            if key in seen:
                continue
            seen.add(key)
            item["apiVersion"] = self.kind.api_version
            item["kind"] = self.kind.info.kind
            out.append(item)
        return out


def ahead(pages: Iterator[T]) -> Iterator[T]:
    """The same pages, the next one fetched in a thread while the caller evaluates this one: the audit waits
    on the API server only when evaluating a page is quicker than fetching the next. At most one page waits
    beside the one in hand, so memory stays one page deep. An error fetching a page is raised where that
    page would have come. The thread is a daemon: an interrupted audit does not wait for a fetch to end."""
    box: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)

    def fetch() -> None:
        try:
            for page in pages:
                box.put((True, page))
        except BaseException as exc:  # handed to the caller, raised there
            box.put((False, exc))
            return
        box.put((False, None))

    threading.Thread(target=fetch, name="kubegap-page-fetch", daemon=True).start()
    while True:
        more, item = box.get()
        if not more:
            if item is not None:
                raise item
            return
        yield item

"""`--write-policyreports`: the audit's only write to the cluster (it leaves read-only mode).

Each report is created, or replaced when one of the same name exists (custom resources refuse updates
without the current resourceVersion, so it is read first). Failures are returned, never raised: a report
that could not be written makes the run incomplete, it does not hide the findings.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kubegap.audit.retry import Api
from kubegap.audit.transport import ApiFailure, TransportError
from kubegap.reports.policyreport import API_VERSION

log = logging.getLogger(__name__)

_BASE = f"/apis/{API_VERSION}"


def write_reports(api: Api, reports: Iterable[Mapping[str, Any]]) -> tuple[int, list[str]]:
    """(reports written, problems)."""
    try:
        api.get(_BASE)
    except ApiFailure as failure:
        if failure.code == 404:
            return 0, [f"policyreports not written: the {API_VERSION} CRDs are not installed"]
        return 0, [f"policyreports not written: discovery of {_BASE}: {failure.code} {failure.reason}"]
    except TransportError as exc:
        return 0, [f"policyreports not written: {exc}"]
    written, problems = 0, []
    for report in reports:
        try:
            _put(api, report)
            written += 1
        except (ApiFailure, TransportError) as exc:
            problems.append(f"policyreport {_name(report)} not written: {exc}")
    return written, problems


def _name(report: Mapping[str, Any]) -> str:
    meta = report["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def _put(api: Api, report: Mapping[str, Any]) -> None:
    meta = report["metadata"]
    namespace = meta.get("namespace")
    collection = (
        f"{_BASE}/namespaces/{namespace}/policyreports" if namespace else f"{_BASE}/clusterpolicyreports"
    )
    for attempt in (1, 2):
        try:
            current = api.get(f"{collection}/{meta['name']}")
        except ApiFailure as failure:
            if failure.code != 404:
                raise
            api.send("POST", collection, report)
            return
        body = dict(report)
        body["metadata"] = {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}
        try:
            api.send("PUT", f"{collection}/{meta['name']}", body)
            return
        except ApiFailure as failure:
            if failure.code != 409 or attempt == 2:  # someone else wrote it meanwhile: read again once
                raise
    log.debug("policyreport %s written", _name(report))

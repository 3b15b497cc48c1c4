"""The webhook says what `kubegap lint` says: for every policy example, Warn mode warns for exactly the
findings lint reports on the same object, and enforce mode denies exactly when one of them is high.

Each workload is linted on its own, as the API server sends it alone: a ConfigMap in the same example file
resolves env for lint of the whole file, but the webhook reads nothing from the cluster, so it is compared
with lint of the object by itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from kubegap import manifests
from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.findings import Finding, Result, Severity
from kubegap.kinds import kind_info
from kubegap.lint import lint_documents
from kubegap.webhook.admission import Reviewer
from kubegap.webhook.messages import MAX_WARNINGS, sort_key

from .conftest import PRICED_HIGH
from .test_admission import _check_contract

MakeReviewer = Callable[..., Reviewer]
ENGINE = build_engine(Settings(impact=PRICED_HIGH))


def _examples() -> list[tuple[str, manifests.Document]]:
    root = Path(str(files("kubegap.policies")))
    found = []
    for path in sorted(root.glob("*/examples/*.yaml")):
        for doc in manifests.read([str(path)]):
            if doc.obj is not None and kind_info(doc.obj) is not None:
                found.append((f"{path.parent.parent.name}/{path.name}#{doc.index}", doc))
    return found


EXAMPLES = _examples()


def _review(obj: dict[str, Any]) -> dict[str, Any]:
    api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
    group, _, version = api_version.rpartition("/")
    metadata = obj.get("metadata") or {}
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "operation": "CREATE",
        "name": metadata.get("name", ""),
        "object": obj,
        "userInfo": {"username": "tester", "groups": ["system:authenticated"]},
        "dryRun": False,
    }
    if metadata.get("namespace"):
        request["namespace"] = metadata["namespace"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _lint(doc: manifests.Document) -> list[Finding]:
    return sorted(lint_documents([doc], ENGINE).findings, key=sort_key)


def test_there_are_examples_to_compare() -> None:
    assert len(EXAMPLES) >= 6, "policy examples were not found where the package ships them"


@pytest.mark.parametrize(("name", "doc"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_warn_mode_warns_for_exactly_what_lint_reports(
    name: str, doc: manifests.Document, reviewer: MakeReviewer
) -> None:
    assert doc.obj is not None
    review = _review(dict(doc.obj))
    response = _check_contract(reviewer().review(review).review, review["request"]["uid"])
    linted = _lint(doc)
    shown = [f for f in linted if f.result in (Result.FAIL, Result.ERROR)]
    assert response["allowed"] is True
    warnings = response.get("warnings", [])
    assert len(warnings) == min(len(shown), MAX_WARNINGS) + (len(shown) > MAX_WARNINGS)
    fails = [f for f in shown if f.result is Result.FAIL]
    errors = [f for f in shown if f.result is Result.ERROR]
    for warning, finding in zip(warnings, (*fails, *errors), strict=False):
        assert warning.startswith(f"{finding.policy}/{finding.rule}"), (warning, finding)
    annotations = response.get("auditAnnotations", {})
    for key, result in (("warned", Result.FAIL), ("errors", Result.ERROR), ("exempted", Result.SKIP)):
        ids = {f"{f.policy}/{f.rule}" for f in linted if f.result is result}
        assert set(filter(None, annotations.get(key, "").split(","))) == ids, key


@pytest.mark.parametrize(("name", "doc"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_enforce_mode_denies_exactly_when_lint_finds_something_high(
    name: str, doc: manifests.Document, reviewer: MakeReviewer
) -> None:
    assert doc.obj is not None
    review = _review(dict(doc.obj))
    response = _check_contract(
        reviewer({"preset": "enforce"}).review(review).review, review["request"]["uid"]
    )
    high = [f for f in _lint(doc) if f.result is Result.FAIL and f.severity >= Severity.HIGH]
    assert response["allowed"] is (not high)
    for finding in high[:1]:
        assert f"{finding.policy}/{finding.rule}" in response["status"]["message"]

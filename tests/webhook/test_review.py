"""decode(): what the API server may send, and every malformed body answered with a clear BadReview."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubegap.webhook.review import API_VERSION, KIND, BadReview, answer, decode


def _review(**request: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE",
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
    }
    base.update(request)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "request": {k: v for k, v in base.items() if v is not ...},
    }


def _body(document: Any) -> bytes:
    return json.dumps(document).encode()


BAD = [
    ("empty", b"", "empty"),
    ("whitespace", b" \n ", "empty"),
    ("not json", b"<xml/>", "not JSON"),
    ("not utf-8", b"\xff\xfe{", "not JSON"),
    ("array", b"[]", "not a JSON object"),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("huge integer", b'{"a": ' + b"9" * 10_000 + b"}", "number out of range"),
    (
        "100,000-digit integer",
        _body(_review())[:-2] + b', "n": ' + b"9" * 100_000 + b"}}",
        "number out of range",
    ),
    ("integer past float64", b'{"a": ' + b"9" * 400 + b"}", "number out of range"),
    ("v1beta1", _body({**_review(), "apiVersion": "admission.k8s.io/v1beta1"}), "expected apiVersion"),
    ("wrong kind", _body({**_review(), "kind": "ConversionReview"}), "expected apiVersion"),
    ("no request", _body({"apiVersion": API_VERSION, "kind": KIND}), "request is missing"),
    (
        "request not object",
        _body({"apiVersion": API_VERSION, "kind": KIND, "request": []}),
        "request is missing",
    ),
    ("no uid", _body(_review(uid=...)), "request.uid"),
    ("empty uid", _body(_review(uid="")), "request.uid"),
    ("uid not string", _body(_review(uid=7)), "request.uid"),
    ("no kind", _body(_review(kind=...)), "request.kind"),
    ("kind without group", _body(_review(kind={"version": "v1", "kind": "Pod"})), "request.kind"),
    ("no operation", _body(_review(operation=...)), "request.operation"),
    ("object is a list", _body(_review(object=[1])), "request.object"),
    ("oldObject is a string", _body(_review(oldObject="x")), "request.oldObject"),
    ("namespace not string", _body(_review(namespace=3)), "request.namespace"),
]


@pytest.mark.parametrize(("case", "body", "reason"), BAD, ids=[c[0] for c in BAD])
def test_malformed_bodies_are_refused_with_a_reason(case: str, body: bytes, reason: str) -> None:
    with pytest.raises(BadReview, match=reason):
        decode(body)


GOOD = [
    ("create", _review()),
    ("delete with null object", _review(operation="DELETE", object=None, oldObject={"kind": "Pod"})),
    ("unknown fields kept", {**_review(), "extra": {"future": True}}),
    ("dry run with options", _review(dryRun=True, options={"kind": "CreateOptions"})),
]


@pytest.mark.parametrize(("case", "document"), GOOD, ids=[c[0] for c in GOOD])
def test_well_formed_reviews_decode_unchanged(case: str, document: dict[str, Any]) -> None:
    assert decode(_body(document)) == document


def test_duplicate_keys_keep_the_last_value_as_the_api_server_does() -> None:
    body = _body(_review()).replace(b'"operation": "CREATE"', b'"operation": "DELETE", "operation": "UPDATE"')
    assert decode(body)["request"]["operation"] == "UPDATE"


def test_answer_has_the_v1_kind_and_no_patch() -> None:
    reply = answer({"uid": "u", "allowed": True})
    assert reply == {"apiVersion": API_VERSION, "kind": KIND, "response": {"uid": "u", "allowed": True}}

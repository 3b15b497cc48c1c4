"""The test harness itself: the sink API server's protobuf reader, merge patches and label selectors."""

from __future__ import annotations

import base64
import json
import urllib.request
from typing import Any

import pytest

from chart.protowire import MAGIC, ProtobufError, decode
from chart.sinkapi import SinkAPIServer, merge_patch, selector_matches


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _entry(number: int, key: str, value: bytes) -> bytes:
    return _field(number, _field(1, key.encode()) + _field(2, value))


def _envelope(kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, b"v1") + _field(2, kind.encode())
    return MAGIC + _field(1, type_meta) + _field(2, raw)


def test_decodes_the_release_secret() -> None:
    meta = _field(1, b"sh.helm.release.v1.kg.v1") + _field(3, b"ns") + _entry(11, "owner", b"helm")
    meta += _entry(11, "name", b"kg")
    secret = _field(1, meta) + _entry(2, "release", b"\x1f\x8b\x00binary") + _field(3, b"helm.sh/release.v1")
    secret += _varint(5 << 3) + _varint(1)  # immutable: true (a varint field)
    decoded = decode(_envelope("Secret", secret))
    assert decoded["metadata"] == {
        "name": "sh.helm.release.v1.kg.v1",
        "namespace": "ns",
        "labels": {"owner": "helm", "name": "kg"},
    }
    assert base64.b64decode(decoded["data"]["release"]) == b"\x1f\x8b\x00binary"
    assert decoded["type"] == "helm.sh/release.v1"
    assert decoded["immutable"] is True


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"kind": "Secret"}', "prefix"),
        (_envelope("ConfigMap", b""), "ConfigMap"),
        (MAGIC + b"\x0a\xff", "truncated"),
    ],
)
def test_refuses_what_it_cannot_read(body: bytes, problem: str) -> None:
    with pytest.raises(ProtobufError, match=problem):
        decode(body)


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [
        ({"a": 1, "b": {"c": 2}}, {"b": {"d": 3}}, {"a": 1, "b": {"c": 2, "d": 3}}),
        ({"a": 1, "b": 2}, {"b": None}, {"a": 1}),
        ({"l": [1, 2]}, {"l": [3]}, {"l": [3]}),
        ({"a": 1}, {"$setElementOrder/x": [], "a": 2}, {"a": 2}),
    ],
)
def test_merge_patch(target: Any, patch: Any, result: Any) -> None:
    assert merge_patch(target, patch) == result


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("owner=helm", True),
        ("owner=helm,name=kg", True),
        ("name=other", False),
        ("name!=kg", False),
    ],
)
def test_label_selector(selector: str, matches: bool) -> None:
    assert selector_matches(selector, {"owner": "helm", "name": "kg"}) is matches


def test_serves_discovery_and_stores_writes() -> None:
    with SinkAPIServer(kube_version="v1.30.2", cert_manager=True) as sink:
        version = json.load(urllib.request.urlopen(f"{sink.url}/version", timeout=10))
        assert (version["major"], version["minor"]) == ("1", "30")
        groups = json.load(urllib.request.urlopen(f"{sink.url}/apis", timeout=10))
        assert "cert-manager.io" in {g["name"] for g in groups["groups"]}
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).encode()
        request = urllib.request.Request(
            f"{sink.url}/api/v1/namespaces/ns/configmaps",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201
        stored = sink.objects()["/api/v1/namespaces/ns/configmaps/c"]
        assert stored["metadata"]["namespace"] == "ns"
        assert [(r.method, r.path) for r in sink.requests()][-1] == (
            "POST",
            "/api/v1/namespaces/ns/configmaps",
        )

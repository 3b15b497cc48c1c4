"""Decode the one protobuf body Helm sends: the Secret that holds a release record.

Helm's release storage writes Secrets through a typed client that speaks protobuf and does not fall back
to JSON, so the sink API server must read that encoding. Only the fields Helm sets are decoded (name,
namespace, labels, annotations, data, type); the field numbers are those of k8s.io/api core/v1 Secret and
apimachinery ObjectMeta. Standard library only.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

MAGIC = b"k8s\x00"  # prefix of every protobuf-encoded Kubernetes object (runtime.Unknown envelope)


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs; length-delimited values as bytes, the rest as integers."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            yield number, data[pos : pos + length]
            pos += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            yield number, int.from_bytes(data[pos : pos + size], "little")
            pos += size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


def _map_entry(data: bytes) -> tuple[str, bytes]:
    key, value = "", b""
    for number, raw in _fields(data):
        if isinstance(raw, bytes) and number == 1:
            key = raw.decode()
        elif isinstance(raw, bytes) and number == 2:
            value = raw
    return key, value


def _object_meta(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    scalar = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    for number, raw in _fields(data):
        if not isinstance(raw, bytes):
            continue
        if number in scalar:
            meta[scalar[number]] = raw.decode()
        elif number in (11, 12):
            key, value = _map_entry(raw)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = value.decode()
    return meta


def _secret(data: bytes) -> dict[str, Any]:
    secret: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {}}
    for number, raw in _fields(data):
        if not isinstance(raw, bytes):
            if number == 5:
                secret["immutable"] = bool(raw)
            continue
        if number == 1:
            secret["metadata"] = _object_meta(raw)
        elif number == 2:
            key, value = _map_entry(raw)
            secret.setdefault("data", {})[key] = base64.b64encode(value).decode()
        elif number == 3:
            secret["type"] = raw.decode()
    return secret


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded Secret; ProtobufError for anything else."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf prefix")
    kind, raw = "", b""
    for number, value in _fields(body[len(MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            kind = next((v.decode() for n, v in _fields(value) if n == 2 and isinstance(v, bytes)), "")
        elif number == 2 and isinstance(value, bytes):
            raw = value
    if kind != "Secret":
        raise ProtobufError(f"cannot decode kind {kind!r}")
    return _secret(raw)

"""The AdmissionReview wire format (admission.k8s.io/v1) and the checks on what the API server sends.

Only v1 is spoken: v1beta1 responses were never checked by the API server for a matching uid or kind, so
a webhook registered for v1 only gets the stricter contract (research: reliability-security.md §1.6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

from kubegap import integers
from kubegap.errors import KubegapError

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
# Two objects of at most 3 MiB each (new and old, on UPDATE) plus request metadata: the same cap as
# controller-runtime, so a legitimate UPDATE of the largest object etcd accepts still fits.
MAX_BODY_BYTES = 7 * 1024 * 1024


class GroupVersionKind(TypedDict):
    group: str
    version: str
    kind: str


class UserInfo(TypedDict, total=False):
    username: str
    uid: str
    groups: list[str]
    extra: dict[str, list[str]]


class AdmissionRequest(TypedDict):
    uid: str
    kind: GroupVersionKind
    operation: str
    namespace: NotRequired[str]
    name: NotRequired[str]
    subResource: NotRequired[str]
    userInfo: NotRequired[UserInfo]
    object: NotRequired[Mapping[str, Any] | None]
    oldObject: NotRequired[Mapping[str, Any] | None]
    dryRun: NotRequired[bool]
    options: NotRequired[Mapping[str, Any] | None]


class Status(TypedDict):
    status: Literal["Failure"]
    code: int
    reason: str
    message: str


class AdmissionResponse(TypedDict):
    uid: str
    allowed: bool
    status: NotRequired[Status]
    warnings: NotRequired[list[str]]
    auditAnnotations: NotRequired[dict[str, str]]


class AdmissionReview(TypedDict):
    apiVersion: str
    kind: str
    request: NotRequired[AdmissionRequest]
    response: NotRequired[AdmissionResponse]


class BadReview(KubegapError):
    """The body is not an AdmissionReview this webhook can answer: HTTP 400, never a guessed answer."""


def decode(body: bytes) -> AdmissionReview:
    """Parse and check a request body; BadReview (HTTP 400) with a short reason on anything malformed."""
    if not body.strip():
        raise BadReview("request body is empty")
    try:
        document = integers.loads(body)
    except RecursionError as err:
        raise BadReview("request body is nested too deeply") from err
    except integers.NumberError as err:
        raise BadReview(f"request body holds a number out of range: {err}") from err
    except (ValueError, UnicodeDecodeError) as err:
        raise BadReview(f"request body is not JSON: {_first_line(err)}") from err
    return _checked(document)


def _checked(document: Any) -> AdmissionReview:
    if not isinstance(document, dict):
        raise BadReview("request body is not a JSON object")
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if api_version != API_VERSION or kind != KIND:
        raise BadReview(f"expected apiVersion {API_VERSION} kind {KIND}, got {api_version!r} {kind!r}")
    request = document.get("request")
    if not isinstance(request, dict):
        raise BadReview("request is missing or not an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid is missing or empty")
    gvk = request.get("kind")
    if not isinstance(gvk, dict) or not all(
        isinstance(gvk.get(k), str) for k in ("group", "version", "kind")
    ):
        raise BadReview("request.kind must be an object with string group, version and kind")
    if not isinstance(request.get("operation"), str):
        raise BadReview("request.operation is missing or not a string")
    for field in ("object", "oldObject"):
        if request.get(field) is not None and not isinstance(request[field], dict):
            raise BadReview(f"request.{field} must be an object or null")
    for field in ("namespace", "name", "subResource"):
        if request.get(field) is not None and not isinstance(request[field], str):
            raise BadReview(f"request.{field} must be a string")
    review: AdmissionReview = document  # type: ignore[assignment]  # checked field by field above
    return review


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0][:200] if str(err) else type(err).__name__


def answer(response: AdmissionResponse) -> AdmissionReview:
    """The reply body: the same version and kind as the request; a validating webhook never patches."""
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}

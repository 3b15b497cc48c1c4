"""What the audit needs from an API connection, independent of the client library behind it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubegap import integers
from kubegap.errors import KubegapError

Query = Sequence[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as Kubernetes reads JSON (kubegap.integers); UndecodableReply when it is not JSON."""
        try:
            return integers.loads(self.body)
        except (ValueError, RecursionError) as err:
            reason = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
            raise UndecodableReply(
                f"the API server's reply ({self.status}) cannot be decoded: {reason}"
            ) from None


class Transport(Protocol):
    def request(
        self, method: str, path: str, query: Query = (), body: Mapping[str, Any] | None = None
    ) -> Reply:
        """One HTTP exchange; raises TransportError when no reply came (reset, refused, timed out)."""
        ...


class TransportError(KubegapError):
    """The connection failed before a reply arrived."""


class UndecodableReply(TransportError):
    """A reply that is not the JSON it should be: what it held is not evaluated, the audit goes on."""


class ApiFailure(KubegapError):
    """The API server answered with an error (after any retries)."""

    def __init__(self, code: int, reason: str, message: str, method: str = "GET", path: str = "") -> None:
        super().__init__(
            f"{method} {path}: {code} {reason}: {message}" if path else f"{code} {reason}: {message}"
        )
        self.code, self.reason, self.detail = code, reason, message
        self.method, self.path = method, path

    @classmethod
    def of(cls, reply: Reply, method: str, path: str) -> ApiFailure:
        """Read the Status body when there is one; servers and proxies may send anything."""
        reason, message = "", reply.body[:200].decode("utf-8", "replace").strip()
        try:
            status = reply.json()
        except UndecodableReply:
            status = None
        if isinstance(status, Mapping):
            reason = str(status.get("reason") or "")
            message = str(status.get("message") or message)
        return cls(reply.status, reason or _PHRASES.get(reply.status, "Error"), message, method, path)


_PHRASES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}

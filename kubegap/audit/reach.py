"""One look at the API server before the audit: an unreachable cluster or a rejected token is said once.

Without it every discovery and list request fails on its own, and the report repeats one cause per kind.
"""

from __future__ import annotations

from kubegap.audit.retry import Api, RetryPolicy
from kubegap.audit.transport import ApiFailure, Transport, TransportError

HINT = "check --kubeconfig/--context"

# Fragments of urllib3/ssl/socket messages -> what a user can act on.
_CAUSES = (
    ("Connection refused", "connection refused"),
    ("timed out", "timed out"),
    ("CERTIFICATE_VERIFY_FAILED", "the server's TLS certificate is not trusted"),
    ("certificate verify failed", "the server's TLS certificate is not trusted"),
    ("Name or service not known", "host name not found"),
    ("nodename nor servname", "host name not found"),
    ("Temporary failure in name resolution", "host name not found"),
    ("Network is unreachable", "network unreachable"),
    ("No route to host", "no route to host"),
)


def problem(transport: Transport, host: str) -> str | None:
    """Why the audit cannot start (one line), or None. Other failures are left to the audit's coverage."""
    api = Api(transport, RetryPolicy(attempts=2))  # one retry: a blip is not a verdict
    try:
        api.get("/api")
    except TransportError as exc:
        return f"cannot reach {host}: {cause(str(exc))}; {HINT}"
    except ApiFailure as failure:
        if failure.code == 401:
            return f"{host} rejected the credentials (401 Unauthorized: token or certificate); {HINT}"
    except ValueError:  # not JSON: something answers that is not an API server
        return f"{host} does not answer as a Kubernetes API server; {HINT}"
    return None


def cause(text: str) -> str:
    return next((short for fragment, short in _CAUSES if fragment in text), text)

"""What the credentials could do: read-only by the identity, not only by kubegap's code.

A SelfSubjectRulesReview (authorization.k8s.io/v1) is the one request kubegap mcp sends that is not a GET:
it is a POST by protocol, but the API server evaluates and returns it without storing anything (the
review kinds only support `create`, and nothing is persisted). It lists the rules the caller holds in one
namespace, cluster-wide grants included.
https://kubernetes.io/docs/reference/access-authn-authz/authorization/#checking-api-access

Reported as risky: any write verb, any access to `secrets`, `pods/exec` (`get` on it is enough over
WebSockets: kubernetes/kubernetes#78741, #133515), and `impersonate`. Every
authenticated user holds `create` on the self-review kinds (the `system:basic-user` ClusterRole), so those
are not counted as writes. An `incomplete` review (webhook authorizers cannot enumerate rules) proves
nothing: such credentials are not called read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubegap import raw
from kubegap.audit.retry import Api
from kubegap.errors import KubegapError
from kubegap.mcp.models import AccessRecord, RiskyRule

PATH = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "*"})
# Granted to every authenticated user by system:basic-user; creating them reads, it stores nothing.
_SELF_REVIEWS = {
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
}


def review(api: Api, namespace: str) -> AccessRecord:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": namespace},
    }
    try:
        reply = api.send("POST", PATH, body)
    except (KubegapError, ValueError) as exc:
        return AccessRecord(
            checked=False, namespace=namespace, readOnly=False, incomplete=True, risky=[], error=str(exc)
        )
    status = raw.mapping(raw.mapping(reply).get("status"))
    risky = [r for rule in raw.items(status.get("resourceRules")) for r in _risky(raw.mapping(rule))]
    incomplete = status.get("incomplete") is True
    return AccessRecord(
        checked=True,
        namespace=namespace,
        readOnly=not risky and not incomplete,
        incomplete=incomplete,
        risky=risky,
        error=str(status.get("evaluationError")) if status.get("evaluationError") else None,
    )


def _strings(value: Any) -> list[str]:
    return [str(v) for v in raw.items(value)]


def _risky(rule: Mapping[str, Any]) -> list[RiskyRule]:
    verbs, groups, resources = _strings(rule.get("verbs")), _strings(rule.get("apiGroups")), []
    resources = _strings(rule.get("resources"))
    core = "" in groups or "*" in groups
    found: list[RiskyRule] = []

    def add(right: Any, chosen: list[str]) -> None:
        found.append(RiskyRule(right=right, verbs=chosen, apiGroups=groups, resources=resources))

    writes = [v for v in verbs if v in WRITE_VERBS]
    if writes and not _only_self_reviews(groups, resources):
        add("write", writes)
    if core and {"secrets", "*"} & set(resources) and verbs:
        add("secrets", verbs)
    if core and {"pods/exec", "pods/*", "*"} & set(resources) and {"create", "get", "*"} & set(verbs):
        add("pods/exec", verbs)
    if {"impersonate", "*"} & set(verbs):
        add("impersonate", [v for v in verbs if v in ("impersonate", "*")])
    return found


def _only_self_reviews(groups: list[str], resources: list[str]) -> bool:
    return bool(resources) and all((g, r) in _SELF_REVIEWS for g in groups for r in resources)


_PHRASES = {
    "write": "write",
    "secrets": "read secrets",
    "pods/exec": "exec into pods",
    "impersonate": "impersonate",
}


def describe(access: AccessRecord) -> str:
    """One line for logs and summaries."""
    if not access.checked:
        return f"access not checked: {access.error}"
    if access.readOnly:
        return f"read-only (SelfSubjectRulesReview in namespace {access.namespace})"
    held = {r.right for r in access.risky}
    rights = [phrase for right, phrase in _PHRASES.items() if right in held]
    parts = [f"can {', '.join(rights)}"] if rights else []
    if access.incomplete:
        parts.append("the rules review is incomplete, so read-only cannot be shown")
    return "NOT read-only: " + "; ".join(parts)

"""The chart's webhook can never lock anyone out, intercepts exactly kubegap's kinds, and stays up."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import celpy
import pytest

from chart.helm import Job, Step
from kubegap.kinds import SUPPORTED_KINDS
from kubegap.webhook import serve

WITH_WEBHOOK = ["defaults", "cert-manager", "enforce"]


def _webhook(step: Step) -> dict[str, Any]:
    (config,) = step.find("ValidatingWebhookConfiguration")
    (webhook,) = config["webhooks"]
    result: dict[str, Any] = webhook
    return result


def _pod_labels(step: Step) -> dict[str, str]:
    labels: dict[str, str] = step.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    return labels


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


@pytest.mark.parametrize(
    ("scenario", "failure_policy", "timeout"),
    [("defaults", "Ignore", 5), ("cert-manager", "Ignore", 5), ("enforce", "Fail", 3)],
)
def test_admission_contract(
    jobs: Mapping[str, Job], scenario: str, failure_policy: str, timeout: int
) -> None:
    webhook = _webhook(jobs[f"scenario:{scenario}"].last)
    assert webhook["failurePolicy"] == failure_policy
    assert webhook["timeoutSeconds"] == timeout
    assert webhook["sideEffects"] == "None"
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["matchPolicy"] == "Equivalent"
    assert webhook["clientConfig"]["service"]["path"] == "/validate"
    for rule in webhook["rules"]:
        assert rule["operations"] == ["CREATE", "UPDATE"]
        assert rule["apiVersions"] == ["*"]


@pytest.mark.parametrize(
    ("job", "namespace", "extra"),
    [
        ("scenario:defaults", "kubegap", set()),
        ("scenario:enforce", "kubegap", {"monitoring", "gpu-operator"}),
        ("elsewhere", "gpu-guard", set()),
    ],
)
def test_namespace_selector_always_excludes_system_and_own_namespace(
    jobs: Mapping[str, Job], job: str, namespace: str, extra: set[str]
) -> None:
    expressions = _webhook(jobs[job].last)["namespaceSelector"]["matchExpressions"]
    by_name = [e for e in expressions if e["key"] == "kubernetes.io/metadata.name"]
    assert len(by_name) == 1 and by_name[0]["operator"] == "NotIn"
    assert set(by_name[0]["values"]) == {"kube-system", "kube-node-lease", namespace} | extra
    assert {"key": "kubegap.dev/ignore", "operator": "DoesNotExist"} in expressions
    # Only the immutable name label and the documented opt-out label decide; nothing else by default.
    assert len(expressions) == 2


def test_extra_namespace_selector_expressions_are_added_not_substituted(jobs: Mapping[str, Job]) -> None:
    expressions = _webhook(jobs["extras"].last)["namespaceSelector"]["matchExpressions"]
    keys = [e["key"] for e in expressions]
    assert keys == ["kubernetes.io/metadata.name", "kubegap.dev/ignore", "team"]
    assert "monitoring" in expressions[0]["values"] and "kube-system" in expressions[0]["values"]


def test_rules_cover_exactly_the_supported_kinds_but_nodes(jobs: Mapping[str, Job]) -> None:
    expected = {
        (k.group, k.plural, k.namespaced) for k in SUPPORTED_KINDS if (k.group, k.kind) != ("", "Node")
    }
    rendered: set[tuple[str, str, bool]] = set()
    for rule in _webhook(jobs["scenario:defaults"].last)["rules"]:
        assert rule["scope"] in ("Namespaced", "Cluster")
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert "/" not in resource and "*" not in resource, resource
                rendered.add((group, resource, rule["scope"] == "Namespaced"))
    assert rendered == expected


def _match_conditions(webhook: Mapping[str, Any]) -> dict[str, celpy.Runner]:
    env = celpy.Environment()
    return {c["name"]: env.program(env.compile(c["expression"])) for c in webhook.get("matchConditions", [])}


_USER = {"username": "alice", "groups": ["system:authenticated"]}
_KUBELET = {"username": "system:node:gpu-1", "groups": ["system:nodes", "system:authenticated"]}
_OWNED = {"ownerReferences": [{"kind": "Job", "name": "train", "controller": True}]}
_REFERENCED = {"ownerReferences": [{"kind": "ConfigMap", "name": "x"}, {"kind": "Foo", "controller": False}]}


@pytest.mark.parametrize(
    ("user", "metadata", "sent"),
    [
        (_USER, {"name": "train"}, True),
        ({"username": "system:anonymous"}, {"name": "train"}, True),  # no groups at all
        (_USER, _REFERENCED, True),  # owner references that are not a controller
        (_USER, _OWNED, False),  # a Job's pod, a JobSet's job: the owner was checked
        (_KUBELET, {"name": "mirror"}, False),  # kubelet-written (mirror pods)
    ],
)
def test_match_conditions(jobs: Mapping[str, Job], user: Any, metadata: Any, sent: bool) -> None:
    programs = _match_conditions(_webhook(jobs["scenario:defaults"].last))
    assert set(programs) == {"not-from-nodes", "not-controller-owned"}
    activation = {
        "request": celpy.json_to_cel({"operation": "CREATE", "userInfo": user}),
        "object": celpy.json_to_cel({"apiVersion": "v1", "kind": "Pod", "metadata": metadata}),
    }
    results = [program.evaluate(activation) for program in programs.values()]
    # An evaluation error would reject the request under failurePolicy Fail: every result must be a bool.
    assert all(isinstance(r, celpy.celtypes.BoolType) for r in results), results
    assert all(results) is sent


def test_controller_owned_objects_are_sent_when_asked(jobs: Mapping[str, Job]) -> None:
    assert set(_match_conditions(_webhook(jobs["extras"].last))) == {"not-from-nodes"}


@pytest.mark.parametrize(
    "job", ["scenario:defaults", "scenario:cert-manager", "scenario:enforce", "elsewhere"]
)
def test_service_reference_reaches_the_webhook_container(jobs: Mapping[str, Job], job: str) -> None:
    step = jobs[job].last
    ref = _webhook(step)["clientConfig"]["service"]
    service = step.one("Service")
    assert (ref["name"], ref["namespace"]) == (service["metadata"]["name"], service["metadata"]["namespace"])
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == ref["port"]]  # the other is metrics
    assert port["port"] == 443 and port["name"] == "https"
    assert _selects(service["spec"]["selector"], _pod_labels(step))
    (container,) = step.one("Deployment")["spec"]["template"]["spec"]["containers"]
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert named[port["targetPort"]] == 8443


@pytest.mark.parametrize(("scenario", "replicas"), [("defaults", 2), ("enforce", 3)])
def test_high_availability(jobs: Mapping[str, Job], scenario: str, replicas: int) -> None:
    step = jobs[f"scenario:{scenario}"].last
    deployment = step.one("Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == replicas
    assert spec["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    pdb = step.one("PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert _selects(pdb["spec"]["selector"]["matchLabels"], _pod_labels(step))
    spread = spec["template"]["spec"]["topologySpreadConstraints"]
    assert [c["topologyKey"] for c in spread] == ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
    for constraint in spread:
        assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"
        assert _selects(constraint["labelSelector"]["matchLabels"], _pod_labels(step))


def test_priority_class_and_its_quota(jobs: Mapping[str, Job]) -> None:
    step = jobs["scenario:enforce"].last
    assert (
        step.one("Deployment")["spec"]["template"]["spec"]["priorityClassName"] == "system-cluster-critical"
    )
    quota = step.one("ResourceQuota")
    (expression,) = quota["spec"]["scopeSelector"]["matchExpressions"]
    assert expression == {
        "scopeName": "PriorityClass",
        "operator": "In",
        "values": ["system-cluster-critical"],
    }
    assert int(quota["spec"]["hard"]["pods"]) > 3  # room for the surge pod of a rolling update
    assert jobs["scenario:defaults"].last.find("ResourceQuota") == []


def test_container_runs_the_documented_serve_command(jobs: Mapping[str, Job]) -> None:
    spec = jobs["scenario:defaults"].last.one("Deployment")["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["command"] == ["kubegap"]
    assert container["args"] == [
        "serve",
        "--cert=/etc/kubegap/tls/tls.crt",
        "--key=/etc/kubegap/tls/tls.key",
        "--port=8443",
        "--config=/etc/kubegap/config.yaml",
        "--workers=2",
        "--threads=4",
        "--metrics-port=8080",
    ]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}
    # The server drains itself on SIGTERM; the grace period must cover the drain and the in-flight reviews.
    assert "lifecycle" not in container
    drain = argparse.ArgumentParser()
    serve.add_arguments(drain)
    drain_seconds = drain.parse_args(["--cert=c", "--key=k"]).drain_seconds
    assert spec["terminationGracePeriodSeconds"] > drain_seconds + serve.FINISH_SECONDS


@pytest.mark.parametrize("scenario", WITH_WEBHOOK)
def test_files_arrive_where_serve_reads_them_and_can_be_replaced(
    jobs: Mapping[str, Job], scenario: str
) -> None:
    step = jobs[f"scenario:{scenario}"].last
    spec = step.one("Deployment")["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    # subPath mounts never see updates: a rotated certificate would not reach the process.
    assert all("subPath" not in m for m in mounts.values())
    volume = next(v for v in spec["volumes"] if v["name"] == mounts["/etc/kubegap"]["name"])
    assert volume["projected"]["defaultMode"] == 0o440  # readable through fsGroup, by nobody else
    files: dict[str, tuple[str, str]] = {}
    for source in volume["projected"]["sources"]:
        kind, ref = next(iter(source.items()))
        for item in ref["items"]:
            files["/etc/kubegap/" + item["path"]] = (kind, ref["name"])
    assert files["/etc/kubegap/config.yaml"] == ("configMap", step.one("ConfigMap")["metadata"]["name"])
    tls_secret = "kubegap-webhook-tls"
    assert files["/etc/kubegap/tls/tls.crt"] == files["/etc/kubegap/tls/tls.key"] == ("secret", tls_secret)
    if scenario == "cert-manager":
        assert step.one("Certificate", "-serving")["spec"]["secretName"] == tls_secret
    else:
        assert step.one("Secret", "-tls")["type"] == "kubernetes.io/tls"


def test_config_changes_roll_the_pods(jobs: Mapping[str, Job]) -> None:
    def checksum(job: str) -> str:
        deployment = jobs[job].last.one("Deployment")
        value: str = deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return value

    assert checksum("scenario:defaults") == checksum("scenario:cert-manager")  # same config
    assert checksum("scenario:defaults") != checksum("scenario:enforce")


def test_network_policy_admits_only_the_webhook_and_metrics_ports(jobs: Mapping[str, Job]) -> None:
    step = jobs["scenario:enforce"].last
    policy = step.one("NetworkPolicy")["spec"]
    assert _selects(policy["podSelector"]["matchLabels"], _pod_labels(step))
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert policy["egress"] == []
    rule, metrics = policy["ingress"]
    assert rule["ports"] == [{"port": 8443, "protocol": "TCP"}]
    assert rule["from"] == [{"ipBlock": {"cidr": "10.0.0.0/8"}}]
    assert metrics == {"ports": [{"port": 8080, "protocol": "TCP"}]}  # metrics.networkPolicyFrom: any
    assert jobs["scenario:defaults"].last.find("NetworkPolicy") == []
    open_policy = jobs["extras"].last.one("NetworkPolicy")["spec"]
    assert open_policy["policyTypes"] == ["Ingress"] and "from" not in open_policy["ingress"][0]


def test_webhook_has_no_api_access(jobs: Mapping[str, Job]) -> None:
    step = jobs["scenario:defaults"].last
    spec = step.one("Deployment")["spec"]["template"]["spec"]
    account = step.one("ServiceAccount", "-webhook")
    assert spec["serviceAccountName"] == account["metadata"]["name"]
    assert spec["automountServiceAccountToken"] is False
    bound = {
        s["name"] for b in step.find("ClusterRoleBinding") + step.find("RoleBinding") for s in b["subjects"]
    }
    assert account["metadata"]["name"] not in bound


def test_audit_only_renders_no_webhook_part(jobs: Mapping[str, Job]) -> None:
    kinds = {o["kind"] for o in jobs["scenario:audit-only"].last.objects}
    assert kinds == {"ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "CronJob"}

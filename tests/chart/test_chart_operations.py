"""The webhook's operations in the chart: the plain metrics port, the optional ServiceMonitor, the
`helm test` hook (rendered here, and its script run against a real `kubegap serve`) and Chart.yaml."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from chart import pss
from chart.conftest import NAMESPACE
from chart.helm import CHART, REPO, Job

pytest.importorskip(
    "kubernetes_validate", reason="kubernetes-validate (offline OpenAPI schemas) is not installed"
)

from chart import openapi


def _container(job: Job, name: str = "webhook") -> dict[str, Any]:
    spec = job.last.one("Deployment", "-webhook")["spec"]["template"]["spec"]
    (container,) = (c for c in spec["containers"] if c["name"] == name)
    return container


def _service_ports(job: Job) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in job.last.one("Service", "-webhook")["spec"]["ports"]}


def test_a_plain_metrics_port_beside_the_tls_one_by_default(jobs: Mapping[str, Job]) -> None:
    job = jobs["scenario:defaults"]
    container = _container(job)
    assert "--metrics-port=8080" in container["args"]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"https": 8443, "metrics": 8080}
    ports = _service_ports(job)
    assert ports["metrics"] == {"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}
    assert ports["https"]["targetPort"] == "https"  # the admission endpoint stays TLS only
    assert job.last.find("ServiceMonitor") == []


def test_metrics_port_zero_leaves_only_the_tls_port(jobs: Mapping[str, Job]) -> None:
    job = jobs["metrics-port-off"]
    assert not any(a.startswith("--metrics-port") for a in _container(job)["args"])
    assert set(_service_ports(job)) == {"https"}
    assert [p["name"] for p in _container(job)["ports"]] == ["https"]


def test_the_service_monitor_scrapes_the_plain_port_of_the_webhook_service(jobs: Mapping[str, Job]) -> None:
    step = jobs["service-monitor"].last
    monitor = step.one("ServiceMonitor", "-webhook")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prom"
    spec = monitor["spec"]
    assert spec["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    service = step.one("Service", "-webhook")
    assert spec["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    (endpoint,) = spec["endpoints"]
    assert endpoint == {"port": "metrics", "path": "/metrics", "scheme": "http", "interval": "15s",
                        "scrapeTimeout": "10s"}  # fmt: skip
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    # The monitor selects the webhook Service alone: no other Service carries its labels.
    others = [s for s in step.find("Service") if s is not service]
    assert all(not spec["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items() for s in others)


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("service-monitor-without-crd", "Prometheus Operator"),
        ("service-monitor-without-port", "metrics.port"),
    ],
)
def test_a_service_monitor_that_cannot_work_fails_the_install(
    jobs: Mapping[str, Job], name: str, fragment: str
) -> None:
    error = jobs[name].last.error
    assert error is not None and fragment in error


def test_the_network_policy_admits_the_metrics_port_from_its_own_peers(jobs: Mapping[str, Job]) -> None:
    policy = jobs["extras"].last.one("NetworkPolicy", "-webhook")
    rules = {r["ports"][0]["port"]: r.get("from") for r in policy["spec"]["ingress"]}
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    assert rules == {8443: None, 8080: [monitoring]}


def _test_pod(job: Job) -> dict[str, Any]:
    (pod,) = [h for h in job.last.hooks if h["kind"] == "Pod"]
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert job.last.find("Pod") == []  # created by `helm test`, never by install
    return pod


@pytest.mark.parametrize("name", ["scenario:defaults", "scenario:cert-manager", "elsewhere"])
def test_the_helm_test_pod_calls_the_webhook_service_trusting_only_the_chart_s_ca(
    jobs: Mapping[str, Job], name: str
) -> None:
    job = jobs[name]
    pod = _test_pod(job)
    spec = pod["spec"]
    (container,) = spec["containers"]
    python, flag, script, url, ca_file = container["command"]
    assert (python, flag) == ("python", "-c")
    assert script.strip() == (CHART / "files" / "admission-check.py").read_text("utf-8").strip()
    service = job.last.one("Service", "-webhook")
    meta, port = service["metadata"], _service_ports(job)["https"]["port"]
    assert url == f"https://{meta['name']}.{meta['namespace']}.svc:{port}/validate?timeout=10s"
    (mount,) = container["volumeMounts"]
    assert ca_file == f"{mount['mountPath']}/ca.crt"
    (volume,) = spec["volumes"]
    assert volume["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]  # the CA, never the key
    deployment_spec = job.last.one("Deployment", "-webhook")["spec"]["template"]["spec"]
    served = [v for v in deployment_spec["volumes"] if "projected" in v]
    secrets = [s["secret"]["name"] for v in served for s in v["projected"]["sources"] if "secret" in s]
    assert volume["secret"]["secretName"] in secrets  # the serving certificate's own Secret
    assert spec["restartPolicy"] == "Never" and spec["automountServiceAccountToken"] is False
    assert pss.restricted_violations(spec) == []
    assert openapi.errors(pod, "1.33") == []


def test_the_notes_say_how_to_run_the_test(jobs: Mapping[str, Job]) -> None:
    assert "helm test guard -n gpu-guard" in jobs["elsewhere"].last.notes


def test_the_self_signed_tls_secret_carries_the_ca_the_test_pod_reads(jobs: Mapping[str, Job]) -> None:
    job = jobs["scenario:defaults"]
    secret_name = _test_pod(job)["spec"]["volumes"][0]["secret"]["secretName"]
    assert "ca.crt" in job.last.one("Secret", secret_name)["data"]


@pytest.fixture(scope="module")
def check_script(jobs: Mapping[str, Job]) -> str:
    script: str = _test_pod(jobs["scenario:defaults"])["spec"]["containers"][0]["command"][2]
    return script


@pytest.mark.slow
def test_the_helm_test_script_passes_against_a_real_webhook_and_fails_on_a_foreign_ca(
    check_script: str, tmp_path: Path
) -> None:
    import trustme
    from webhook.server import running

    with running(tmp_path, {"webhook": {"preset": "warn"}}, drain_seconds=0) as server:
        url = f"https://127.0.0.1:{server.port}/validate?timeout=10s"
        ca = tmp_path / "ca.crt"
        server.certificates.ca.cert_pem.write_to_path(str(ca))
        passed = _run(check_script, url, ca)
        foreign = tmp_path / "foreign.crt"
        trustme.CA().cert_pem.write_to_path(str(foreign))
        refused = _run(check_script, url, foreign)
        wrong_path = _run(check_script, url.replace("/validate", "/metrics"), ca)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.startswith("OK: ") and "allowed=True" in passed.stdout
    assert "health-probes/" in passed.stdout  # the warnings the webhook gave are shown
    assert refused.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in refused.stderr
    assert wrong_path.returncode == 1 and wrong_path.stderr.startswith("FAIL")


def _run(script: str, url: str, ca: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, url, str(ca)], capture_output=True, text=True, timeout=60, check=False
    )


def test_chart_yaml_names_its_home_sources_and_maintainers() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text("utf-8"))
    assert chart["home"].startswith("https://")
    assert chart["sources"] and all(s.startswith("https://") for s in chart["sources"])
    assert chart["maintainers"] and all(m["name"] for m in chart["maintainers"])
    # The image says where it was built from with the same address (its default source build argument).
    dockerfile = (REPO / "Dockerfile").read_text("utf-8")
    assert f"ARG SOURCE={chart['sources'][0]}\n" in dockerfile

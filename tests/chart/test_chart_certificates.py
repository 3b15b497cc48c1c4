"""Serving certificates: self-signed ones survive upgrades and rotate on demand; cert-manager is wired in."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest
from cryptography import x509

from chart.helm import Job, Step

SERVICE_NAMES = [
    "kubegap-webhook",
    "kubegap-webhook.kubegap",
    "kubegap-webhook.kubegap.svc",
    "kubegap-webhook.kubegap.svc.cluster.local",
]


def _pems(b64: str) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(base64.b64decode(b64))


def _material(step: Step) -> dict[str, Any]:
    ca_secret = step.one("Secret", "-webhook-ca")
    tls_secret = step.one("Secret", "-webhook-tls")
    (webhook,) = step.one("ValidatingWebhookConfiguration")["webhooks"]
    return {
        "ca": ca_secret["data"]["tls.crt"],
        "ca_key": ca_secret["data"]["tls.key"],
        "previous": ca_secret["data"].get("previous.crt"),
        "cert": tls_secret["data"]["tls.crt"],
        "key": tls_secret["data"]["tls.key"],
        "ca_in_tls": tls_secret["data"]["ca.crt"],
        "bundle": webhook["clientConfig"]["caBundle"],
        "not_after": tls_secret["metadata"]["annotations"]["kubegap.dev/not-after"],
        "pod_template": step.one("Deployment")["spec"]["template"],
    }


def _assert_served_chain(material: Mapping[str, Any]) -> None:
    (ca,) = _pems(material["ca"])
    (cert,) = _pems(material["cert"])
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    cert.verify_directly_issued_by(ca)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == SERVICE_NAMES
    assert material["ca_in_tls"] == material["ca"]
    assert ca in _pems(material["bundle"])


@pytest.fixture(scope="module")
def upgrades(jobs: Mapping[str, Job]) -> list[dict[str, Any]]:
    steps = jobs["upgrades"].steps
    assert [s.action for s in steps] == ["install", "upgrade", "upgrade", "upgrade", "upgrade"]
    return [_material(s) for s in steps]


def test_fresh_install_serves_a_certificate_for_the_service(upgrades: list[dict[str, Any]]) -> None:
    first = upgrades[0]
    _assert_served_chain(first)
    (cert,) = _pems(first["cert"])
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 729 <= lifetime.days <= 731
    assert first["previous"] is None
    assert len(_pems(first["bundle"])) == 1


def test_upgrade_changes_nothing(upgrades: list[dict[str, Any]]) -> None:
    install, upgrade = upgrades[0], upgrades[1]
    assert upgrade == install


def test_serving_certificate_renews_under_the_same_ca(upgrades: list[dict[str, Any]]) -> None:
    before, renewed = upgrades[1], upgrades[2]
    _assert_served_chain(renewed)
    assert renewed["cert"] != before["cert"] and renewed["key"] != before["key"]
    assert int(renewed["not_after"]) > 1000
    # No caBundle churn, and no pod restart: the webhook reloads the files in place.
    assert (renewed["ca"], renewed["ca_key"], renewed["bundle"]) == (
        before["ca"],
        before["ca_key"],
        before["bundle"],
    )
    assert renewed["pod_template"] == before["pod_template"]


def test_ca_rotation_keeps_the_old_ca_trusted(upgrades: list[dict[str, Any]]) -> None:
    before, rotated = upgrades[2], upgrades[3]
    _assert_served_chain(rotated)
    assert rotated["ca"] != before["ca"]
    assert rotated["previous"] == before["ca"]
    # Pods still serving the old certificate until the kubelet updates their files stay trusted.
    (old_ca,) = _pems(before["ca"])
    (new_ca,) = _pems(rotated["ca"])
    assert _pems(rotated["bundle"]) == [new_ca, old_ca]


def test_rotation_happens_once_per_generation(upgrades: list[dict[str, Any]]) -> None:
    assert upgrades[4] == upgrades[3]


def test_cert_manager_chain_and_ca_injection(jobs: Mapping[str, Job]) -> None:
    step = jobs["scenario:cert-manager"].last
    assert step.find("Secret") == []  # cert-manager writes them
    selfsigned = step.one("Issuer", "-selfsigned")
    assert selfsigned["spec"] == {"selfSigned": {}}
    ca = step.one("Certificate", "-webhook-ca")["spec"]
    assert ca["isCA"] is True
    assert ca["issuerRef"]["name"] == selfsigned["metadata"]["name"]
    ca_issuer = step.one("Issuer", "-webhook-ca")
    assert ca_issuer["spec"] == {"ca": {"secretName": ca["secretName"]}}
    serving = step.one("Certificate", "-serving")
    spec = serving["spec"]
    assert spec["dnsNames"] == SERVICE_NAMES
    assert spec["issuerRef"] == {
        "name": ca_issuer["metadata"]["name"],
        "kind": "Issuer",
        "group": "cert-manager.io",
    }
    assert spec["privateKey"]["rotationPolicy"] == "Always"
    config = step.one("ValidatingWebhookConfiguration")
    assert (
        config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        == "kubegap/kubegap-webhook-serving"
    )
    # The chart leaves caBundle to the injector, so an upgrade never wipes what it injected.
    assert "caBundle" not in config["webhooks"][0]["clientConfig"]


def test_cert_manager_with_an_existing_issuer(jobs: Mapping[str, Job]) -> None:
    step = jobs["extras"].last
    assert step.find("Issuer") == [] and len(step.find("Certificate")) == 1
    assert step.one("Certificate")["spec"]["issuerRef"] == {"name": "corp-ca", "kind": "ClusterIssuer"}


@pytest.mark.parametrize("scenario", ["cert-manager"])
def test_cert_manager_objects_have_the_fields_cert_manager_reads(
    jobs: Mapping[str, Job], scenario: str
) -> None:
    # cert-manager's CRDs are not in the Kubernetes OpenAPI set: check their shape by hand.
    allowed = {
        "Certificate": {
            "secretName",
            "dnsNames",
            "duration",
            "renewBefore",
            "privateKey",
            "issuerRef",
            "isCA",
            "commonName",
        },
        "Issuer": {"selfSigned", "ca"},
    }
    for obj in jobs[f"scenario:{scenario}"].last.objects:
        if obj["apiVersion"] == "cert-manager.io/v1":
            assert set(obj["spec"]) <= allowed[obj["kind"]], obj["spec"]
            assert set(obj["metadata"]) == {"name", "namespace", "labels"}

"""`kubegap audit` when it cannot start: one clear line each, the right exit code, and no empty report."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from kubegap.audit.selector import check
from kubegap.errors import UsageError
from tests.audit.invoke import run
from tests.support.apiserver import ApiServer


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends: nothing listens there


def test_an_unreachable_cluster_is_said_once_and_exits_4(
    capsys: pytest.CaptureFixture[str], kubeconfig: Path
) -> None:
    doc = yaml.safe_load(kubeconfig.read_text())
    server = f"https://127.0.0.1:{_closed_port()}"
    doc["clusters"][0]["cluster"]["server"] = server
    kubeconfig.write_text(yaml.safe_dump(doc))
    code, out, err = run(capsys, "--kubeconfig", str(kubeconfig))
    assert code == 4
    assert out == ""  # no report sections with nothing in them
    assert err.splitlines() == [
        f"kubegap audit: cannot reach {server}: connection refused; check --kubeconfig/--context"
    ]


def test_a_rejected_token_is_said_once_and_exits_4(
    capsys: pytest.CaptureFixture[str], apiserver: ApiServer, tmp_path: Path
) -> None:
    kubeconfig = apiserver.kubeconfig(tmp_path / "kubeconfig", token="expired")
    code, out, err = run(capsys, "--kubeconfig", str(kubeconfig))
    assert code == 4 and out == ""
    assert len(err.splitlines()) == 1
    assert "rejected the credentials (401 Unauthorized" in err and "check --kubeconfig/--context" in err


def test_a_bad_selector_is_refused_before_any_request(
    capsys: pytest.CaptureFixture[str], apiserver: ApiServer, kubeconfig: Path
) -> None:
    code, out, err = run(capsys, "--kubeconfig", str(kubeconfig), "-l", "team=ml,tier=!dev")
    assert code == 2 and out == ""
    assert err.startswith("kubegap audit: label selector 'team=ml,tier=!dev': 'tier=!dev': the value")
    assert apiserver.requests == []


@pytest.mark.parametrize(
    "selector", ["team=ml,tier!=dev", "app in (a, b),!legacy", "gpus>3", "kubernetes.io/arch==amd64", ""]
)
def test_selectors_the_api_server_accepts_pass(selector: str) -> None:
    check(selector)


@pytest.mark.parametrize(
    "selector", ["team=ml,", "tier=!dev", "app in (a b)", "x y", "gpus>many", "=x", "-team=ml", "a" * 64]
)
def test_selectors_the_api_server_rejects_fail(selector: str) -> None:
    with pytest.raises(UsageError, match="label selector"):
        check(selector)


def test_kubeconfig_errors_name_the_file_and_the_context(
    capsys: pytest.CaptureFixture[str], kubeconfig: Path, tmp_path: Path
) -> None:
    code, _, err = run(capsys, "--kubeconfig", str(kubeconfig), "--context", "prod")
    assert code == 2
    assert f"kubeconfig {kubeconfig} has no context 'prod' (contexts: kubegap-test); check --context" in err
    missing = tmp_path / "nope"
    assert f"kubeconfig {missing}: no such file" in run(capsys, "--kubeconfig", str(missing))[2]
    broken = tmp_path / "broken"
    broken.write_text("clusters: [\n")
    code, _, err = run(capsys, "--kubeconfig", str(broken))
    assert code == 2 and f"kubeconfig {broken} is not valid YAML" in err

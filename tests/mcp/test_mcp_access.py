"""Read-only by the identity: rights a SelfSubjectRulesReview shows are reported, and refused on demand."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kubegap.audit.reader import connect
from kubegap.audit.retry import Api
from kubegap.cli import main
from kubegap.mcp import access, server
from tests.support.apiserver import BASIC_USER_RULE, ApiServer, read_only_rules

pytestmark = pytest.mark.anyio


def rule(verbs: list[str], resources: list[str], groups: tuple[str, ...] = ("",)) -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": list(groups), "resources": resources}


RISKY = [
    ("write", rule(["get", "list", "patch"], ["pods"])),
    ("write", rule(["delete"], ["pytorchjobs"], ("kubeflow.org",))),
    ("secrets", rule(["get"], ["secrets"])),
    ("secrets", rule(["list"], ["*"])),
    ("pods/exec", rule(["create"], ["pods/exec"])),
    ("impersonate", rule(["impersonate"], ["serviceaccounts"])),
]


def review(apiserver: ApiServer, kubeconfig: Path) -> access.AccessRecord:
    transport = connect(str(kubeconfig), None)
    try:
        return access.review(Api(transport), "default")
    finally:
        transport.close()


def test_the_audit_role_and_basic_user_rights_are_read_only(apiserver: ApiServer, kubeconfig: Path) -> None:
    record = review(apiserver, kubeconfig)
    assert apiserver.rules == read_only_rules() and BASIC_USER_RULE in apiserver.rules
    assert record.checked and record.readOnly and record.risky == []


@pytest.mark.parametrize(("right", "granted"), RISKY)
def test_each_risky_right_is_reported(
    apiserver: ApiServer, kubeconfig: Path, right: str, granted: dict[str, Any]
) -> None:
    apiserver.rules = [*read_only_rules(), granted]
    record = review(apiserver, kubeconfig)
    assert not record.readOnly
    assert right in {r.right for r in record.risky}
    assert "NOT read-only: can " in access.describe(record)


def test_cluster_admin_holds_every_risky_right(apiserver: ApiServer, kubeconfig: Path) -> None:
    apiserver.rules = [rule(["*"], ["*"], ("*",))]
    assert {r.right for r in review(apiserver, kubeconfig).risky} == {
        "write",
        "secrets",
        "pods/exec",
        "impersonate",
    }


def test_an_incomplete_review_proves_nothing(apiserver: ApiServer, kubeconfig: Path) -> None:
    apiserver.state.rules_incomplete = True
    record = review(apiserver, kubeconfig)
    assert record.checked and record.incomplete and not record.readOnly


async def test_every_audit_result_reports_write_rights(client: Client, apiserver: ApiServer) -> None:
    apiserver.rules = [*read_only_rules(), rule(["create", "delete"], ["pods"])]
    result = await client.call_tool("audit_cluster", {"namespace": "team-a"})
    record = result.structured_content or {}
    assert not result.is_error
    assert record["access"]["readOnly"] is False and record["access"]["namespace"] == "team-a"
    assert record["access"]["risky"][0] == {
        "right": "write",
        "verbs": ["create", "delete"],
        "apiGroups": [""],
        "resources": ["pods"],
    }
    assert "NOT read-only: can write" in result.content[0].text  # type: ignore[union-attr]


async def test_require_read_only_refuses_to_read_with_write_rights(
    make_toolbox: Any, apiserver: ApiServer
) -> None:
    apiserver.rules = [*read_only_rules(), rule(["update"], ["configmaps"])]
    async with Client(server.build(make_toolbox(require_read_only=True))) as client:
        result = await client.call_tool("audit_cluster", {})
        nodes = await client.call_tool("check_nodes", {})
    for refused in (result, nodes):
        assert refused.is_error and "--require-read-only" in refused.content[0].text  # type: ignore[union-attr]
    assert {r.method for r in apiserver.requests} == {"POST"}  # the review, and not one list


@pytest.fixture
def kubegap_logging() -> Iterator[None]:
    """`kubegap mcp` switches kubegap's loggers to JSON lines: put them back for the other tests."""
    logger = logging.getLogger("kubegap")
    saved = (list(logger.handlers), logger.propagate, logger.level)
    yield
    logger.handlers[:], logger.propagate, logger.level = saved[0], saved[1], saved[2]


def test_require_read_only_refuses_to_start_with_write_rights(
    apiserver: ApiServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str], kubegap_logging: None
) -> None:
    apiserver.rules = [*read_only_rules(), rule(["get", "create"], ["secrets"])]
    assert main(["mcp", "--kubeconfig", str(kubeconfig), "--require-read-only"]) == 2
    err = capsys.readouterr().err
    assert "refusing to start" in err and "can write, read secrets" in err


def test_require_read_only_refuses_to_start_without_a_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kubegap_logging: None
) -> None:
    missing = tmp_path / "missing"
    assert main(["mcp", "--kubeconfig", str(missing), "--require-read-only"]) == 2
    assert "refusing to start: cannot load cluster credentials" in capsys.readouterr().err


def test_a_missing_sdk_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if `mcp` were not installed
    assert main(["mcp"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'kubegap[mcp]'" in err


async def test_rights_that_cannot_be_reviewed_are_not_read_only(
    make_toolbox: Any, apiserver: ApiServer
) -> None:
    from tests.support.apiserver import RULES_REVIEW, Fault

    apiserver.inject(Fault("forbidden", path=RULES_REVIEW, times=None))
    async with Client(server.build(make_toolbox())) as client:
        result = await client.call_tool("audit_cluster", {})
    record = result.structured_content or {}
    assert not result.is_error and record["coverage"]["complete"] is True
    assert record["access"]["checked"] is False and record["access"]["readOnly"] is False
    assert "403" in record["access"]["error"]
    assert "Credentials: access not checked" in result.content[0].text  # type: ignore[union-attr]
    async with Client(server.build(make_toolbox(require_read_only=True))) as strict:
        refused = await strict.call_tool("audit_cluster", {})
    assert refused.is_error and "access not checked" in refused.content[0].text  # type: ignore[union-attr]

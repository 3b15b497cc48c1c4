"""SARIF rules link to their documentation; results without a file location are warned about once."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from kubegap import cli
from kubegap.reports.sarifrules import DOCS, INPUT_DOCS
from tests.support.docs import anchors

TRAIN = Path(__file__).resolve().parents[1] / "data" / "engine" / "train.yaml"


def _sarif(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, text: str
) -> tuple[dict[str, Any], str]:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert cli.main(["lint", "-", "-o", "sarif"]) == 1
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_bundled_rules_carry_a_help_uri_to_their_policy(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log, _ = _sarif(capsys, monkeypatch, TRAIN.read_text())
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules
    for rule in rules:
        policy = rule["id"].split("/")[0]
        assert rule["helpUri"] == f"https://kubegap.dev/docs/policies/#{policy}"
    generated = (Path(__file__).resolve().parents[2] / "policies" / "README.md").read_text()
    assert all(f'<a id="{r["id"].split("/")[0]}"></a>' in generated for r in rules)  # the anchors exist


def test_a_user_policy_has_no_help_uri(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "mine" / "always-fails"
    folder.mkdir(parents=True)
    (folder / "policy.yaml").write_text(
        "apiVersion: kubegap.dev/v1alpha1\nkind: Policy\nmetadata: {name: always-fails}\nspec:\n"
        "  title: t\n  severity: high\n  scope: workload\n  remediation: r\n"
        "  validations: [{name: never, expression: 'false'}]\n"
    )
    assert cli.main(["lint", str(TRAIN), "-o", "sarif", "--policies", str(tmp_path / "mine")]) == 1
    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    mine = [r for r in rules if r["id"].startswith("always-fails/")]
    assert mine and "helpUri" not in mine[0]


def test_results_without_a_file_give_one_warning(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, err = _sarif(capsys, monkeypatch, TRAIN.read_text())
    lines = [line for line in err.splitlines() if "no file location" in line]
    assert len(lines) == 1 and "GitHub code scanning rejects" in lines[0]
    _, err = _sarif(capsys, monkeypatch, "# Source: chart/templates/job.yaml\n" + TRAIN.read_text())
    assert "no file location" not in err


def test_the_unreadable_input_help_uri_names_a_section_of_the_lint_page() -> None:
    page, _, anchor = INPUT_DOCS.removeprefix(DOCS + "/").partition("/#")
    assert anchor in anchors(Path(__file__).resolve().parents[2] / "docs" / f"{page}.md")

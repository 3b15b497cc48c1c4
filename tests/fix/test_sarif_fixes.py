"""SARIF `fixes` from `kubegap lint --format sarif`: valid against the SARIF 2.1.0 schema, and each fix,
applied alone to the file as it is, settles its own finding."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kubegap import cli
from tests.fix.support import engine, failing
from tests.reports.test_sarif import assert_valid
from tests.reports.test_sarif import validator as validator  # the fixture

MANIFESTS = Path(__file__).parent.parent / "data" / "fix" / "manifests"
ALL = ("nccl-timeout", "checkpoint-interval", "gpu-nic-topology", "health-probes", "restart-budget")
# Below HF Trainer's 30 min default, so that the trainer's unwritten timeout is a finding with a fix.
BOUND = {"nccl-timeout": {"maxCollectiveTimeout": "20m"}}


def _apply(text: str, replacements: list[dict[str, Any]]) -> str:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    for r in sorted(
        replacements,
        key=lambda r: (r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]),
        reverse=True,
    ):
        region = r["deletedRegion"]
        begin = offset(region["startLine"], region["startColumn"])
        end = offset(region["endLine"], region["endColumn"])
        text = text[:begin] + r["insertedContent"]["text"] + text[end:]
    return text


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_each_sarif_fix_settles_its_finding_alone(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    validator: Any,
    crlf: bool,
) -> None:
    source = (MANIFESTS / "pytorchjob-llama-sft.yaml").read_text()
    text = source.replace("\n", "\r\n") if crlf else source
    (tmp_path / "job.yaml").write_bytes(text.encode())
    monkeypatch.chdir(tmp_path)
    bound = "--set=nccl-timeout.maxCollectiveTimeout=20m"
    assert cli.main(["lint", "--format", "sarif", "--jobs", "1", bound, "job.yaml"]) == 1
    log = json.loads(capsys.readouterr().out)
    assert_valid(validator, log)
    results = log["runs"][0]["results"]
    with_fixes = [r for r in results if "fixes" in r]
    # No restart-budget finding: the Worker's restartPolicy OnFailure restarts it (RULES.md).
    assert {r["ruleId"] for r in with_fixes} == {
        "gpu-nic-topology/nccl-nic-hints",
        "gpu-nic-topology/no-transport-fallback",
        "health-probes/liveness-probe",
        "nccl-timeout/timeout-bounded",
        "nccl-timeout/no-placebo-timeout",
        "checkpoint-interval/interval-bounded",
    }
    the_engine = engine(*ALL, params=BOUND)
    for result in with_fixes:
        (change,) = result["fixes"][0]["artifactChanges"]
        assert change["artifactLocation"] == {"uri": "job.yaml", "uriBaseId": "%SRCROOT%"}
        fixed = _apply(text, change["replacements"])
        assert fixed.count("\n") == fixed.count("\r\n") if crlf else "\r" not in fixed
        remaining = {(f.policy, f.rule, f.message) for f in failing(fixed.replace("\r\n", "\n"), the_engine)}
        finding = result["properties"]
        assert (finding["policy"], finding["rule"], finding["message"]) not in remaining


def test_findings_without_a_safe_fix_carry_no_sarif_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(MANIFESTS / "jobset-anchored-script.yaml", tmp_path / "jobset.yaml")
    monkeypatch.chdir(tmp_path)
    cli.main(["lint", "--format", "sarif", "--jobs", "1", "--policy", "nccl-timeout", "jobset.yaml"])
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert results and not [r for r in results if "fixes" in r]


def test_suggestions_are_the_same_in_worker_processes_and_from_lints_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubegap.fix import suggestions as module
    from kubegap.forked import PARALLEL_MIN_FILES
    from kubegap.lint import Output, lint

    for index in range(PARALLEL_MIN_FILES):
        text = (MANIFESTS / "pytorchjob-llama-sft.yaml").read_text()
        (tmp_path / f"job-{index:02d}.yaml").write_text(text.replace("llama-sft", f"llama-{index}"))
    the_engine = engine(*ALL, params=BOUND)
    asked = Output(suggest=True)
    report = lint([str(tmp_path)], the_engine, output=asked)
    serial = module.by_finding(report.findings, report.suggested or [])
    assert len({f.file for f in serial}) == PARALLEL_MIN_FILES  # every file has a suggested fix
    assert report.fixable is None and lint([str(tmp_path)], the_engine).suggested is None  # only if asked
    parallel = lint([str(tmp_path)], the_engine, jobs=2, output=asked)
    assert parallel.findings == report.findings
    assert module.by_finding(parallel.findings, parallel.suggested or []) == serial
    # the same as where each document is evaluated again instead of starting from lint's findings
    monkeypatch.setattr(module, "own_findings", lambda *args: None)
    again = lint([str(tmp_path)], the_engine, output=asked)
    assert module.by_finding(again.findings, again.suggested or []) == serial


def test_a_finding_a_chart_folder_renamed_has_no_suggestion(tmp_path: Path) -> None:
    """Its file names a template, not the file its fix was made in."""
    from dataclasses import replace

    from kubegap.fix.suggestions import by_finding
    from kubegap.lint import Output, lint

    shutil.copy(MANIFESTS / "pytorchjob-llama-sft.yaml", tmp_path / "job.yaml")
    report = lint([str(tmp_path / "job.yaml")], engine(*ALL, params=BOUND), output=Output(suggest=True))
    made = by_finding(report.findings, report.suggested or [])
    assert made and all(f.file == str(tmp_path / "job.yaml") for f in made)
    renamed = [replace(f, file="trainer/templates/job.yaml") for f in report.findings]
    assert by_finding(renamed, report.suggested or []) == {}

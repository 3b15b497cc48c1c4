"""`--format github` (workflow annotations) and `--format codequality` (GitLab Code Quality)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubegap import cli
from kubegap.findings import Finding, ObjectRef, Result, Severity
from tests.support.reports import rendered

REF = ObjectRef("batch/v1", "Job", "ml", "train")


def _finding(result: Result = Result.FAIL, severity: Severity = Severity.HIGH, **extra: object) -> Finding:
    base = Finding(
        "nccl-timeout", "timeout-bounded", severity, result, "timeout 1h, exceeds 30m: 100% sure",
        "Lower it, to 30m.", REF, "Job", "trainer", "spec.template.spec.containers[0].args[1]",
    )  # fmt: skip
    return base.located(str(extra.get("file", "deploy/job.yaml")), 0, 12, 7)


def test_github_annotations_escape_and_map_severity() -> None:
    lines = rendered(
        "github",
        [
            _finding(),
            _finding(severity=Severity.MEDIUM),
            _finding(severity=Severity.LOW),
            _finding(Result.SKIP),
        ],
    ).splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["::error", "::warning", "::notice"]  # skip left out
    assert lines[0] == (
        "::error file=deploy/job.yaml,line=12,col=7,title=kubegap nccl-timeout/timeout-bounded (high)"
        "::Job/ml/train, role Job, container trainer: timeout 1h, exceeds 30m: 100%25 sure"
        "%0Aat spec.template.spec.containers[0].args[1]%0Afix: Lower it, to 30m."
    )


def test_github_paths_are_relative_and_stdin_has_no_file(tmp_path: Path) -> None:
    inside = _finding(file=str(tmp_path / "deploy" / "job.yaml"))
    assert "file=deploy/job.yaml," in rendered("github", [inside], base_dir=str(tmp_path))
    stdin = rendered("github", [_finding(file="<stdin>")])
    assert "file=" not in stdin and stdin.startswith("::error title=kubegap")


def test_codequality_issues_have_gitlab_fields_and_leave_out_suppressed() -> None:
    issues = json.loads(
        rendered("codequality", [_finding(), _finding(Result.SKIP), _finding(severity=Severity.CRITICAL)])
    )
    assert len(issues) == 2
    first = issues[0]
    assert set(first) == {"description", "check_name", "fingerprint", "severity", "location"}
    assert first["check_name"] == "kubegap/nccl-timeout/timeout-bounded"
    assert first["location"] == {"path": "deploy/job.yaml", "lines": {"begin": 12}}
    assert [i["severity"] for i in issues] == ["critical", "blocker"]
    assert first["description"].startswith("nccl-timeout/timeout-bounded: timeout 1h")
    assert "Fix: Lower it, to 30m." in first["description"]
    assert len(first["fingerprint"]) == 64
    moved = _finding().located("deploy/job.yaml", 0, 40, 1)
    assert (
        json.loads(rendered("codequality", [moved]))[0]["fingerprint"] == first["fingerprint"]
    )  # lines move


def test_lint_writes_both_formats(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    train = Path(__file__).resolve().parents[1] / "data" / "engine" / "train.yaml"
    out = tmp_path / "gl-code-quality.json"
    assert cli.main(["lint", str(train), "-o", "github", "--output", f"codequality={out}"]) == 1
    annotations = capsys.readouterr().out.splitlines()
    issues = json.loads(out.read_text())
    assert annotations and all(a.startswith(("::error ", "::warning ", "::notice ")) for a in annotations)
    assert len(issues) == len(annotations)

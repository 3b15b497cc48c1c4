"""`kubegap lint --format` and `--output FORMAT=PATH`: one run, several formats, the same exit code."""

from __future__ import annotations

import contextlib
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kubegap.cli import main
from tests.support.samples import FAILING_PYTORCHJOB as FAILING


def run(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(args)
    return code, out.getvalue()


def test_outputs_go_to_files_while_text_goes_to_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(FAILING, "utf-8")
    code, stdout = run(["lint", "job.yaml", "--output", "sarif=out/k.sarif", "--output", "junit=out/k.xml"])
    assert code == 1
    assert stdout.startswith("job.yaml\n")
    log = json.loads(Path("out/k.sarif").read_text("utf-8"))
    results = log["runs"][0]["results"]
    assert results and all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "job.yaml"
                           for r in results)  # fmt: skip
    suites = ET.parse("out/k.xml").getroot()
    assert int(suites.get("failures", "0")) == len(results)
    assert int(suites.get("tests", "0")) > len(results)  # passes are test cases too


@pytest.mark.parametrize("fmt", ["sarif", "junit", "json", "text"])
def test_format_writes_stdout(tmp_path: Path, fmt: str) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(FAILING, "utf-8")
    code, stdout = run(["lint", str(job), "--format", fmt])
    assert code == 1
    assert stdout.strip()


@pytest.mark.parametrize("spec", ["sarif", "xml=out.xml", "sarif=", "=x"])
def test_a_bad_output_spec_is_a_usage_error(tmp_path: Path, spec: str) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(FAILING, "utf-8")
    assert run(["lint", str(job), "--output", spec])[0] == 2


def test_an_unwritable_output_is_a_usage_error(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(FAILING, "utf-8")
    (tmp_path / "file").write_text("", "utf-8")
    assert run(["lint", str(job), "--output", f"sarif={tmp_path / 'file' / 'k.sarif'}"])[0] == 2


def test_text_output_escapes_control_characters(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(FAILING.replace("name: pretrain", 'name: "pre\\x1b[2Jtrain"'), "utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["lint", str(manifest)])
    assert "\x1b" not in out.getvalue()
    assert "pre\\x1b[2Jtrain" in out.getvalue()

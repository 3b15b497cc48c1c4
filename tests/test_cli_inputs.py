"""What `kubegap lint` reads: no path, --examples, --exclude, chart templates, the discovered config."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from kubegap import cli

TRAIN = Path(__file__).parent / "data" / "engine" / "train.yaml"
CONFIG_HEAD = "apiVersion: kubegap.dev/v1alpha1\nkind: Config\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def linted(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = run(capsys, "lint", "-o", "json", "--jobs", "1", *argv)
    return code, json.loads(out), err


def files(document: dict[str, Any]) -> set[str]:
    return {Path(f["file"]).name for f in document["findings"]}


def test_no_path_lints_nothing_and_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, document, err = linted(capsys)
    assert code == 0
    assert document["findings"] == [] and document["summary"]["objects"] == 0
    assert "nothing to lint" in err and "--examples" in err
    assert run(capsys, "lint", "--fail-if-no-objects")[0] == 2


def test_fail_if_no_objects_passes_when_something_was_linted(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "lint", "--fail-if-no-objects", str(TRAIN))[0] == 1


def test_examples_lints_the_bundled_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, document, _ = linted(capsys, "--examples")
    assert code == 1
    assert {f["policy"] for f in document["findings"]} >= {"nccl-timeout", "gpu-node-health"}
    assert all("/examples/" in f["file"] for f in document["findings"] if f["file"])


def test_exclude_leaves_out_files_and_folders(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "deploy" / "vendor").mkdir(parents=True)
    shutil.copy(TRAIN, tmp_path / "deploy" / "train.yaml")
    shutil.copy(TRAIN, tmp_path / "deploy" / "vendor" / "theirs.yaml")
    shutil.copy(TRAIN, tmp_path / "deploy" / "generated.yaml")
    monkeypatch.chdir(tmp_path)
    assert files(linted(capsys, "deploy")[1]) == {"train.yaml", "theirs.yaml", "generated.yaml"}
    kept = linted(capsys, "deploy", "--exclude", "vendor", "--exclude", "deploy/gen*")[1]
    assert files(kept) == {"train.yaml"}
    (tmp_path / ".kubegap.yaml").write_text(CONFIG_HEAD + "exclude: [vendor]\n")
    assert files(linted(capsys, "deploy")[1]) == {"train.yaml", "generated.yaml"}


def test_chart_templates_are_skipped_with_a_pointer_to_helm_template(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = tmp_path / "charts" / "trainer"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: trainer\nversion: 0.1.0\n")
    (chart / "templates" / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nimage: {{ .Values.image }}\n"
    )
    (tmp_path / "other" / "templates").mkdir(parents=True)  # not beside a Chart.yaml: linted
    shutil.copy(TRAIN, tmp_path / "other" / "templates" / "train.yaml")
    monkeypatch.chdir(tmp_path)
    code, document, err = linted(capsys, ".")
    assert code == 1  # the findings of other/templates, not 2 for an unrendered template
    assert files(document) == {"train.yaml"}
    assert f"skipped {Path('charts/trainer/templates')}" in err
    assert "helm template charts/trainer | kubegap lint -" in err
    assert "skipped" in run(capsys, "lint", "charts/trainer/templates")[2]


def test_config_is_discovered_in_the_working_directory_or_the_repository_root(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO, "kubegap.config")  # what -v shows
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / ".kubegap.yaml").write_text(CONFIG_HEAD + "skip: [nccl-timeout]\n")
    monkeypatch.chdir(tmp_path / "sub")
    document = linted(capsys, "-v", str(TRAIN))[1]
    assert "nccl-timeout" not in {f["policy"] for f in document["findings"]}
    assert f"config file: {tmp_path.resolve() / '.kubegap.yaml'}" in caplog.text
    (tmp_path / "sub" / ".kubegap.yaml").write_text(CONFIG_HEAD + "skip: [restart-budget]\n")
    caplog.clear()
    document = linted(capsys, "-v", str(TRAIN))[1]
    policies = {f["policy"] for f in document["findings"]}
    assert "nccl-timeout" in policies and "restart-budget" not in policies
    assert f"config file: {tmp_path.resolve() / 'sub' / '.kubegap.yaml'}" in caplog.text
    explicit = linted(capsys, "--config", str(_empty_config(tmp_path)), str(TRAIN))[1]
    assert "restart-budget" in {f["policy"] for f in explicit["findings"]}  # --config wins


def _empty_config(tmp_path: Path) -> Path:
    path = tmp_path / "empty.yaml"
    path.write_text(CONFIG_HEAD)
    return path

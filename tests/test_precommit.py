"""The pre-commit hook: its definition selects manifests as intended, and its entry, run the way pre-commit
runs it (from the repository root, with the selected file names), lints them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.samples import FAILING_PYTORCHJOB as TRAIN

ROOT = Path(__file__).resolve().parent.parent


CPU_JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: preprocess}
spec:
  template:
    spec:
      containers: [{name: main, image: busybox}]
"""

HELM_TEMPLATE = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-train
"""

# A repository as a team might have it: manifests, a chart, docs and CI files.
REPO = {
    "deploy/train.yaml": TRAIN,
    "deploy/preprocess.yml": CPU_JOB,
    "deploy/list.json": '{"apiVersion": "v1", "kind": "List", "items": []}',
    "charts/trainer/templates/job.yaml": HELM_TEMPLATE,
    "charts/trainer/Chart.yaml": "apiVersion: v2\nname: trainer\nversion: 0.1.0\n",
    ".github/workflows/ci.yml": "on: [push]\njobs: {}\n",
    "README.md": "# manifests\n",
    "deploy/notes.yaml.orig": "not: linted\n",
}


@pytest.fixture(scope="module")
def hook() -> dict[str, Any]:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    (found,) = [h for h in hooks if h["id"] == "kubegap-lint"]
    assert isinstance(found, dict)
    return found


def selected(hook: dict[str, Any], names: list[str]) -> list[str]:
    """The files pre-commit passes: `files` matches and `exclude` does not (re.search on the path)."""
    include, exclude = re.compile(hook["files"]), re.compile(hook.get("exclude", "^$"))
    return [n for n in sorted(names) if include.search(n) and not exclude.search(n)]


def run_entry(hook: dict[str, Any], repo: Path, files: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the entry as pre-commit does: the command from the hook's environment, args, then the files."""
    command = shlex.split(hook["entry"]) + list(hook.get("args", []))
    bin_dir = str(Path(sys.executable).parent)  # the environment this package is installed in
    executable = shutil.which(command[0], path=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    assert executable, f"{command[0]} is not installed next to {sys.executable}"
    return subprocess.run(
        [executable, *command[1:], *files],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_hook_definition(hook: dict[str, Any]) -> None:
    assert hook["entry"] == "kubegap lint"
    assert hook["language"] == "python"
    assert hook["files"] == r"\.(ya?ml|json)$"
    assert hook["pass_filenames"] is True
    assert hook["require_serial"] is True


@pytest.mark.parametrize(
    ("name", "passed"),
    [
        ("deploy/train.yaml", True),
        ("deploy/preprocess.yml", True),
        ("deploy/list.json", True),
        ("train.YAML", False),
        ("deploy/notes.yaml.orig", False),
        ("README.md", False),
        ("charts/trainer/templates/job.yaml", False),  # Helm templates are linted rendered, not raw
        ("templates/job.yaml", False),
        ("mytemplates/job.yaml", True),
    ],
)
def test_file_selection(hook: dict[str, Any], name: str, passed: bool) -> None:
    assert (selected(hook, [name]) == [name]) is passed


def write(repo: Path) -> list[str]:
    for name, text in REPO.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, "utf-8")
    return list(REPO)


def test_entry_fails_the_commit_on_findings(hook: dict[str, Any], tmp_path: Path) -> None:
    files = selected(hook, write(tmp_path))
    assert "charts/trainer/templates/job.yaml" not in files
    done = run_entry(hook, tmp_path, files)
    assert done.returncode == 1, done.stderr
    assert "deploy/train.yaml" in done.stdout
    assert "gpu-nic-topology/nic-attached" in done.stdout
    assert "unrendered-template" not in done.stdout  # the chart template was not passed
    assert "2 object(s) checked" in done.stdout


def test_entry_passes_clean_manifests(hook: dict[str, Any], tmp_path: Path) -> None:
    write(tmp_path)
    files = selected(hook, ["deploy/preprocess.yml", "deploy/list.json", ".github/workflows/ci.yml"])
    done = run_entry(hook, tmp_path, files)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 object(s) checked: 0 finding(s)" in done.stdout

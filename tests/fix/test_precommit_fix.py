"""The `kubegap-fix` pre-commit hook: it selects the same files as `kubegap-lint` and, run the way
pre-commit runs it, writes the fixes into the manifests (pre-commit then stops the commit for review)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_precommit import ROOT, run_entry, selected, write


@pytest.fixture(scope="module")
def hooks() -> dict[str, dict[str, Any]]:
    loaded = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    return {h["id"]: h for h in loaded}


def test_the_fix_hook_selects_what_the_lint_hook_selects(hooks: dict[str, dict[str, Any]]) -> None:
    fix, lint = hooks["kubegap-fix"], hooks["kubegap-lint"]
    assert fix["entry"] == "kubegap fix --write"
    for key in ("language", "files", "exclude", "types", "pass_filenames", "require_serial"):
        assert fix[key] == lint[key], key


def test_the_fix_hook_writes_the_fixes_once(hooks: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    hook = hooks["kubegap-fix"]
    files = selected(hook, write(tmp_path))
    before = {name: (tmp_path / name).read_bytes() for name in files}
    done = run_entry(hook, tmp_path, files)
    assert done.returncode == 0, done.stderr
    changed = [name for name in files if (tmp_path / name).read_bytes() != before[name]]
    assert changed == ["deploy/train.yaml"]
    assert "livenessProbe" in (tmp_path / "deploy/train.yaml").read_text()
    again = run_entry(hook, tmp_path, files)
    assert again.returncode == 0 and "0 file(s) changed" in again.stderr

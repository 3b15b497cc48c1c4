"""The generated rule documentation stays in step with the policy files."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from kubegap import policy
from kubegap.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _generated() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["policies", "list", "--format", "markdown"]) == 0
    return out.getvalue()


def test_policies_readme_is_current() -> None:
    checked_in = (ROOT / "policies" / "README.md").read_text("utf-8")
    assert checked_in == _generated(), (
        "policies/README.md is stale: run `kubegap policies list --format markdown > policies/README.md`"
    )


def test_generated_docs_cover_every_validation_and_exemption() -> None:
    text = _generated()
    for loaded in policy.load():
        assert f'<a id="{loaded.id}"></a>' in text
        assert f"ignore.kubegap.dev/{loaded.id}" in text
        for validation in loaded.validations:
            assert f"| `{validation.name}` | {validation.severity.value} |" in text

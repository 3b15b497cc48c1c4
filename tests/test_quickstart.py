"""The README's set-up is two commands, and CI runs both exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text("utf-8")
    quick = readme[readme.index("## Quick start") : readme.index("Then lint your own")]
    return re.findall(r"```sh\n(.*?)\n```", quick, re.S)


def _ci_script() -> str:
    # Lines continued with a backslash count as one command.
    return (ROOT / ".ci" / "run").read_text("utf-8").replace("\\\n  ", "")


def test_readme_setup_is_an_install_with_a_lint_and_a_test_command() -> None:
    install, tests = _readme_commands()
    assert "pip install -q -e ." in install and install.endswith("kubegap lint --examples")
    assert "[test]" not in install  # a user does not need the test tools
    assert tests.endswith("python -m pytest -q")


def test_ci_runs_the_readme_commands_verbatim() -> None:
    ci = _ci_script()
    for command in _readme_commands():
        assert command in ci, f"{command!r} is not run by .ci/run"

"""The agent skill, AGENTS.md and the MCP docs name only commands and flags that `--help` knows."""

from __future__ import annotations

import contextlib
import functools
import io
import re
from pathlib import Path

import pytest

from kubegap.cli import main

ROOT = Path(__file__).resolve().parent.parent
SKILL = ROOT / ".claude" / "skills" / "kubegap" / "SKILL.md"
DOCS = [SKILL, ROOT / "AGENTS.md", ROOT / "docs" / "mcp.md", ROOT / "README.md"]
COMMAND = re.compile(r"\bkubegap (lint|audit|policies|test|serve|mcp)\b([^`\n|;]*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")


@functools.cache
def help_text(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([command, "--help"])
    return out.getvalue()


def commands(path: Path) -> list[tuple[str, list[str]]]:
    text = path.read_text("utf-8")
    return [(m.group(1), FLAG.findall(m.group(2))) for m in COMMAND.finditer(text)]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_flag_mentioned_is_one_the_command_takes(path: Path) -> None:
    found = commands(path)
    assert found, f"{path.name} names no kubegap command"
    for command, flags in found:
        known = help_text(command)
        unknown = [f for f in flags if f not in known]
        assert not unknown, f"{path.name}: `kubegap {command}` has no {', '.join(unknown)}"


def test_the_skill_may_run_only_lint_and_audit_and_asks_for_json() -> None:
    text = SKILL.read_text("utf-8")
    front = text.split("---")[1]
    assert re.search(r"^allowed-tools: Bash\(kubegap lint \*\) Bash\(kubegap audit \*\)$", front, re.M)
    assert re.search(r"^name: kubegap$", front, re.M) and re.search(r"^description: \S", front, re.M)
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = [line for block in blocks for line in block.splitlines() if "kubegap " in line]
    assert lines
    for line in lines:
        command = line[line.index("kubegap ") :]
        assert command.split()[1] in ("lint", "audit") and "--format json" in command, line


def test_the_check_catches_a_stale_flag(tmp_path: Path) -> None:
    stale = tmp_path / "stale.md"
    stale.write_text("run `kubegap audit --format json --all-namespaces`\n", "utf-8")
    command, flags = commands(stale)[0]
    assert [f for f in flags if f not in help_text(command)] == ["--all-namespaces"]

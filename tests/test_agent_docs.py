"""The agent skill may run only lint and audit, and asks for JSON. (That the skill, AGENTS.md and the MCP
docs name only commands and flags that `--help` knows is checked with every other page, in
tests/test_docs_links.py.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKILL = ROOT / ".claude" / "skills" / "kubegap" / "SKILL.md"


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

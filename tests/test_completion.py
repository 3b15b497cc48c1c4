"""`kubegap completion`: scripts generated from the parser, run in a real bash."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kubegap import cli

BASH = shutil.which("bash")


def script(capsys: pytest.CaptureFixture[str], shell: str) -> str:
    assert cli.main(["completion", shell]) == 0
    return capsys.readouterr().out


def complete(source: str, *words: str) -> list[str]:
    """What bash offers for the last word of `words` (the command line typed so far)."""
    assert BASH is not None
    line = " ".join(f"'{w}'" for w in words)
    program = (
        f"{source}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _kubegap; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        [BASH, "--norc", "-c", program], capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout.split()


@pytest.mark.skipif(BASH is None, reason="bash not installed")
def test_bash_completes_commands_options_and_their_values(capsys: pytest.CaptureFixture[str]) -> None:
    source = script(capsys, "bash")
    commands = ["lint", "policies", "test", "version", "completion", "audit", "serve", "mcp", "fix"]
    assert complete(source, "kubegap", "") == [*commands, "--help", "--version", "-v"]
    assert complete(source, "kubegap", "au") == ["audit"]
    assert complete(source, "kubegap", "lint", "--fo") == ["--format"]
    assert complete(source, "kubegap", "lint", "-o", "co") == ["codequality"]
    assert "--demo" in complete(source, "kubegap", "audit", "--d")
    assert "--fail-on" not in complete(source, "kubegap", "policies", "--")
    assert complete(source, "kubegap", "policies", "sh") == ["show"]
    assert complete(source, "kubegap", "completion", "f") == ["fish"]


def test_zsh_and_fish_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    bash, zsh, fish = (script(capsys, s) for s in ("bash", "zsh", "fish"))
    assert "bashcompinit" in zsh and bash.split("\n", 1)[1] in zsh
    assert "complete -c kubegap -n __fish_use_subcommand -a lint" in fish
    assert "complete -c kubegap -n '__fish_seen_subcommand_from lint' -s o -l format -xa 'text json" in fish
    assert "complete -c kubegap -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'" in fish

"""Command-line conventions: `-o` for --format, options only where they mean something, `kubegap version`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubegap import cli, native

TRAIN = str(Path(__file__).parent / "data" / "engine" / "train.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def help_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as caught:
        cli.main([*argv, "--help"])
    assert caught.value.code == 0
    return capsys.readouterr().out


def test_o_is_short_for_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "lint", "-o", "json", TRAIN)
    assert code == 1 and "findings" in json.loads(out)
    assert json.loads(run(capsys, "policies", "list", "-o", "json")[1])
    assert "-o {text,json,policyreport,sarif,junit}, --format" in help_of(capsys, "audit")


@pytest.mark.parametrize("command", ["policies", "test", "version", "serve"])
def test_fail_on_is_offered_only_where_findings_decide_the_exit_code(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    assert "--fail-on" not in help_of(capsys, command)
    assert "--fail-on" in help_of(capsys, "lint") and "--fail-on" in help_of(capsys, "audit")


def test_verbose_after_the_command_word(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "lint", "-v", TRAIN)[0] == 1


def test_version_names_the_policy_set_and_changes_with_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "version")
    first, second = out.splitlines()
    assert code == 0 and first.startswith("kubegap ") and first.endswith(native.state().describe())
    assert second.startswith("policy set ") and " policies: checkpoint-interval," in second
    again = run(capsys, "version")[1]
    assert again == out  # the digest is stable
    changed = run(capsys, "version", "--set", "nccl-timeout.maxCollectiveTimeout=20m")[1]
    assert changed.splitlines()[1].split()[2] != second.split()[2]
    assert (
        run(capsys, "version", "--policy", "nccl-timeout")[1]
        .splitlines()[1]
        .endswith("(1 policies: nccl-timeout)")
    )


def test_version_reads_the_discovered_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    plain = run(capsys, "version")[1]
    (tmp_path / ".kubegap.yaml").write_text(
        "apiVersion: kubegap.dev/v1alpha1\nkind: Config\n"
        "params: {nccl-timeout: {maxCollectiveTimeout: 20m}}\n"
    )
    assert run(capsys, "version")[1] != plain

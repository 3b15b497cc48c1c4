"""`--policy` and `--skip` (and the config's `policies:`/`skip:`) take a policy or one of its rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubegap import cli

TRAIN = str(Path(__file__).parent / "data" / "engine" / "train.yaml")


def rules(capsys: pytest.CaptureFixture[str], *argv: str) -> set[tuple[str, str]]:
    code = cli.main(["lint", "-o", "json", "--jobs", "1", TRAIN, *argv])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return {(f["policy"], f["rule"]) for f in json.loads(out)["findings"]}


def test_skip_one_rule_keeps_the_rest_of_its_policy(capsys: pytest.CaptureFixture[str]) -> None:
    everything = rules(capsys)
    assert ("nccl-timeout", "timeout-bounded") in everything
    without = rules(capsys, "--skip", "nccl-timeout/timeout-bounded")
    assert without == everything - {("nccl-timeout", "timeout-bounded")}


def test_policy_with_rules_runs_only_those_rules(capsys: pytest.CaptureFixture[str]) -> None:
    chosen = rules(capsys, "--policy", "nccl-timeout/async-error-handling", "--policy", "restart-budget")
    assert chosen == {("nccl-timeout", "async-error-handling"), ("restart-budget", "auto-restart")}
    both = rules(capsys, "--policy", "nccl-timeout", "--policy", "nccl-timeout/async-error-handling")
    assert {p for p, _ in both} == {"nccl-timeout"} and len(both) > 1  # the whole policy wins


def test_rules_in_the_config_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "kubegap.yaml"
    config.write_text(
        "apiVersion: kubegap.dev/v1alpha1\nkind: Config\n"
        "policies: [nccl-timeout]\nskip: [nccl-timeout/timeout-bounded]\n"
    )
    found = rules(capsys, "--config", str(config))
    assert found and {p for p, _ in found} == {"nccl-timeout"}
    assert ("nccl-timeout", "timeout-bounded") not in found


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (
            "nccl-timeout/timeout-bnded",
            "policy nccl-timeout has no rule 'timeout-bnded'; its rules: timeout-declared",
        ),
        ("nccl/timeout-bounded", "unknown policy 'nccl'"),
    ],
)
def test_unknown_rules_are_usage_errors(capsys: pytest.CaptureFixture[str], entry: str, said: str) -> None:
    assert cli.main(["lint", TRAIN, "--skip", entry]) == 2
    assert said in capsys.readouterr().err

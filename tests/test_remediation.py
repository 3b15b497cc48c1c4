"""Fix texts follow the parameters in force, in findings (lint, audit, webhook) and in `policies show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubegap import cli, durations, policy
from kubegap.config import Settings
from kubegap.errors import PolicyError
from kubegap.evaluate import build_engine
from tests.test_policy import MINIMAL, write_policy

TRAIN = str(Path(__file__).parent / "data" / "engine" / "train.yaml")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1800, "30 minutes"), (60, "1 minute"), (5400, "1 hour 30 minutes"), (3601, "1 hour 1 second"),
     (45, "45 seconds"), (1, "1 second"), (1.5, "1.5 seconds"), (7200, "2 hours"),
     (5.000000001 * 3600, "5 hours")],
)  # fmt: skip
def test_duration_words(seconds: float, text: str) -> None:
    assert durations.words(seconds) == text


def _fixes(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[tuple[str, str], str]:
    cli.main(["lint", "-o", "json", "--jobs", "1", TRAIN, *argv])
    findings = json.loads(capsys.readouterr().out)["findings"]
    return {(f["policy"], f["rule"]): f["remediation"] for f in findings}


def test_a_finding_s_fix_uses_the_parameter_set(capsys: pytest.CaptureFixture[str]) -> None:
    default = _fixes(capsys)[("nccl-timeout", "timeout-bounded")]
    assert default.startswith("Lower the collective timeout to at most 30 minutes;")
    tightened = _fixes(capsys, "--set", "nccl-timeout.maxCollectiveTimeout=20m")
    assert tightened[("nccl-timeout", "timeout-bounded")].startswith(
        "Lower the collective timeout to at most 20 minutes;"
    )
    assert "{params." not in " ".join(tightened.values())


def test_policies_show_uses_the_parameter_set(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(
        [
            "policies",
            "show",
            "checkpoint-interval",
            "--set",
            "checkpoint-interval.maxCheckpointInterval=1h30m",
        ]
    )
    out = capsys.readouterr().out
    assert "fix: Save a checkpoint at least every 1 hour 30 minutes" in out
    cli.main(
        [
            "policies",
            "show",
            "checkpoint-interval",
            "-o",
            "json",
            "--set",
            "checkpoint-interval.maxCheckpointInterval=15m",
        ]
    )
    shown = json.loads(capsys.readouterr().out)
    fixes = {v["name"]: v["remediation"] for v in shown[0]["validations"]}
    assert fixes["interval-bounded"].startswith("Checkpoint at least every 15 minutes;")


def test_every_bundled_fix_is_filled() -> None:
    engine = build_engine(Settings(params={"health-probes": {"minLivenessWindow": "7m"}}))
    texts = [c.remediation for c in engine.compiled] + [
        v.remediation for c in engine.compiled for v in c.validations
    ]
    assert not [t for t in texts if "{" in t]
    probes = next(c for c in engine.compiled if c.policy.id == "health-probes")
    assert (
        "at least 7 minutes"
        in {v.validation.name: v.remediation for v in probes.validations}["liveness-probe"]
    )


def test_an_unknown_placeholder_is_a_policy_error_at_load(tmp_path: Path) -> None:
    text = MINIMAL.replace("remediation: Fix it.", "remediation: Keep it under {params.limitt}.").replace(
        "  validations:", "  params: {limit: {type: duration, default: 10m}}\n  validations:"
    )
    write_policy(tmp_path, "typo", text)
    with pytest.raises(
        PolicyError, match=r"remediation \{params.limitt\}: policy typo has no parameter 'limitt'"
    ):
        policy.load_dir(tmp_path, "mine")

"""What the chart renders is what kubegap itself accepts: its config file, command lines and linter."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from chart.helm import REPO, Job, Step, pod_specs, scenario_names
from kubegap.audit import command as audit_command
from kubegap.audit.scope import validate_section
from kubegap.config import load_config
from kubegap.evaluate import build_engine
from kubegap.findings import Severity
from kubegap.webhook import actions
from kubegap.webhook import serve as serve_command

SCENARIOS = scenario_names()


def _etc_kubegap(step: Step, root: Path) -> Path:
    """Lay out /etc/kubegap as the pods see it (the projected volume's ConfigMap items) under `root`."""
    data = step.one("ConfigMap")["data"]
    (_, spec) = next(pod_specs(step.objects))
    (volume,) = [v for v in spec["volumes"] if "projected" in v]
    for source in volume["projected"]["sources"]:
        for item in source.get("configMap", {}).get("items", []):
            target = root / item["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(data[item["key"]], encoding="utf-8")
    return root / "config.yaml"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_rendered_config_loads_and_builds_the_engine(
    jobs: Mapping[str, Job], scenario: str, tmp_path: Path
) -> None:
    step = jobs[f"scenario:{scenario}"].last
    config_file = _etc_kubegap(step, tmp_path)
    raw = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    settings = load_config(str(config_file))
    assert settings.fail_on is Severity(raw["failOn"])
    assert settings.skip == tuple(raw["skip"])
    assert dict(settings.params) == raw["params"]
    engine = build_engine(settings)
    ids = {p.id for p in engine.policies}
    assert {"nccl-timeout", "checkpoint-interval"} <= ids
    # The webhook and the audit validate their own sections at start-up: they must accept these.
    actions.check_policy_ids(actions.parse_config(settings.webhook), ids)
    validate_section(settings.audit)


def test_extra_policy_and_knobs_reach_the_engine(jobs: Mapping[str, Job], tmp_path: Path) -> None:
    config_file = _etc_kubegap(jobs["scenario:audit-only"].last, tmp_path)
    engine = build_engine(load_config(str(config_file)))
    assert "site-checkpoint-dir" in {p.id for p in engine.policies}
    flags = {flag for knob in engine.catalogue.knobs for flag in knob.flags}
    assert "--ckpt-every-minutes" in flags


def _container(step: Step, kind: str) -> dict[str, Any]:
    for obj in step.find(kind):
        for _, spec in pod_specs([obj]):
            (container,) = spec["containers"]
            found: dict[str, Any] = container
            return found
    raise AssertionError(f"no {kind}")


@pytest.mark.parametrize(
    ("scenario", "kind", "command"),
    [
        ("defaults", "Deployment", serve_command),
        ("defaults", "CronJob", audit_command),
        ("audit-only", "CronJob", audit_command),
    ],
)
def test_container_arguments_parse_with_kubegaps_own_options(
    jobs: Mapping[str, Job], scenario: str, kind: str, command: Any
) -> None:
    container = _container(jobs[f"scenario:{scenario}"].last, kind)
    subcommand, *arguments = container["args"]
    assert subcommand == ("serve" if command is serve_command else "audit")
    parser = argparse.ArgumentParser(exit_on_error=False)
    command.add_arguments(parser)
    parsed = parser.parse_args(arguments)
    assert parsed.config == "/etc/kubegap/config.yaml"


def test_serve_listens_on_the_port_the_chart_exposes(jobs: Mapping[str, Job]) -> None:
    container = _container(jobs["scenario:defaults"].last, "Deployment")
    parser = argparse.ArgumentParser()
    serve_command.add_arguments(parser)
    parsed = parser.parse_args(container["args"][1:])
    assert parsed.port == container["ports"][0]["containerPort"] == 8443
    assert (parsed.workers, parsed.threads) == (2, 4)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_kubegap_lint_finds_nothing_in_the_rendered_chart(jobs: Mapping[str, Job], scenario: str) -> None:
    step = jobs[f"scenario:{scenario}"].last
    manifest = step.manifest
    proc = subprocess.run(
        [sys.executable, "-m", "kubegap", "lint", "--format", "json", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["findings"] == []
    # The chart's own Deployment and CronJob were read (they run no GPUs, so no policy applies).
    workloads = [o for o in step.objects if o["kind"] in ("Deployment", "CronJob")]
    assert report["summary"]["objects"] == len(workloads) >= 1
    assert report["summary"]["invalid"] == 0

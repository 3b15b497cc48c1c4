"""Settings shared by lint, audit and the webhook: one YAML file (`--config`) plus command-line overrides."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kubegap import schema
from kubegap.errors import UsageError
from kubegap.findings import Severity
from kubegap.impact import ImpactSettings, settings_from

IMPACT = "impact"  # `--set impact.NAME=VALUE` sets the cost model, not a policy parameter

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Settings:
    """What a run uses: the policies, their parameters and selection, the CEL runtime, the cost model."""

    policy_dirs: tuple[str, ...] = ()
    knob_files: tuple[str, ...] = ()
    select: tuple[str, ...] = ()  # only these policy ids; empty means all
    skip: tuple[str, ...] = ()
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # policy -> param -> value
    fail_on: Severity = Severity.HIGH
    cel_backend: str = "auto"
    exclude: tuple[str, ...] = ()  # globs of files and folders that lint leaves out
    chart_dirs: tuple[str, ...] = ()  # chart folders, to map `# Source:` names to repository paths
    webhook: Mapping[str, Any] = field(default_factory=dict)
    audit: Mapping[str, Any] = field(default_factory=dict)
    impact: ImpactSettings = field(default_factory=ImpactSettings)

    def with_params(self, overrides: Mapping[str, Mapping[str, Any]]) -> Settings:
        merged = {pid: dict(values) for pid, values in self.params.items() if pid != IMPACT}
        for pid, values in overrides.items():
            if pid != IMPACT:
                merged.setdefault(pid, {}).update(values)
        impact = _impact(overrides.get(IMPACT, {}), self.impact, "--set")
        return replace(self, params=merged, impact=impact)


def _impact(values: Mapping[str, Any], base: ImpactSettings, where: str) -> ImpactSettings:
    try:
        return settings_from(values, base)
    except ValueError as err:
        raise UsageError(f"{where}: {err}") from None


def _relative(base: Path, paths: Sequence[str]) -> tuple[str, ...]:
    """Paths in a config file are relative to the file, so the file works from any working directory."""
    return tuple(str(base / p) if not Path(p).is_absolute() else p for p in paths)


CONFIG_NAME = ".kubegap.yaml"


def discover(cwd: Path | None = None) -> str | None:
    """`.kubegap.yaml` in the working directory, else at the root of the git repository holding it."""
    here = (cwd or Path.cwd()).resolve()
    if (here / CONFIG_NAME).is_file():
        return str(here / CONFIG_NAME)
    root = next((d for d in (here, *here.parents) if (d / ".git").exists()), None)
    if root is not None and (root / CONFIG_NAME).is_file():
        return str(root / CONFIG_NAME)
    return None


def load_config(path: str | None, discovered: bool = False) -> Settings:
    """The settings of `path`; with `discovered`, of the `.kubegap.yaml` found when no path is given."""
    if path is None and discovered:
        path = discover()
    if path is None:
        log.debug("no config file: defaults and the command line")
        return Settings()
    log.info("config file: %s", path)
    if not Path(path).is_file():
        raise UsageError(f"{path}: no such config file")
    doc = schema.load(path, "config")
    base = Path(path).parent
    return Settings(
        policy_dirs=_relative(base, doc.get("policyDirs", ())),
        knob_files=_relative(base, doc.get("knobFiles", ())),
        select=tuple(doc.get("policies", ())),
        skip=tuple(doc.get("skip", ())),
        params={pid: dict(values) for pid, values in doc.get("params", {}).items()},
        fail_on=Severity(doc.get("failOn", "high")),
        cel_backend=doc.get("celBackend", "auto"),
        exclude=tuple(doc.get("exclude", ())),
        chart_dirs=_relative(base, doc.get("chartDirs", ())),
        webhook=doc.get("webhook", {}),
        audit=doc.get("audit", {}),
        impact=_impact(doc.get("impact", {}), ImpactSettings(), path),
    )


def parse_set(items: Sequence[str]) -> dict[str, dict[str, str]]:
    """`--set nccl-timeout.maxCollectiveTimeout=20m` → {"nccl-timeout": {"maxCollectiveTimeout": "20m"}}."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        target, sep, value = item.partition("=")
        policy_id, dot, param = target.rpartition(".")
        if not sep or not dot or not policy_id or not param:
            raise UsageError(
                f"--set {item!r}: expected POLICY.PARAM=VALUE, e.g. nccl-timeout.maxCollectiveTimeout=20m"
            )
        out.setdefault(policy_id, {})[param] = value
    return out

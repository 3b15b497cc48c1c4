"""Run real Helm on the chart from the main test suite (Python 3.11) through the Helm tool environment.

helm-sdkpy needs Python >= 3.12, so rendering happens in a subprocess of a separate virtual environment:
$KUBEGAP_HELM_VENV (made by tests/chart/setup_helm_venv.sh), else ~/.cache/kubegap/helm-venv. Without one,
the rendering tests are skipped with the reason; with KUBEGAP_REQUIRE_HELM=1 they fail instead, so that CI
cannot go green by skipping them.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "kubegap"
SCENARIOS = Path(__file__).resolve().parent / "values"
RENDER_SCRIPT = Path(__file__).resolve().parent / "render.py"
VENV_ENV = "KUBEGAP_HELM_VENV"
REQUIRE_ENV = "KUBEGAP_REQUIRE_HELM"
_RENDER_TIMEOUT_S = 300


class HelmUnavailable(Exception):
    pass


def venv_path() -> Path:
    configured = os.environ.get(VENV_ENV)
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubegap" / "helm-venv"


def helm_python() -> Path:
    """The Helm tool environment's interpreter; HelmUnavailable says why there is none."""
    python = venv_path() / "bin" / "python"
    if not python.exists():
        raise HelmUnavailable(
            f"no Helm tool environment at {venv_path()} (set {VENV_ENV}; create it with "
            "tests/chart/setup_helm_venv.sh: Python >= 3.12 and helm-sdkpy)"
        )
    probe = subprocess.run(
        [str(python), "-c", "import helm_sdkpy"], capture_output=True, text=True, timeout=60, check=False
    )
    if probe.returncode != 0:
        raise HelmUnavailable(f"helm_sdkpy does not import in {python}: {probe.stderr.strip()[-300:]}")
    return python


def skip_or_fail(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1)")
    pytest.skip(reason)


def run_render(request: Mapping[str, Any]) -> dict[str, Any]:
    python = helm_python()
    proc = subprocess.run(
        [str(python), str(RENDER_SCRIPT)],
        input=json.dumps({"chart": str(CHART), **request}),
        capture_output=True,
        text=True,
        timeout=_RENDER_TIMEOUT_S,
        check=False,
        cwd=REPO,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"render.py failed ({proc.returncode}): {proc.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(proc.stdout)
    return answer


def scenario_values(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text(encoding="utf-8"))
    return dict(loaded or {})


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.yaml"))


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class Step:
    action: str
    manifest: str
    notes: str
    error: str | None
    parsed: tuple[dict[str, Any], ...]
    hooks: tuple[dict[str, Any], ...] = ()  # hook objects (e.g. `helm test` pods), kept out of `objects`

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Step:
        manifest = raw.get("manifest", "")
        parsed = tuple(doc for doc in yaml.load_all(manifest, Loader=_Loader) if doc)
        hooks = tuple(
            doc for text in raw.get("hooks", []) for doc in yaml.load_all(text, Loader=_Loader) if doc
        )
        return cls(raw["action"], manifest, raw.get("notes", ""), raw.get("error"), parsed, hooks)

    @property
    def objects(self) -> list[dict[str, Any]]:
        """The rendered objects (copies: tests may change them)."""
        if self.error is not None:
            raise AssertionError(f"{self.action} failed: {self.error}")
        return copy.deepcopy(list(self.parsed))

    def find(self, kind: str, name_suffix: str = "") -> list[dict[str, Any]]:
        self.objects  # noqa: B018 - raises when the step failed
        return [o for o in self.parsed if o["kind"] == kind and o["metadata"]["name"].endswith(name_suffix)]

    def one(self, kind: str, name_suffix: str = "") -> dict[str, Any]:
        found = self.find(kind, name_suffix)
        assert len(found) == 1, f"expected one {kind} *{name_suffix}, found {len(found)}"
        return found[0]


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    steps: tuple[Step, ...]
    requests: tuple[Mapping[str, Any], ...]
    objects: Mapping[str, Mapping[str, Any]]

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Job:
        steps = tuple(Step.of(s) for s in raw["steps"] if s["action"] != "patch")
        return cls(raw["name"], steps, tuple(raw["requests"]), raw["objects"])

    @property
    def last(self) -> Step:
        return self.steps[-1]


def pod_specs(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(object name, pod spec) of every pod template the chart renders."""
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
            yield obj["metadata"]["name"], spec["template"]["spec"]
        elif obj["kind"] == "CronJob":
            yield obj["metadata"]["name"], spec["jobTemplate"]["spec"]["template"]["spec"]
        elif obj["kind"] == "Pod":
            yield obj["metadata"]["name"], spec

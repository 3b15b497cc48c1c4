"""Render and lint the chart with real Helm (helm-sdkpy); runs in the Helm tool environment (Python >= 3.12).

Reads a JSON request on stdin and prints a JSON answer on stdout:

    {"chart": "charts/kubegap", "lint": true,
     "jobs": [{"name": "defaults", "namespace": "kubegap", "release": "kubegap", "kubeVersion": "v1.33.0",
               "certManager": false, "prometheusOperator": false,
               "steps": [{"action": "install", "values": {...}},
                         {"action": "patch", "path": "/api/v1/namespaces/kubegap/secrets/x", "merge": {...}},
                         {"action": "upgrade", "values": {...}}, {"action": "uninstall"}]}]}

Each job gets its own sink API server (see sinkapi.py); an install or upgrade step answers with the rendered
manifest and notes, or with the error Helm raised; a patch step changes a stored object between steps (to
make the next render see, e.g., a certificate about to expire). The answer also carries every request the
sink recorded and the objects it stored, for the tests to inspect.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import helm_sdkpy  # type: ignore[import-not-found]  # only in the Helm tool environment

from chart.sinkapi import SinkAPIServer

_TIMEOUT_S = 60


def _release_step(config: Any, chart: str, release: str, step: dict[str, Any]) -> dict[str, Any]:
    values = step.get("values") or {}
    try:
        if step["action"] == "uninstall":
            asyncio.run(helm_sdkpy.Uninstall(config).run(release, wait=False, timeout=_TIMEOUT_S))
            return {"action": "uninstall"}
        if step["action"] == "install":
            action = helm_sdkpy.Install(config).run(
                release, chart, values=values, wait=False, timeout=_TIMEOUT_S
            )
        else:
            action = helm_sdkpy.Upgrade(config).run(
                release, chart, values=values, wait=False, timeout=_TIMEOUT_S
            )
        result = asyncio.run(action)
    except helm_sdkpy.HelmError as exc:
        return {"action": step["action"], "error": str(exc)}
    info = result.get("info") or {}
    hooks = [hook.get("manifest", "") for hook in result.get("hooks") or []]
    return {
        "action": step["action"],
        "manifest": result.get("manifest", ""),
        "notes": info.get("notes", ""),
        "hooks": hooks,
    }


def _job(chart: str, job: dict[str, Any]) -> dict[str, Any]:
    namespace = job.get("namespace", "kubegap")
    sink = SinkAPIServer(
        kube_version=job.get("kubeVersion", "v1.33.0"),
        cert_manager=job.get("certManager", False),
        prometheus_operator=job.get("prometheusOperator", False),
    )
    try:
        config = helm_sdkpy.Configuration(namespace=namespace, kubeconfig=sink.kubeconfig(namespace))
        steps: list[dict[str, Any]] = []
        for step in job["steps"]:
            if step["action"] == "patch":
                found = sink.patch(step["path"], step["merge"])
                steps.append({"action": "patch", "found": found})
            else:
                steps.append(_release_step(config, chart, job.get("release", "kubegap"), step))
        return {
            "name": job["name"],
            "steps": steps,
            "requests": [r.to_json() for r in sink.requests()],
            "objects": sink.objects(),
        }
    finally:
        sink.close()


def _lint(chart: str) -> dict[str, Any]:
    config = helm_sdkpy.Configuration(namespace="kubegap", kubeconfig=None)
    try:
        result = asyncio.run(helm_sdkpy.Lint(config).run(chart))
    except helm_sdkpy.HelmError as exc:
        return {"error": str(exc)}
    return {"result": result}


def main() -> int:
    request = json.load(sys.stdin)
    chart = str(Path(request["chart"]).resolve())
    answer: dict[str, Any] = {"helm_sdkpy": getattr(helm_sdkpy, "__version__", "unknown")}
    if request.get("lint"):
        answer["lint"] = _lint(chart)
    answer["jobs"] = [_job(chart, job) for job in request.get("jobs", [])]
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What node-health systems wrote on a Node: its labels and annotations as `key=value` marks, and the
time of each timestamped deep-check result (RULES.md §2 `gpu-node-health`, `returned-validated` and
`deep-check-fresh`).

Which marks mean "returned without validation" is the policy's parameter, not code: users add the marks of
their own health system. Sources of the bundled ones are in policies/gpu-node-health/policy.yaml.
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Mapping
from typing import Any, Final

from kubegap import raw

# IBM Autopilot writes its level-3 DCGM result as `PASS_2024-10-10_19.12.03UTC` or
# `ERR_2024-10-10_19.12.03UTC_<failed tests>` (IBM/autopilot autopilot-daemon/gpu-dcgm/entrypoint.py,
# strftime "%Y-%m-%d_%H.%M.%SUTC"; HEALTH_CHECKS.md "Deep Diagnostics and Node Labeling").
_STAMPED: Final = re.compile(r"^([A-Z]+)_(\d{4}-\d{2}-\d{2}_\d{2}\.\d{2}\.\d{2})UTC(?:_|$)")


def health_facts(metadata: Mapping[str, Any], now: float | None = None) -> dict[str, Any]:
    """`marks`: every label, then every annotation, as `key=value`; `deepChecks`: labels whose value is a
    timestamped result, with the result word, when it ran, and its age in seconds at `now` (default: the
    clock; messages name the time it ran, so that they do not change from one second to the next)."""
    labels, annotations = raw.mapping(metadata.get("labels")), raw.mapping(metadata.get("annotations"))
    # One line per mark: the parameter's globs are matched per line, so a line break inside a value (a
    # multi-line annotation) must not let a line of it pass for a mark of its own.
    marks = [
        f"{key}={value}".replace("\n", " ").replace("\r", " ")
        for source in (labels, annotations)
        for key, value in source.items()
    ]
    clock = time.time() if now is None else now
    checks = []
    for key, value in labels.items():
        stamped = _stamped(str(value))
        if stamped is not None:
            result, when = stamped
            ran = datetime.datetime.fromtimestamp(when, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
            age = float(max(0, int(clock - when)))
            checks.append({"label": str(key), "result": result, "ran": ran, "ageSeconds": age})
    return {"marks": marks, "deepChecks": checks}


def _stamped(value: str) -> tuple[str, float] | None:
    match = _STAMPED.match(value)
    if match is None:
        return None
    try:
        when = datetime.datetime.strptime(match[2], "%Y-%m-%d_%H.%M.%S")
    except ValueError:  # 2024-13-45: not a time, so no age
        return None
    return match[1], when.replace(tzinfo=datetime.UTC).timestamp()

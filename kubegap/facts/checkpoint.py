"""Checkpoint facts, judged once per workload: the least safe (longest) interval of all accelerator
containers counts (RULES.md §2 checkpoint-interval)."""

from __future__ import annotations

from typing import Any

from kubegap.facts import readings
from kubegap.facts.model import Found, Scratch, longest
from kubegap.fieldpath import render
from kubegap.workloads import PodTemplate


class _Seen:
    def __init__(self) -> None:  # a plain class (kubegap.records)
        self.out: dict[str, Any] = {}
        self.intervals: list[Found] = []
        self.steps: list[Found] = []

    def read(self, reading: readings.Reading, step_time: Found | None) -> None:
        """One reading of an accelerator container; steps become an interval at a declared step time."""
        where = {"source": reading.source, "path": render(reading.path)}
        if reading.setting == "checkpointDisabled":
            self.out.setdefault("disabled", where)
        elif reading.setting == "checkpointUnbounded":
            self.out.setdefault("unbounded", where)
        elif reading.value is None:
            return
        elif reading.setting == "checkpointInterval":
            self.intervals.append((reading.value, reading.source, reading.path))
        elif reading.setting == "checkpointSteps" and step_time is None:
            self.steps.append((reading.value, reading.source, reading.path))
        elif reading.setting == "checkpointSteps" and step_time is not None:
            source = f"{reading.source} at step time {step_time[1].split(': ', 1)[1]}"
            self.intervals.append((reading.value * step_time[0], source, reading.path))


def gather(
    scratch: Scratch,
    per_template: list[tuple[PodTemplate, list[readings.Reading]]],
    trainers: list[dict[str, Any]],
    unseen: list[str],
) -> dict[str, Any]:
    """`per_template` holds each template's accelerator-container readings; `trainers` those containers'
    facts and `unseen` what they could not see. A twin template comes with no readings nor trainers
    (kubegap.facts.workload): they would equal its original's in value and source and come after them,
    and every fact here keeps the first of equals (`setdefault`, and `max`, which returns the first of
    several largest). What a twin could not see is in `unseen`, at its own paths."""
    seen = _Seen()
    for template, found in per_template:
        step_time = scratch.declared("stepTime", template)
        for reading in found:
            seen.read(reading, step_time)
        declared = scratch.declared("checkpointInterval", template)
        if declared:
            seen.intervals.append(declared)
    out = seen.out
    interval = longest(seen.intervals)
    if interval:
        out["interval"] = interval
    save_time = scratch.longest_declared("checkpointSaveTime", [t for t, _ in per_template])
    if save_time:
        out["saveTime"] = save_time
    # Only what the accelerator containers could not see can hide a checkpoint knob; a sidecar's is noise.
    if trainers:  # where a missing interval would be written: the first training container
        out["trainerPath"] = trainers[0]["path"]
    out["unresolvedText"] = "; ".join(dict.fromkeys(unseen))
    if seen.steps:
        steps, source, path = max(seen.steps, key=lambda t: t[0])
        out["steps"] = {"steps": int(steps), "source": source, "path": render(path)}
    return out

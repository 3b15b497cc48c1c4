"""The knob settings of the catalogue (`setting:` in policies/knobs.yaml), declared once: the knob
catalogue schema takes its names from here. Part of the facts contract (`kubegap.facts.contract`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, unsafe_hash=True)
class Setting:
    """A knob setting of the catalogue (`setting:` in policies/knobs.yaml)."""

    name: str
    meaning: str
    fact: str | None  # where its value shows, as CEL reads it


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "collectiveTimeout",
        "how long a collective may hang before the rank is torn down",
        "container.collectiveTimeout",
    ),
    Setting("checkpointInterval", "time between checkpoints", "facts.checkpoint.interval"),
    Setting(
        "checkpointSteps", "steps between checkpoints (times stepTime: an interval)", "facts.checkpoint.steps"
    ),
    Setting("checkpointDisabled", "a value that switches checkpointing off", "facts.checkpoint.disabled"),
    Setting(
        "checkpointUnbounded",
        "checkpoints at a point no time bound follows from (per epoch)",
        "facts.checkpoint.unbounded",
    ),
    Setting("stepTime", "how long one training step takes, to turn steps into time", None),
    Setting("checkpointSaveTime", "how long one blocking checkpoint save takes", "facts.checkpoint.saveTime"),
    Setting("expectedRuntime", "how long the run is expected to take", "facts.expectedRuntime"),
    Setting("checkpointDir", "where checkpoints are written (a path)", "facts.recovery.storage"),
    Setting("checkpointLoad", "where a restart loads its checkpoint from (a path)", "facts.recovery.resume"),
    Setting("checkpointResume", "a switch: a restart loads the latest checkpoint", "facts.recovery.resume"),
    Setting("checkpointAsync", "a switch: saves do not block training", "facts.recovery.async"),
    Setting("checkpointOnSignal", "a switch: a checkpoint is saved on SIGTERM", "facts.recovery.onSignal"),
)


def setting_names() -> list[str]:
    return [s.name for s in SETTINGS]

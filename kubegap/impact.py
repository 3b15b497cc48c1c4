"""The cost model: expected GPU-hours a training workload loses a month to failures, checkpoint saves and a
slow network path (docs/cost-model.md).

First-order Young/Daly model (J. W. Young, CACM 17(9), 1974; J. T. Daly, FGCS 22(3), 2006). Per failure a
job loses the detection time D, the restart time R and on average half a checkpoint interval τ of work;
every checkpoint blocks for its save time δ. A month is 720 h:

    G = N · [F · (D + R + τ/2) + (720 h / τ) · δ] + N · 720 h · θ / (1 + θ),   F = N · λ · 720 h

where θ is a throughput tax (a slower network path), and without checkpoints τ is the run length T and no
save is paid. Young's optimum τ* = √(2 δ M), M = 720 h / F, is reported as advice. Pure: no I/O.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from kubegap import durations
from kubegap.jsontext import scalar
from kubegap.records import reduced

MONTH_HOURS: Final = 720.0


@dataclass(slots=True, unsafe_hash=True)
class ImpactSettings:
    """The `impact:` section of the config file (and `--set impact.NAME=VALUE`)."""

    # Llama 3: 419 unexpected interruptions on 16,384 GPUs in 54 days = 1.97e-5 per GPU-hour
    # (arXiv 2407.21783 §3.3.4); public reports range 1e-5 to 7e-5 (docs/cost-model.md).
    failures_per_gpu_hour: float = 2e-5
    restart_minutes: float = 10.0  # a controller restarts the job by itself
    manual_recovery_minutes: float = 60.0  # a person notices, deletes and resubmits
    checkpoint_save_seconds: float = 30.0  # a blocking save, when the manifest does not declare one
    default_runtime_seconds: float = 72 * 3600.0  # a run with no declared length or deadline
    high_gpu_hours: float = 500.0  # a fix worth at least this much a month is high
    medium_gpu_hours: float = 50.0  # ... at least this much medium, below it low
    # The MoE incident: a NIC down, NCCL rerouted a GPU's traffic, step time 8.4 s → 8.7 s (+3.6%).
    throughput_tax: float = 0.036


# config key -> (field, unit): durations are Go durations or numbers in the stated unit
SETTING_KEYS: Final[Mapping[str, tuple[str, str]]] = {
    "failuresPerGpuHour": ("failures_per_gpu_hour", "number"),
    "restartMinutes": ("restart_minutes", "number"),
    "manualRecoveryMinutes": ("manual_recovery_minutes", "number"),
    "checkpointSaveSeconds": ("checkpoint_save_seconds", "number"),
    "defaultRuntime": ("default_runtime_seconds", "duration"),
    "highGpuHours": ("high_gpu_hours", "number"),
    "mediumGpuHours": ("medium_gpu_hours", "number"),
    "throughputTax": ("throughput_tax", "number"),
}


def settings_from(values: Mapping[str, Any], base: ImpactSettings | None = None) -> ImpactSettings:
    """`impact:` values (config file or `--set`) over `base`; raises ValueError naming the key."""
    changes: dict[str, float] = {}
    for key, value in values.items():
        if key not in SETTING_KEYS:
            raise ValueError(f"impact.{key}: unknown setting; known: {', '.join(SETTING_KEYS)}")
        name, unit = SETTING_KEYS[key]
        text = str(value)
        try:
            number = durations.parse_go(text) if unit == "duration" else durations.parse_number(text)
        except ValueError as err:
            raise ValueError(f"impact.{key}: {err}") from None
        if number <= 0 and name != "throughput_tax":
            raise ValueError(f"impact.{key}: must be greater than 0, got {text}")
        changes[name] = number
    return replace(base or ImpactSettings(), **changes)


# Terms and inputs are made several times per priced object: constructors written out, and pickled by
# their arguments (kubegap.records).
@dataclass(slots=True, unsafe_hash=True, init=False)
class Term:
    """One model input in hours, with where it came from (shown to the user beside the figure)."""

    hours: float
    source: str

    def __init__(self, hours: float, source: str) -> None:
        self.hours, self.source = hours, source

    def __reduce__(self) -> tuple[type[Term], tuple[Any, ...]]:
        return reduced(self)

    def to_json(self) -> dict[str, Any]:
        hours, text = _hours_json(self.hours)
        return {"hours": hours, "text": text, "source": self.source}

    def json_text(self) -> str:
        """`to_json`'s text as `json.dumps(..., ensure_ascii=False)` writes it (kubegap.jsontext)."""
        return _term_text(self.hours, self.source)


@functools.lru_cache(maxsize=1024)
def _hours_json(hours: float) -> tuple[float, str]:
    """A term's hours as written out. A report writes a workload's terms twice per priced finding (now and
    fixed), and most are the same few defaults: building 10,000 findings' JSON took 0.23 s, 0.18 s so."""
    # + 0.0 makes a negative zero 0.0: the cache takes -0.0 and 0.0 for one key, so the sign written would
    # be the first one's
    return round(hours, 6) + 0.0, durations.format_seconds(hours * 3600)


@functools.lru_cache(maxsize=1024)
def _term_text(hours: float, source: str) -> str:
    """A term's text: most are the same few defaults, written twice per priced finding."""
    rounded, text = _hours_json(hours)
    return f'{{"hours": {scalar(rounded)}, "text": {scalar(text)}, "source": {scalar(source)}}}'


@dataclass(slots=True, unsafe_hash=True, init=False)
class Inputs:
    gpus: int  # N
    failures_per_gpu_hour: float  # λ
    detection: Term  # D
    restart: Term  # R
    interval: Term | None  # τ; None: no checkpoint is taken, all work since the start is lost
    runtime: Term  # T, capped at a month
    save: Term  # δ
    tax: float  # θ, while a finding that slows every step fails
    # A restart finds no checkpoint (lost with the pod, or never loaded): each failure loses the run so
    # far, on average T/2, instead of τ/2; the saves are still paid.
    from_scratch: bool

    def __init__(
        self,
        gpus: int,
        failures_per_gpu_hour: float,
        detection: Term,
        restart: Term,
        interval: Term | None,
        runtime: Term,
        save: Term,
        tax: float = 0.0,
        from_scratch: bool = False,
    ) -> None:
        self.gpus, self.failures_per_gpu_hour = gpus, failures_per_gpu_hour
        self.detection, self.restart, self.interval = detection, restart, interval
        self.runtime, self.save, self.tax, self.from_scratch = runtime, save, tax, from_scratch

    def __reduce__(self) -> tuple[type[Inputs], tuple[Any, ...]]:
        return reduced(self)

    @property
    def failures(self) -> float:
        """F: expected failures a month."""
        return self.gpus * self.failures_per_gpu_hour * MONTH_HOURS

    @property
    def rework(self) -> float:
        """τ in hours: the interval, or the whole run when nothing is saved or nothing is found again."""
        return self.interval.hours if self.interval and not self.from_scratch else self.runtime.hours

    def to_json(self) -> dict[str, Any]:
        return self.changed_json(None)

    def changed_json(self, before: Inputs | None) -> dict[str, Any]:
        """The inputs' JSON; given `before`, only its entries whose value is not `before`'s, in the same
        order: what a fix changes. Every priced finding lists that, and writing the fixed inputs whole to
        compare them was 4% of a finding's text."""
        entries = self._entries(before)
        return {key: value.to_json() if isinstance(value, Term) else value for key, value in entries}

    def json_text(self, before: Inputs | None = None) -> str:
        """`changed_json(before)`'s text as `json.dumps(..., ensure_ascii=False)` writes it, made directly
        (kubegap.jsontext)."""
        entries = [
            f'"{key}": {value.json_text() if isinstance(value, Term) else scalar(value)}'
            for key, value in self._entries(before)
        ]
        return f"{{{', '.join(entries)}}}"

    def _entries(self, before: Inputs | None) -> list[tuple[str, Term | float | None]]:
        """The entries of the inputs' JSON, by name, with their terms as they are; given `before`, only
        those whose JSON is not `before`'s. One list for the JSON and its text, so they never part."""
        out: list[tuple[str, Term | float | None]] = []
        if before is None or self.gpus != before.gpus:
            out.append(("gpus", self.gpus))
        # rounded only where they differ: a fix seldom changes them, and rounding a float to 4 places
        # writes out its decimal digits
        failures, was = self.failures, before.failures if before is not None else None
        if was is None or (failures != was and round(failures, 4) != round(was, 4)):
            out.append(("failuresPerMonth", round(failures, 4)))
        olds = before._terms() if before is not None else (None, None, None, None, None)
        for key, term, old in zip(_TERM_NAMES, self._terms(), olds, strict=True):
            if before is None or _term_changed(term, old):
                out.append((key, term))
        if before is None or self.tax != before.tax:
            out.append(("throughputTax", self.tax))
        if before is None or self.from_scratch != before.from_scratch:
            out.append(("restartsFromScratch", self.from_scratch))
        return out

    def _terms(self) -> tuple[Term, Term, Term | None, Term, Term]:
        """The terms in the JSON's order (`_TERM_NAMES`)."""
        return self.detection, self.restart, self.interval, self.runtime, self.save


_TERM_NAMES: Final = ("detection", "restart", "checkpointInterval", "runtime", "checkpointSave")


def _term_changed(term: Term | None, before: Term | None) -> bool:
    """Whether the term's JSON is not `before`'s: equal hours and source write the same, and hours that
    differ may still round alike."""
    if term is before:
        return False
    if term is None or before is None:
        return True
    if term.hours == before.hours and term.source == before.source:
        return False
    return term.to_json() != before.to_json()


def lost_gpu_hours(inputs: Inputs) -> float:
    """G: expected GPU-hours lost a month."""
    per_failure = inputs.detection.hours + inputs.restart.hours + inputs.rework / 2
    # τ = 0 (a declared 0s, a step time of 0) would be saves without pause: not counted, never a division
    saves = (
        MONTH_HOURS / inputs.interval.hours * inputs.save.hours
        if inputs.interval and inputs.interval.hours > 0
        else 0.0
    )
    slow = MONTH_HOURS * inputs.tax / (1 + inputs.tax)
    return inputs.gpus * (inputs.failures * per_failure + saves + slow)


def young_interval(inputs: Inputs) -> float | None:
    """Young's optimal checkpoint interval in hours, √(2 δ M); None when no failure is expected."""
    if inputs.failures <= 0:
        return None
    mtbf = MONTH_HOURS / inputs.failures
    return math.sqrt(2 * inputs.save.hours * mtbf)


def severity_for(saved: float, settings: ImpactSettings) -> str:
    """The severity a fix worth `saved` GPU-hours a month earns."""
    if saved >= settings.high_gpu_hours:
        return "high"
    if saved >= settings.medium_gpu_hours:
        return "medium"
    return "low"


def gpu_hours_text(value: float) -> str:
    """≈ 570k, ≈ 1.2M, ≈ 36, ≈ 0.5: a figure people read at a glance."""
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.1f}M"
    if magnitude >= 1e4:
        return f"{value / 1e3:.0f}k"
    if magnitude >= 1e3:
        return f"{value / 1e3:.1f}k"
    if magnitude >= 10:
        return f"{value:.0f}"
    return f"{value:.2g}"

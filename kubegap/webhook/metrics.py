"""Prometheus metrics in the text exposition format, summed across gunicorn worker processes.

Each worker counts in memory and, when given a directory, writes its counts to `<dir>/<pid>.json` (at most
once a second, and whenever it answers a scrape). A scrape can land on any worker, so that worker adds up
every file. Files of exited workers stay: their counts keep counters monotonic, as Prometheus expects.
Gauges are the answering worker's own values (every worker loads the same policies).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

Labels = tuple[str, ...]
BUCKETS: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    kind: Literal["counter", "gauge", "histogram"]
    help: str
    labels: tuple[str, ...] = ()


REQUESTS = Family(
    "kubegap_webhook_requests_total",
    "counter",
    "Admission reviews answered, by decision (allowed, warned, denied, skipped = not evaluated) and kind.",
    ("decision", "kind", "operation"),
)
BAD_REQUESTS = Family(
    "kubegap_webhook_bad_requests_total", "counter", "Requests refused before review, by reason.", ("reason",)
)
ERRORS = Family(
    "kubegap_webhook_evaluation_errors_total",
    "counter",
    "Reviews answered by onError, by cause (error, deadline, internal) and outcome.",
    ("cause", "outcome"),
)
RESULTS = Family(
    "kubegap_webhook_results_total",
    "counter",
    "Validation results of evaluated reviews, by policy, rule and result.",
    ("policy", "rule", "result"),
)
DURATION = Family(
    "kubegap_webhook_request_duration_seconds", "histogram", "Time from request start to admission answer."
)
POLICIES = Family("kubegap_webhook_policies_loaded", "gauge", "Policies loaded and compiled.")
CONFIG_ERRORS = Family(
    "kubegap_webhook_config_errors_total",
    "counter",
    "Configuration that could not be (re)loaded, by source (tls = certificate or key files).",
    ("source",),
)
CERT_RELOADS = Family(
    "kubegap_webhook_certificate_reloads_total",
    "counter",
    "Certificate and key files picked up after a change.",
)
FAMILIES: tuple[Family, ...] = (
    REQUESTS, BAD_REQUESTS, ERRORS, RESULTS, DURATION, POLICIES, CONFIG_ERRORS, CERT_RELOADS,
)  # fmt: skip

_Series = dict[
    str, dict[Labels, list[float]]
]  # family name -> label values -> value (histogram: buckets, sum, n)


class Metrics:
    def __init__(self, directory: str | None = None, worker: str | None = None) -> None:
        self._directory = Path(directory) if directory else None
        self._worker = worker  # the snapshot's file name; the pid (read after fork) when None
        self._lock = threading.Lock()
        self._series: _Series = {f.name: {} for f in FAMILIES}
        self._dirty = False
        self._flusher: threading.Thread | None = None
        self._stop = threading.Event()

    def inc(self, family: Family, labels: Labels = (), amount: float = 1.0) -> None:
        with self._lock:
            values = self._series[family.name].setdefault(labels, [0.0])
            values[0] += amount
            self._dirty = True

    def set(self, family: Family, value: float, labels: Labels = ()) -> None:
        with self._lock:
            self._series[family.name][labels] = [value]

    def observe(self, family: Family, seconds: float, labels: Labels = ()) -> None:
        with self._lock:
            values = self._series[family.name].setdefault(labels, [0.0] * (len(BUCKETS) + 2))
            for index, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    values[index] += 1
            values[-2] += seconds
            values[-1] += 1
            self._dirty = True

    def value(self, family: Family, labels: Labels = ()) -> float:
        """This process's count (a histogram's: its observations); for tests and health checks."""
        with self._lock:
            values = self._series[family.name].get(labels)
        return values[-1] if values else 0.0

    def start_flusher(self, interval: float = 1.0) -> None:
        """Write this worker's counts to the shared directory in the background (call after fork)."""
        if self._directory is None or self._flusher is not None:
            return
        self._flusher = threading.Thread(
            target=self._flush_loop, args=(interval,), name="metrics", daemon=True
        )
        self._flusher.start()

    def _flush_loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            if self._dirty:
                self.flush()

    def flush(self) -> None:
        if self._directory is None:
            return
        with self._lock:
            snapshot = {
                name: [[list(k), v] for k, v in series.items()] for name, series in self._series.items()
            }
            self._dirty = False
        target = self._directory / f"{self._worker or os.getpid()}.json"
        temporary = target.with_suffix(".tmp")
        try:
            temporary.write_text(json.dumps(snapshot), "utf-8")
            temporary.replace(target)
        except OSError as err:
            log.warning("cannot write metrics snapshot %s: %s", target, err)

    def render(self) -> str:
        """The exposition text: counters and histograms summed over all workers, gauges of this one."""
        self.flush()
        with self._lock:
            own = {name: {k: list(v) for k, v in series.items()} for name, series in self._series.items()}
        merged = self._merged() if self._directory else own
        for family in FAMILIES:
            if family.kind == "gauge":
                merged[family.name] = own[family.name]
        return "".join(_render_family(f, merged.get(f.name, {})) for f in FAMILIES)

    def _merged(self) -> _Series:
        assert self._directory is not None
        total: _Series = {f.name: {} for f in FAMILIES}
        for path in sorted(self._directory.glob("*.json")):
            try:
                snapshot = json.loads(path.read_text("utf-8"))
            except (OSError, ValueError) as err:
                log.warning("skipping unreadable metrics snapshot %s: %s", path, err)
                continue
            for name, series in snapshot.items():
                if name in total:
                    _add(total[name], series)
        return total


def _add(into: dict[Labels, list[float]], series: Sequence[Sequence[object]]) -> None:
    for labels, values in series:
        assert isinstance(labels, list) and isinstance(values, list)
        key = tuple(str(v) for v in labels)
        current = into.setdefault(key, [0.0] * len(values))
        for index, number in enumerate(values):
            current[index] += float(number)


def _render_family(family: Family, series: Mapping[Labels, list[float]]) -> str:
    lines = [f"# HELP {family.name} {family.help}", f"# TYPE {family.name} {family.kind}"]
    if not family.labels and not series:
        # An unlabelled family is always shown, from zero, so that dashboards need no special case.
        series = {(): [0.0] * (len(BUCKETS) + 2 if family.kind == "histogram" else 1)}
    for labels in sorted(series):
        values = series[labels]
        pairs = list(zip(family.labels, labels, strict=True))
        if family.kind != "histogram":
            lines.append(f"{family.name}{_labels(pairs)} {_number(values[0])}")
            continue
        for bound, count in zip(BUCKETS, values, strict=False):
            lines.append(f"{family.name}_bucket{_labels([*pairs, ('le', repr(bound))])} {_number(count)}")
        lines.append(f"{family.name}_bucket{_labels([*pairs, ('le', '+Inf')])} {_number(values[-1])}")
        lines.append(f"{family.name}_sum{_labels(pairs)} {_number(values[-2])}")
        lines.append(f"{family.name}_count{_labels(pairs)} {_number(values[-1])}")
    return "\n".join(lines) + "\n"


def _labels(pairs: Sequence[tuple[str, str]]) -> str:
    if not pairs:
        return ""
    escaped = (v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for _, v in pairs)
    return "{" + ",".join(f'{k}="{v}"' for (k, _), v in zip(pairs, escaped, strict=True)) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)

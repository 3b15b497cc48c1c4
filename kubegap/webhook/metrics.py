"""The webhook's Prometheus metrics, through prometheus-client.

Under `kubegap serve` the client runs in its multiprocess mode: each process writes its values to
memory-mapped files in a private directory (PROMETHEUS_MULTIPROC_DIR, which serve sets before the client is
first imported), and a scrape, whichever worker answers it, adds up every file at that moment, so no
worker's counts lag. The gunicorn master starts the known series at zero before it forks. Files of exited
workers stay, so counters never go down; gauges are `livemax`, the highest value among live processes.
Without a directory (tests, in-process use) the values are this process's own.
https://prometheus.github.io/client_python/multiprocess/
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client.metrics import disable_created_metrics
from prometheus_client.multiprocess import MultiProcessCollector

from kubegap.findings import Result

# A `_created` series per counter child doubles the series and tells nothing a restart count does not.
disable_created_metrics()  # type: ignore[no-untyped-call]

Labels = tuple[str, ...]
BUCKETS: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
DECISIONS = ("allowed", "warned", "denied", "skipped")
OPERATIONS = ("CREATE", "UPDATE")  # the operations the chart's webhook configuration sends
BAD_REASONS = ("malformed", "content-type", "too-large", "timeout")
CAUSES = ("error", "deadline", "internal")
OUTCOMES = ("allowed", "denied")


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    kind: Literal["counter", "gauge", "histogram"]
    help: str
    labels: tuple[str, ...] = ()


REQUESTS = Family(
    "kubegap_webhook_requests_total",
    "counter",
    "Admission reviews answered, by decision (allowed, warned, denied, skipped = not evaluated), kind "
    "(Kind.group, e.g. Job.batch or Job.batch.volcano.sh; Pod for the core group) and operation.",
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
BUILD_INFO = Family(
    "kubegap_build_info",
    "gauge",
    "Always 1: the kubegap version and the digest of the policy set it serves (as `kubegap version` prints).",
    ("version", "policySet"),
)
FAMILIES: tuple[Family, ...] = (
    REQUESTS, BAD_REQUESTS, ERRORS, RESULTS, DURATION, POLICIES, CONFIG_ERRORS, CERT_RELOADS, BUILD_INFO,
)  # fmt: skip


def kind_label(group: str, kind: str) -> str:
    """`Job.batch`, `Job.batch.volcano.sh`, `Pod`: the kind alone cannot tell same-named kinds apart."""
    return f"{kind}.{group}" if group else kind


def multiprocess() -> bool:
    """Whether prometheus-client chose its multiprocess mode (it decides once, when first imported)."""
    return values.ValueClass is not values.MutexValue


class Metrics:
    def __init__(self, directory: str | None = None) -> None:
        """`directory`: the PROMETHEUS_MULTIPROC_DIR whose files a scrape adds up (None: this process)."""
        if directory is not None and not multiprocess():
            raise RuntimeError("prometheus-client was imported before PROMETHEUS_MULTIPROC_DIR was set")
        self._directory = directory
        self._registry = CollectorRegistry()
        self._metrics = {f.name: _metric(f, self._registry) for f in FAMILIES}
        self._children: dict[tuple[str, Labels], Any] = {}
        self._lock = threading.Lock()

    def inc(self, family: Family, labels: Labels = (), amount: float = 1.0) -> None:
        self._child(family, labels).inc(amount)

    def set(self, family: Family, value: float, labels: Labels = ()) -> None:
        self._child(family, labels).set(value)

    def observe(self, family: Family, seconds: float, labels: Labels = ()) -> None:
        self._child(family, labels).observe(seconds)

    def start_at_zero(self, kinds: Iterable[tuple[str, str]], rules: Iterable[tuple[str, str]]) -> None:
        """Create the series that reviews can reach, at 0, so that rates and alerts see them from the
        start: every (group, kind) reviewed, every (policy, rule) loaded, and the fixed reasons and causes."""
        seeds: list[tuple[Family, Labels]] = [
            (REQUESTS, (decision, kind_label(group, kind), operation))
            for group, kind in kinds
            for decision in DECISIONS
            for operation in OPERATIONS
        ]
        seeds += [(RESULTS, (p, r, result.value)) for p, r in rules for result in Result]
        seeds += [(ERRORS, (cause, outcome)) for cause in CAUSES for outcome in OUTCOMES]
        seeds += [(BAD_REQUESTS, (reason,)) for reason in BAD_REASONS]
        seeds.append((CONFIG_ERRORS, ("tls",)))
        for family, labels in seeds:
            self._child(family, labels)

    def after_fork(self) -> None:
        """In a new worker: the client moves every series to this process's files on its first read or
        write after a fork (11 ms for the bundled policies); do it now rather than inside the first review."""
        self.value(POLICIES)

    def value(self, family: Family, labels: Labels = ()) -> float:
        """This process's count (a histogram's: its observations); for tests and health checks."""
        sample = family.name + ("_count" if family.kind == "histogram" else "")
        found = self._registry.get_sample_value(sample, dict(zip(family.labels, labels, strict=True)))
        return found or 0.0

    def render(self) -> str:
        """The exposition text: every process's values added up, or this process's without a directory."""
        registry = self._registry
        if self._directory is not None:
            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=self._directory)  # type: ignore[no-untyped-call]
        return generate_latest(registry).decode()

    def _child(self, family: Family, labels: Labels) -> Any:
        key = (family.name, labels)
        child = self._children.get(key)
        if child is None:
            with self._lock:
                metric = self._metrics[family.name]
                child = self._children[key] = metric.labels(*labels) if family.labels else metric
        return child


def _metric(family: Family, registry: CollectorRegistry) -> Any:
    common: dict[str, Any] = {"labelnames": family.labels, "registry": registry}
    if family.kind == "counter":
        return Counter(family.name, family.help, **common)
    if family.kind == "histogram":
        return Histogram(family.name, family.help, buckets=BUCKETS, **common)
    return Gauge(family.name, family.help, multiprocess_mode="livemax", **common)

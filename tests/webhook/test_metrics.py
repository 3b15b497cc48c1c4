"""Prometheus text output, and counts summed across worker processes through the snapshot directory."""

from __future__ import annotations

from pathlib import Path

from kubegap.webhook.metrics import (
    BAD_REQUESTS,
    DURATION,
    FAMILIES,
    POLICIES,
    REQUESTS,
    RESULTS,
    Metrics,
)


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_every_family_has_help_and_type() -> None:
    text = Metrics().render()
    for family in FAMILIES:
        assert f"# HELP {family.name} " in text
        assert f"# TYPE {family.name} {family.kind}\n" in text


def test_counters_gauges_and_histograms_render_in_text_format() -> None:
    metrics = Metrics()
    metrics.inc(REQUESTS, ("denied", "PyTorchJob", "CREATE"))
    metrics.inc(REQUESTS, ("denied", "PyTorchJob", "CREATE"))
    metrics.inc(BAD_REQUESTS, ('we"ird\\',))
    metrics.set(POLICIES, 6)
    metrics.observe(DURATION, 0.003)
    metrics.observe(DURATION, 0.2)
    samples = _samples(metrics.render())
    assert (
        samples['kubegap_webhook_requests_total{decision="denied",kind="PyTorchJob",operation="CREATE"}'] == 2
    )
    assert samples['kubegap_webhook_bad_requests_total{reason="we\\"ird\\\\"}'] == 1
    assert samples["kubegap_webhook_policies_loaded"] == 6
    assert samples['kubegap_webhook_request_duration_seconds_bucket{le="0.0025"}'] == 0
    assert samples['kubegap_webhook_request_duration_seconds_bucket{le="0.005"}'] == 1
    assert samples['kubegap_webhook_request_duration_seconds_bucket{le="0.25"}'] == 2
    assert samples['kubegap_webhook_request_duration_seconds_bucket{le="+Inf"}'] == 2
    assert samples["kubegap_webhook_request_duration_seconds_count"] == 2
    assert abs(samples["kubegap_webhook_request_duration_seconds_sum"] - 0.203) < 1e-9


def test_unlabelled_families_start_at_zero() -> None:
    samples = _samples(Metrics().render())
    assert samples["kubegap_webhook_policies_loaded"] == 0
    assert samples["kubegap_webhook_request_duration_seconds_count"] == 0


def test_workers_counts_are_summed_and_gauges_are_the_answering_workers(tmp_path: Path) -> None:
    first, second = Metrics(str(tmp_path), "101"), Metrics(str(tmp_path), "102")
    for metrics, rule_count, policies in ((first, 2, 5), (second, 3, 7)):
        metrics.set(POLICIES, policies)
        for _ in range(rule_count):
            metrics.inc(RESULTS, ("nccl-timeout", "timeout-declared", "fail"))
            metrics.observe(DURATION, 0.01)
    second.flush()
    samples = _samples(first.render())
    assert (
        samples['kubegap_webhook_results_total{policy="nccl-timeout",rule="timeout-declared",result="fail"}']
        == 5
    )
    assert samples["kubegap_webhook_request_duration_seconds_count"] == 5
    assert samples["kubegap_webhook_policies_loaded"] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["101.json", "102.json"]


def test_a_broken_snapshot_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "999.json").write_text("{not json")
    metrics = Metrics(str(tmp_path), "1")
    metrics.inc(BAD_REQUESTS, ("malformed",))
    assert _samples(metrics.render())['kubegap_webhook_bad_requests_total{reason="malformed"}'] == 1


def test_value_reads_this_processes_count() -> None:
    metrics = Metrics()
    metrics.inc(BAD_REQUESTS, ("too-large",), 3)
    metrics.observe(DURATION, 1.0)
    assert metrics.value(BAD_REQUESTS, ("too-large",)) == 3
    assert metrics.value(DURATION) == 1
    assert metrics.value(BAD_REQUESTS, ("other",)) == 0

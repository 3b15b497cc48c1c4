"""Prometheus exposition through prometheus-client: families, zero-started series, build info, and the
multiprocess mode `kubegap serve` runs in (checked in a subprocess: the mode is chosen at import)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kubegap import __version__, policy, policyset
from kubegap.config import Settings
from kubegap.kinds import SUPPORTED_KINDS
from kubegap.webhook import serve
from kubegap.webhook.app import ServerState, build_reviewer
from kubegap.webhook.metrics import (
    BAD_REQUESTS,
    DECISIONS,
    DURATION,
    FAMILIES,
    POLICIES,
    REQUESTS,
    Metrics,
    multiprocess,
)

from .exposition import count, families, labels_of, total

HERE = Path(__file__).parent


def test_every_family_has_help_and_type() -> None:
    declared = families(Metrics().render())
    for family in FAMILIES:
        base = family.name.removesuffix("_total")  # the parser names a counter family without it
        assert declared[base] == family.kind


def test_counters_gauges_and_histograms_render_in_text_format() -> None:
    metrics = Metrics()
    metrics.inc(REQUESTS, ("denied", "PyTorchJob.kubeflow.org", "CREATE"))
    metrics.inc(REQUESTS, ("denied", "PyTorchJob.kubeflow.org", "CREATE"))
    metrics.inc(BAD_REQUESTS, ('we"ird\\',))
    metrics.set(POLICIES, 6)
    metrics.observe(DURATION, 0.003)
    metrics.observe(DURATION, 0.2)
    text = metrics.render()
    requests = "kubegap_webhook_requests_total"
    assert total(text, requests, decision="denied", kind="PyTorchJob.kubeflow.org", operation="CREATE") == 2
    assert total(text, "kubegap_webhook_bad_requests_total", reason='we"ird\\') == 1
    assert total(text, "kubegap_webhook_policies_loaded") == 6
    bucket = "kubegap_webhook_request_duration_seconds_bucket"
    assert [total(text, bucket, le=le) for le in ("0.0025", "0.005", "0.25", "+Inf")] == [0, 1, 2, 2]
    assert total(text, "kubegap_webhook_request_duration_seconds_count") == 2
    assert abs(total(text, "kubegap_webhook_request_duration_seconds_sum") - 0.203) < 1e-9
    assert "_created" not in text  # one series per counter child, not two


def test_unlabelled_families_start_at_zero() -> None:
    text = Metrics().render()
    assert count(text, "kubegap_webhook_policies_loaded") == 1
    assert count(text, "kubegap_webhook_request_duration_seconds_count") == 1
    assert total(text, "kubegap_webhook_request_duration_seconds_count") == 0


def test_a_served_reviewer_starts_every_known_series_at_zero_and_tells_its_build() -> None:
    metrics = Metrics()
    settings = Settings()
    build_reviewer(settings, metrics)
    text = metrics.render()
    loaded = policy.load()
    rules = sum(len(p.validations) for p in loaded)
    requests = "kubegap_webhook_requests_total"
    assert count(text, requests) == len(SUPPORTED_KINDS) * len(DECISIONS) * 2  # CREATE and UPDATE
    assert count(text, requests, decision="skipped", kind="Job.batch.volcano.sh", operation="UPDATE") == 1
    assert count(text, requests, kind="Job.batch") == len(DECISIONS) * 2
    assert count(text, "kubegap_webhook_results_total") == rules * 4  # pass, fail, error, skip
    assert count(text, "kubegap_webhook_evaluation_errors_total") == 3 * 2
    assert count(text, "kubegap_webhook_bad_requests_total") == 4
    assert count(text, "kubegap_webhook_config_errors_total", source="tls") == 1
    assert total(text, requests) == 0
    digest = policyset.of_settings(settings)
    assert total(text, "kubegap_build_info", version=__version__, policySet=digest) == 1
    assert count(text, "kubegap_build_info") == 1
    assert total(text, "kubegap_webhook_policies_loaded") == len(loaded)


def test_the_policy_set_label_follows_the_parameters() -> None:
    first, second = Metrics(), Metrics()
    build_reviewer(Settings(), first)
    build_reviewer(Settings(params={"nccl-timeout": {"maxCollectiveTimeout": "20m"}}), second)
    (one,), (other,) = (labels_of(m.render(), "kubegap_build_info") for m in (first, second))
    assert one["policySet"] != other["policySet"] and len(one["policySet"]) == 12


def test_value_reads_this_processes_count() -> None:
    metrics = Metrics()
    metrics.inc(BAD_REQUESTS, ("too-large",), 3)
    metrics.observe(DURATION, 1.0)
    assert metrics.value(BAD_REQUESTS, ("too-large",)) == 3
    assert metrics.value(DURATION) == 1
    assert metrics.value(BAD_REQUESTS, ("other",)) == 0


def test_a_directory_without_the_multiprocess_mode_is_refused(tmp_path: Path) -> None:
    assert not multiprocess()  # this test process imported prometheus-client without the variable
    with pytest.raises(RuntimeError, match="PROMETHEUS_MULTIPROC_DIR"):
        Metrics(str(tmp_path))


def test_processes_add_up_at_once_and_dead_ones_keep_their_counts(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, str(HERE / "multiproc_probe.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=HERE.parents[1],
    )
    assert run.returncode == 0, run.stderr
    texts = json.loads(run.stdout)
    assert texts.pop("opened after fork") == "yes"  # not in the first review a worker judges
    requests = "kubegap_webhook_requests_total"
    for text in texts.values():
        assert total(text, requests, decision="denied", kind="Job.batch", operation="CREATE") == 5
        assert total(text, requests, kind="Job.batch.volcano.sh") == 0
        assert count(text, requests, kind="Job.batch.volcano.sh") == len(DECISIONS) * 2
        assert total(text, "kubegap_webhook_request_duration_seconds_count") == 5
    # Live gauges: the highest among live processes; a dead child's value leaves with mark_process_dead.
    assert total(texts["children ran"], "kubegap_webhook_policies_loaded") == 7
    assert total(texts["children marked dead"], "kubegap_webhook_policies_loaded") == 6


def test_gunicorn_reports_an_exited_worker_to_prometheus_client(tmp_path: Path) -> None:
    dead, live = tmp_path / "gauge_livemax_4242.db", tmp_path / "gauge_livemax_4343.db"
    counts = tmp_path / "counter_4242.db"
    for path in (dead, live, counts):
        path.write_bytes(b"")
    args = argparse.Namespace(bind="127.0.0.1", port=0, drain_seconds=0.0, workers=1, log_level="info")
    args.access_log = False
    files = SimpleNamespace(cert="tls.crt", key="tls.key")
    options = serve._options(args, files, ServerState(), str(tmp_path))  # type: ignore[arg-type]
    options["child_exit"](None, SimpleNamespace(pid=4242))
    assert sorted(p.name for p in tmp_path.iterdir()) == [counts.name, live.name]


def test_docs_list_exactly_the_metrics_served() -> None:
    text = (HERE.parents[1] / "docs" / "webhook.md").read_text("utf-8")
    section = text[text.index("\n## Metrics\n") : text.index("\n## Logs\n")]
    rows = [line for line in section.splitlines() if line.startswith("| `kubegap_")]
    listed = {name for row in rows for name in re.findall(r"`(kubegap_[a-z_]+)`", row.split("|")[1])}
    assert listed == {f.name for f in FAMILIES}


def test_the_plain_metrics_port_cannot_be_the_tls_port(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    args = parser.parse_args(["--cert=c", "--key=k", "--port=9443", "--metrics-port=9443"])
    assert serve.run(args) == 2
    assert "--metrics-port 9443 is the TLS port" in capsys.readouterr().err

"""The cost model (docs/cost-model.md): its arithmetic, its settings, and how it ranks bundled examples."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import pytest

from kubegap import cli, impact, manifests
from kubegap.config import Settings, load_config
from kubegap.errors import UsageError
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Result, Severity
from kubegap.impact import (
    ImpactSettings,
    Inputs,
    Term,
    gpu_hours_text,
    lost_gpu_hours,
    settings_from,
    severity_for,
    young_interval,
)

EXAMPLES = Path(str(files("kubegap.policies"))) / "checkpoint-interval" / "examples"


def _il0421(interval_minutes: float) -> Inputs:
    """IL-0421's job: 4,096 GPUs, 40 failures a month, 30-minute hangs, 10-minute restarts, 30 s saves."""
    return Inputs(
        gpus=4096,
        failures_per_gpu_hour=40 / (4096 * 720),
        detection=Term(0.5, "hang"),
        restart=Term(10 / 60, "restart"),
        interval=Term(interval_minutes / 60, "interval"),
        runtime=Term(720, "a month"),
        save=Term(30 / 3600, "save"),
    )


def test_the_incident_numbers() -> None:
    """The figures the model is checked against: ≈ 568,800 GPU-h a month lost at a 333-minute interval,
    ≈ 298,400 saved by moving to 10 minutes."""
    before = lost_gpu_hours(_il0421(333))
    after = lost_gpu_hours(_il0421(10))
    assert before == pytest.approx(568_800, rel=0.005)
    assert before - after == pytest.approx(298_400, rel=0.005)


def test_failures_and_young_optimum() -> None:
    inputs = _il0421(333)
    assert inputs.failures == pytest.approx(40)
    mtbf = 720 / 40
    young = young_interval(inputs)
    assert young is not None
    assert young == pytest.approx(math.sqrt(2 * (30 / 3600) * mtbf))  # √(2δM) ≈ 33 minutes
    assert young * 60 == pytest.approx(32.9, abs=0.1)


def test_no_checkpoint_loses_half_the_run_and_pays_no_save() -> None:
    none = replace(_il0421(10), interval=None, runtime=Term(72, "T"))
    per_failure = 0.5 + 10 / 60 + 72 / 2
    assert lost_gpu_hours(none) == pytest.approx(4096 * 40 * per_failure)


def test_an_interval_of_zero_counts_no_saves() -> None:
    per_failure = 0.5 + 10 / 60
    assert lost_gpu_hours(_il0421(0)) == pytest.approx(4096 * 40 * per_failure)


def test_a_workload_declaring_an_interval_of_zero_is_priced(engine: Engine) -> None:
    """A TrainJob declaring `kubegap.dev/checkpoint-interval: 0` made the engine divide by zero."""
    trainer = {"command": ["torchrun", "sft.py"], "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "sft", "annotations": {"kubegap.dev/checkpoint-interval": 0}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer},
    }
    evaluation = engine.evaluate(job)
    assert evaluation.cost is not None and evaluation.cost.inputs.interval is not None
    assert evaluation.cost.inputs.interval.hours == 0.0 and math.isfinite(evaluation.cost.lost)


def test_a_throughput_tax_adds_its_share_of_the_month() -> None:
    taxed = replace(_il0421(10), tax=0.036)
    extra = lost_gpu_hours(taxed) - lost_gpu_hours(_il0421(10))
    assert extra == pytest.approx(4096 * 720 * 0.036 / 1.036)


@pytest.mark.parametrize(
    ("saved", "expected"),
    [(10_000, "high"), (500, "high"), (499.9, "medium"), (50, "medium"), (49, "low"), (-3, "low")],
)
def test_severity_thresholds(saved: float, expected: str) -> None:
    assert severity_for(saved, ImpactSettings()) == expected


def test_settings_read_numbers_and_durations() -> None:
    got = settings_from({"failuresPerGpuHour": "3e-5", "defaultRuntime": "24h", "highGpuHours": 1000})
    assert (got.failures_per_gpu_hour, got.default_runtime_seconds, got.high_gpu_hours) == (3e-5, 86400, 1000)


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"failuresPerGpuHr": "1"}, "unknown setting"),
        ({"restartMinutes": "-3"}, "restartMinutes"),
        ({"restartMinutes": "0"}, "greater than 0"),
        ({"defaultRuntime": "three days"}, "defaultRuntime"),
    ],
)
def test_bad_settings_name_the_key(values: dict[str, str], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        settings_from(values)


def test_config_file_and_set_reach_the_model(tmp_path: Path) -> None:
    config = tmp_path / "kubegap.yaml"
    config.write_text("apiVersion: kubegap.dev/v1alpha1\nkind: Config\nimpact: {restartMinutes: 5}\n")
    settings = load_config(str(config)).with_params({"impact": {"checkpointSaveSeconds": "5"}})
    assert (settings.impact.restart_minutes, settings.impact.checkpoint_save_seconds) == (5, 5)
    assert "impact" not in settings.params  # not a policy
    config.write_text("apiVersion: kubegap.dev/v1alpha1\nkind: Config\nimpact: {restartMinutes: soon}\n")
    with pytest.raises(UsageError, match="restartMinutes"):
        load_config(str(config))


@pytest.mark.parametrize(
    ("value", "text"), [(568_311, "568k"), (1_234_567, "1.2M"), (3_210, "3.2k"), (36.4, "36"), (0.53, "0.53")]
)
def test_figures_read_at_a_glance(value: float, text: str) -> None:
    assert gpu_hours_text(value) == text


@pytest.fixture(scope="module")
def engine() -> Engine:
    return build_engine(Settings())


def _evaluate(engine: Engine, name: str) -> tuple[list[tuple[str, str, Severity, float | None]], float]:
    [doc] = [d for d in manifests.read([str(EXAMPLES / name)]) if d.obj is not None]
    assert doc.obj is not None
    evaluation = engine.evaluate(doc.obj)
    assert evaluation.cost is not None
    rows = [
        (f.policy, f.rule, f.severity, f.impact.saved if f.impact else None)
        for f in evaluation.results
        if f.result is Result.FAIL
    ]
    return rows, evaluation.cost.lost


def test_a_one_gpu_finetune_gets_nothing_above_low(engine: Engine) -> None:
    rows, lost = _evaluate(engine, "fail-single-gpu-finetune.yaml")
    assert rows, "the example still breaks the contract"
    assert all(severity is Severity.LOW for _, _, severity, _ in rows), rows
    assert lost < 1  # about half a GPU-hour a month
    checkpoint = next(saved for policy, _, _, saved in rows if policy == "checkpoint-interval")
    assert checkpoint is not None and checkpoint < 0  # 10-minute saves cost more than they save here


def test_a_4096_gpu_job_with_a_five_hour_interval_gets_a_priced_high_finding(engine: Engine) -> None:
    rows, lost = _evaluate(engine, "fail-4096-gpus-five-hour-interval.yaml")
    [(policy, rule, severity, saved)] = rows
    assert (policy, rule, severity) == ("checkpoint-interval", "interval-bounded", Severity.HIGH)
    assert saved is not None and 400_000 < saved < lost


def test_the_priced_finding_says_what_changes(engine: Engine) -> None:
    [doc] = [d for d in manifests.read([str(EXAMPLES / "fail-4096-gpus-five-hour-interval.yaml")]) if d.obj]
    assert doc.obj is not None
    [finding] = engine.evaluate(doc.obj).findings
    record = finding.to_json()["impact"]
    assert record["inputs"]["gpus"] == 4096
    assert record["inputs"]["checkpointInterval"]["text"] == "5h"
    assert record["fixed"]["checkpointInterval"]["text"] == "10m"
    assert set(record["fixed"]) == {"checkpointInterval"}  # only the term the fix changes


def test_parameters_move_the_price(engine: Engine) -> None:
    relaxed = build_engine(Settings().with_params({"checkpoint-interval": {"maxCheckpointInterval": "30m"}}))
    strict_rows, _ = _evaluate(engine, "fail-4096-gpus-five-hour-interval.yaml")
    relaxed_rows, _ = _evaluate(relaxed, "fail-4096-gpus-five-hour-interval.yaml")
    strict, loose = strict_rows[0][3], relaxed_rows[0][3]
    assert strict is not None and loose is not None and loose != strict


def test_an_unpriced_rule_says_why() -> None:
    engine = build_engine(Settings(select=("nccl-timeout",)))
    placebo = EXAMPLES.parent.parent / "nccl-timeout/examples/fail-placebo-nccl-timeout.yaml"
    [doc] = list(manifests.read([str(placebo)]))
    assert doc.obj is not None
    [finding] = engine.evaluate(doc.obj).findings
    assert finding.rule == "no-placebo-timeout" and finding.severity is Severity.LOW  # its own severity
    assert finding.impact is not None and finding.impact.saved is None
    assert finding.to_json()["impact"]["reason"] == "the cost model does not price this rule"


def test_the_readme_shows_the_priced_finding_kubegap_prints(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    section = readme[readme.index("A finding looks like this") :]
    shown = section.split("```\n", 2)[1]
    example = "policies/checkpoint-interval/examples/fail-4096-gpus-five-hour-interval.yaml"
    cli.main(["lint", "--jobs", "1", str(EXAMPLES / "fail-4096-gpus-five-hour-interval.yaml")])
    printed = capsys.readouterr().out.replace(
        str(EXAMPLES / "fail-4096-gpus-five-hour-interval.yaml"), example
    )
    assert printed.startswith(shown)


def test_a_restart_from_scratch_loses_the_run_so_far_and_still_pays_the_saves() -> None:
    kept = replace(_il0421(10), runtime=Term(72, "T"))
    lost = replace(kept, from_scratch=True)
    per_failure = 0.5 + 10 / 60 + 72 / 2
    saves = 720 / (10 / 60) * (30 / 3600)
    assert lost_gpu_hours(lost) == pytest.approx(4096 * (40 * per_failure + saves))
    assert lost_gpu_hours(lost) > lost_gpu_hours(kept)


RECOVERY = Path(str(files("kubegap.policies"))) / "checkpoint-recovery" / "examples"


def _recovery(engine: Engine, name: str) -> dict[str, tuple[Severity, float | None, str | None]]:
    [doc] = [d for d in manifests.read([str(RECOVERY / name)]) if d.obj is not None]
    assert doc.obj is not None
    return {
        f.rule: (f.severity, f.impact.saved, f.impact.reason)
        for f in engine.evaluate(doc.obj).results
        if f.result is Result.FAIL and f.policy == "checkpoint-recovery" and f.impact
    }


def test_checkpoints_lost_with_the_pod_are_priced_as_restarts_from_scratch(engine: Engine) -> None:
    severity, saved, _ = _recovery(engine, "fail-megatron-emptydir.yaml")["storage-persistent"]
    assert saved is not None and saved > 500 and severity is Severity.HIGH


def test_a_directory_kubegap_cannot_place_is_not_priced(engine: Engine) -> None:
    severity, saved, reason = _recovery(engine, "fail-output-dir-from-secret.yaml")["storage-persistent"]
    assert (severity, saved) == (Severity.HIGH, None)
    assert reason is not None and "unresolved" in reason


def test_advice_is_priced_but_stays_info(engine: Engine) -> None:
    severity, saved, _ = _recovery(engine, "fail-torchtitan-sync-saves-large.yaml")["save-async"]
    # 512 GPUs, a 20 s save every 200 s: 10% of the month, the upper bound of what async saves recover
    assert severity is Severity.INFO
    assert saved == pytest.approx(512 * 720 * 0.1)


def _json_diff(fixed: Inputs, now: Inputs) -> dict[str, object]:
    """What a fix changes, as the report defined it: the entries of the fixed inputs' JSON that differ."""
    before = now.to_json()
    return {k: v for k, v in fixed.to_json().items() if before.get(k) != v}


def test_what_a_fix_changes_is_every_entry_whose_json_differs() -> None:
    now = _il0421(300)
    fixes = [
        now,  # nothing changes
        replace(now, interval=Term(now.interval.hours, now.interval.source)),  # equal, not the same
        replace(now, interval=Term(0.5, "the fix")),
        replace(now, interval=None, from_scratch=True),
        replace(now, interval=Term(5 + 1e-13, "interval")),  # hours that round to the same JSON
        replace(now, interval=Term(5, "another source")),
        replace(now, detection=Term(1 / 6, "timeout"), restart=Term(0.25, "restart")),
        replace(now, gpus=8, failures_per_gpu_hour=now.failures_per_gpu_hour * (1 + 1e-9)),
        replace(now, runtime=Term(72, "a run"), save=Term(0.01, "save"), tax=0.05),
    ]
    for fixed in fixes:
        assert fixed.changed_json(now) == _json_diff(fixed, now)
        assert list(fixed.changed_json(now)) == list(_json_diff(fixed, now))  # in the report's order
        # the text the reports write, made directly, is that JSON's text
        assert fixed.json_text(now) == json.dumps(fixed.changed_json(now), ensure_ascii=False)
        assert fixed.json_text() == json.dumps(fixed.to_json(), ensure_ascii=False)
    scratch = replace(now, interval=None)
    assert scratch.changed_json(now) == {"checkpointInterval": None}
    assert now.changed_json(scratch) == {"checkpointInterval": now.interval.to_json()}
    assert replace(now, interval=Term(5 + 1e-13, "interval")).changed_json(now) == {}


def test_a_zero_term_is_written_as_zero_whichever_sign_came_first() -> None:
    """Terms' texts are cached by hours, and -0.0 and 0.0 are one key: neither may carry its sign over."""
    for first, second in ((-0.0, 0.0), (0.0, -0.0)):
        impact._hours_json.cache_clear()
        impact._term_text.cache_clear()
        for hours in (first, second):
            term = Term(hours, "a declared 0s")
            assert json.dumps(term.to_json(), ensure_ascii=False) == term.json_text()
            assert '"hours": 0.0,' in term.json_text()

from __future__ import annotations

import gc
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubegap import cli
from tests.support.samples import RECORD_FIELDS

DATA = Path(__file__).parent / "data" / "engine"
TRAIN = str(DATA / "train.yaml")
COMPLIANT = str(DATA / "compliant.yaml")
TRAIN_RULES = {
    ("restart-budget", "auto-restart"),
    ("nccl-timeout", "timeout-bounded"),
    ("checkpoint-interval", "interval-bounded"),
    ("gpu-nic-topology", "no-transport-fallback"),
    ("nccl-timeout", "async-error-handling"),
    ("nccl-flight-recorder", "recorder-on"),  # nothing turns the recorder on
}
BUNDLED = {
    "hot-spares",
    "link-monitor",
    "nccl-timeout",
    "checkpoint-interval",
    "gpu-nic-topology",
    "health-probes",
    "restart-budget",
    "gpu-node-health",
    "checkpoint-recovery",
    "gpu-nic-alignment",
    "gpu-nic-rails",
    "nccl-transport",
    "nccl-flight-recorder",
    "disruption-budget",
    "health-taints",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def lint_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(capsys, "lint", "--format", "json", "--jobs", "1", *argv)
    document: dict[str, Any] = json.loads(out)
    return code, document


def rules(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["policy"], f["rule"]) for f in document["findings"]}


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert code == 2
    assert out == ""
    assert "usage: kubegap" in err
    assert "lint" in err and "policies" in err


def test_the_command_exits_with_mains_code_and_leaves_what_it_made_to_the_exit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["kubegap", "lint", "--format", "json", "--jobs", "1", TRAIN])
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as caught:
            cli.entry()
        assert caught.value.code == 1
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # this test process goes on collecting
    assert rules(json.loads(capsys.readouterr().out)) == TRAIN_RULES


def test_python_m_kubegap_writes_the_whole_report_and_its_exit_code() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kubegap", "lint", "--format", "json", TRAIN],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert rules(json.loads(done.stdout)) == TRAIN_RULES


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.startswith("kubegap ")


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        ([COMPLIANT], 0),
        ([TRAIN], 1),
        ([TRAIN, "--fail-on", "critical"], 0),
        ([TRAIN, "--fail-on", "medium"], 1),
        # a 16-GPU job: a missing restart budget is priced low (docs/cost-model.md), below the default high
        ([TRAIN, "--policy", "restart-budget"], 0),
        ([TRAIN, "--policy", "restart-budget", "--fail-on", "low"], 1),
        ([COMPLIANT, "--set", "nccl-timeout.maxCollectiveTimeout=10m", "--fail-on", "low"], 1),
        ([TRAIN, "--set", "impact.noSuchInput=1"], 2),
        ([TRAIN, "--set", "impact.restartMinutes=-3"], 2),
        (["/no/such/file.yaml"], 2),
        ([TRAIN, "--policy", "no-such-policy"], 2),
        ([TRAIN, "--set", "nccl-timeout.maxCollectiveTimeout=soon"], 2),
        ([TRAIN, "--set", "nccl-timeout.noSuchParam=1"], 2),
        ([TRAIN, "--set", "missing-equals"], 2),
        ([TRAIN, "--config", "/no/such/config.yaml"], 2),
    ],
)
def test_lint_exit_codes(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> None:
    got, _, err = run(capsys, "lint", "--jobs", "1", *argv)
    assert got == code, err
    if code == 2:
        assert err.startswith("kubegap: ")


def test_lint_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "lint", "--jobs", "1", TRAIN)
    assert code == 1
    assert out.startswith(f"{TRAIN}\n")
    assert "19:5  low      restart-budget/auto-restart  PyTorchJob/ml/llm" in out
    assert (
        "30:19  low      nccl-timeout/timeout-bounded  PyTorchJob/ml/llm, role Worker, container trainer"
        in out
    )
    assert "  PyTorchJob/ml/llm: ≈ 693 GPU-h/month at risk on 16 GPU(s)" in out
    assert "impact: fixing saves ≈ 400 GPU-h/month" in out  # the slow transport, at the incident's 3.6%
    assert out.rstrip().endswith("1 object(s) checked: 6 finding(s) (1 high, 5 low), 1 not applicable")
    assert err == ""


def test_json_output_has_exactly_the_record_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, document = lint_json(capsys, TRAIN)
    assert code == 1
    assert set(document) == {"findings", "summary", "workloads"}
    assert rules(document) == TRAIN_RULES
    for finding in document["findings"]:
        assert set(finding) == RECORD_FIELDS
        assert set(finding["object"]) == {"apiVersion", "kind", "namespace", "name"}
        assert finding["object"] == {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "namespace": "ml",
            "name": "llm",
        }
        assert finding["result"] == "fail"
        assert finding["severity"] in {"high", "medium", "low"}
        assert finding["impact"]["inputs"]["gpus"] == 16
        assert (finding["file"], finding["document"]) == (TRAIN, 1)
        assert isinstance(finding["line"], int) and isinstance(finding["column"], int)
    assert document["summary"]["objects"] == 1


def test_policy_and_skip_select(capsys: pytest.CaptureFixture[str]) -> None:
    _, only = lint_json(capsys, TRAIN, "--policy", "nccl-timeout", "--policy", "restart-budget")
    assert {p for p, _ in rules(only)} == {"nccl-timeout", "restart-budget"}
    _, skipped = lint_json(capsys, TRAIN, "--skip", "nccl-timeout")
    assert rules(skipped) == {r for r in TRAIN_RULES if r[0] != "nccl-timeout"}


def test_set_overrides_a_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    _, relaxed = lint_json(
        capsys,
        TRAIN,
        "--set",
        "nccl-timeout.maxCollectiveTimeout=2h",
        "--set",
        "checkpoint-interval.maxCheckpointInterval=30m",
    )
    assert rules(relaxed) == TRAIN_RULES - {
        ("nccl-timeout", "timeout-bounded"),
        ("checkpoint-interval", "interval-bounded"),
    }


def test_config_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "kubegap.yaml"
    config.write_text(
        "apiVersion: kubegap.dev/v1alpha1\nkind: Config\nskip: [gpu-nic-topology]\nfailOn: critical\n"
        "params:\n  nccl-timeout: {maxCollectiveTimeout: 2h}\n"
    )
    code, document = lint_json(capsys, TRAIN, "--config", str(config))
    assert code == 0  # failOn critical
    assert rules(document) == TRAIN_RULES - {
        ("nccl-timeout", "timeout-bounded"),
        ("gpu-nic-topology", "no-transport-fallback"),
    }
    code, _ = lint_json(capsys, TRAIN, "--config", str(config), "--fail-on", "low")
    assert code == 1  # the command line beats the file


def test_broken_config_file_names_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "kubegap.yaml"
    config.write_text("apiVersion: kubegap.dev/v1alpha1\nkind: Config\nfailOn: urgent\n")
    code, out, err = run(capsys, "lint", TRAIN, "--config", str(config))
    assert (code, out) == (2, "")
    assert str(config) in err and "/failOn" in err


class FakeStdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", FakeStdin(Path(TRAIN).read_bytes()))
    code, document = lint_json(capsys, "-")
    assert code == 1
    assert rules(document) == TRAIN_RULES
    assert {f["file"] for f in document["findings"]} == {"<stdin>"}


def test_junk_beside_a_valid_manifest(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "a-bomb.yaml").write_text(
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
    )
    (tmp_path / "b-dup.yaml").write_text("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: a\n  name: b\n")
    (tmp_path / "c-deep.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nspec: " + "[" * 1000 + "]" * 1000 + "\n"
    )
    (tmp_path / "d-helm.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}\n"
    )
    (tmp_path / "e-binary.yaml").write_bytes(b"\x00\x01\x02\xff")
    (tmp_path / "f-empty.yaml").write_text("")
    (tmp_path / "g-train.yaml").write_text(Path(TRAIN).read_text())
    code, document = lint_json(capsys, str(tmp_path))
    assert code == 2
    invalid = sorted(
        (Path(f["file"]).name, f["rule"]) for f in document["findings"] if f["policy"] == "invalid-manifest"
    )
    assert invalid == [
        ("a-bomb.yaml", "alias-limit"),
        ("b-dup.yaml", "duplicate-key"),
        ("c-deep.yaml", "too-deep"),
        ("d-helm.yaml", "unrendered-template"),
        ("e-binary.yaml", "binary"),
    ]
    checked = {(f["policy"], f["rule"]) for f in document["findings"] if f["file"].endswith("g-train.yaml")}
    assert checked == TRAIN_RULES
    assert (document["summary"]["objects"], document["summary"]["invalid"]) == (1, 5)


def test_user_policy_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "no-latest.yaml").write_text(
        textwrap.dedent(
            """\
            apiVersion: kubegap.dev/v1alpha1
            kind: Policy
            metadata: {name: no-latest}
            spec:
              title: Pin images
              severity: critical
              scope: container
              remediation: Pin the image.
              validations:
                - name: pinned
                  expression: "!object.kind.startsWith('PyTorch') || container.name != 'trainer'"
                  fieldPathExpression: "container.path + '.image'"
            """
        )
    )
    code, document = lint_json(capsys, COMPLIANT, "--policies", str(tmp_path), "--policy", "no-latest")
    assert code == 1
    (finding,) = document["findings"]
    assert (finding["policy"], finding["severity"], finding["line"]) == ("no-latest", "critical", 19)


def test_broken_user_policy_stops_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: kubegap.dev/v1alpha1\nkind: Policy\nmetadata: {name: bad}\nspec:\n  title: t\n"
        "  severity: low\n  scope: container\n  remediation: r\n  validations:\n"
        "    - {name: v, expression: 'container.gpus >'}\n"
    )
    code, out, err = run(capsys, "lint", COMPLIANT, "--policies", str(tmp_path))
    assert (code, out) == (2, "")
    assert "policy bad, validation v: CEL does not compile" in err


def test_internal_error_exits_3(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from kubegap import lint

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(lint, "lint_files", explode)
    code, _, err = run(capsys, "lint", COMPLIANT)
    assert code == 3
    assert "internal error" in err and "RuntimeError: boom" in err


def test_policies_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "policies", "list")
    assert code == 0
    listed = {line.split()[0] for line in out.splitlines() if line and not line.startswith(("`", " "))}
    assert listed == BUNDLED


def test_policies_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "policies", "list", "--format", "json", "--set", "nccl-timeout.maxCollectiveTimeout=20m"
    )
    assert code == 0
    document = json.loads(out)
    assert {p["id"] for p in document} == BUNDLED
    nccl = next(p for p in document if p["id"] == "nccl-timeout")
    assert nccl["params"]["maxCollectiveTimeout"] == "20m"
    assert {v["name"] for v in nccl["validations"]} == {
        "timeout-declared",
        "timeout-bounded",
        "async-error-handling",
        "watchdog-enabled",
        "no-placebo-timeout",
    }


def test_policies_list_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "policies", "list", "--format", "markdown")
    assert code == 0
    assert out.startswith("# kubegap rules\n")
    for pid in BUNDLED:
        assert f"## `{pid}` — " in out


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_policies_show(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, _ = run(capsys, "policies", "show", "checkpoint-interval", "--format", fmt)
    assert code == 0
    assert "checkpoint-interval" in out
    assert "nccl-timeout" not in out
    assert ("10m" in out) or ("600" in out)


@pytest.mark.parametrize("argv", [["policies", "show"], ["policies", "show", "nope"]])
def test_policies_show_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("kubegap: ")


EXAMPLE_POLICY = """\
apiVersion: kubegap.dev/v1alpha1
kind: Policy
metadata: {name: gpus-even}
spec:
  title: GPUs come in pairs
  severity: low
  scope: container
  appliesTo: "container.gpus > 0"
  remediation: Request an even number of GPUs.
  validations:
    - {name: even, expression: "container.gpus % 2 == 0"}
"""


def pod(gpus: int) -> str:
    return (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        f"    - name: c\n      resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n"
    )


@pytest.mark.parametrize(("fail_expectation", "code"), [("fail even", 0), ("pass even", 1)])
def test_test_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fail_expectation: str, code: int
) -> None:
    folder = tmp_path / "gpus-even"
    (folder / "examples").mkdir(parents=True)
    (folder / "policy.yaml").write_text(EXAMPLE_POLICY)
    (folder / "examples" / "pass-two.yaml").write_text("# expect: pass even\n" + pod(2))
    (folder / "examples" / "fail-three.yaml").write_text(f"# expect: {fail_expectation}\n" + pod(3))
    got, out, _ = run(capsys, "test", str(tmp_path))
    assert got == code
    assert out.splitlines()[-1] == ("2 passed, 0 failed" if code == 0 else "1 passed, 1 failed")

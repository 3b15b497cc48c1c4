"""`kubegap fix` from the command line: --diff and --write, stdin, --policy ID/RULE, exit codes, and the
files it refuses to touch (links out of the tree, files changed since they were read, unreadable files)."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest

from kubegap import cli
from kubegap.fix import files
from kubegap.fix.checked import Scope
from tests.fix.support import engine

MANIFESTS = Path(__file__).parent.parent / "data" / "fix" / "manifests"
HF = MANIFESTS / "job-hf-block-args.yaml"
# HF Trainer's default collective timeout is 30 min: below it, the trainer's unwritten timeout has a fix.
BOUND = "--set=nccl-timeout.maxCollectiveTimeout=20m"


@pytest.fixture
def job(tmp_path: Path) -> Path:
    target = tmp_path / "deploy" / "job.yaml"
    target.parent.mkdir()
    shutil.copy(HF, target)
    return target


def test_diff_is_the_default_changes_nothing_and_exits_1(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = job.read_bytes()
    assert cli.main(["fix", "--policy", "nccl-timeout", BOUND, str(job)]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(f"--- {job}\n+++ {job}\n@@ ")
    assert '+            - "1200"\n' in out
    assert "nccl-timeout/timeout-bounded: fixed: added --ddp_timeout 1200 to args" in err
    assert job.read_bytes() == before


def test_write_changes_the_file_once_and_a_second_run_finds_nothing(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mode = 0o640
    job.chmod(mode)
    assert cli.main(["fix", "--write", BOUND, str(job.parent)]) == 0
    first = job.read_text()
    assert "--ddp_timeout" in first and "livenessProbe" in first
    assert job.stat().st_mode & 0o777 == mode
    capsys.readouterr()
    assert cli.main(["fix", "--write", BOUND, str(job.parent)]) == 0
    assert job.read_text() == first
    assert cli.main(["fix", BOUND, str(job)]) == 0
    _, err = capsys.readouterr()
    assert "0 file(s) would change" in err
    skips = ["--skip", "gpu-nic-topology", "--skip", "checkpoint-interval"]
    assert cli.main(["lint", BOUND, *skips, str(job)]) == 0


def test_policy_rule_selects_one_rule(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fix", "--write", "--policy", "health-probes/liveness-probe", BOUND, str(job)]) == 0
    text = job.read_text()
    assert "livenessProbe" in text and "--ddp_timeout" not in text
    assert cli.main(["fix", "--policy", "/x", str(job)]) == 2
    assert cli.main(["fix", "--policy", "health-probes/liveness", str(job)]) == 2
    assert "no such rule; health-probes has liveness-probe, probe-window" in capsys.readouterr().err


def test_stdin_with_write_prints_the_fixed_stream(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(HF.read_bytes())))
    assert cli.main(["fix", "--write", "--policy", "nccl-timeout", BOUND, "-"]) == 0
    out, _ = capsys.readouterr()
    assert out == HF.read_text().replace(
        '            - "4"\n', '            - "4"\n            - --ddp_timeout\n            - "1200"\n'
    )


def test_a_link_out_of_the_tree_is_not_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside.yaml"
    shutil.copy(HF, outside)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "job.yaml").symlink_to(outside)
    assert cli.main(["fix", "--write", str(tree)]) == 2
    assert "outside" in capsys.readouterr().err
    assert outside.read_bytes() == HF.read_bytes()
    inside = tree / "real.yaml"
    shutil.copy(HF, inside)
    (tree / "job.yaml").unlink()
    (tree / "job.yaml").symlink_to(inside)
    assert cli.main(["fix", "--write", "--policy", "nccl-timeout", BOUND, str(tree / "job.yaml")]) == 0
    assert (tree / "job.yaml").is_symlink() and "--ddp_timeout" in inside.read_text()


def test_a_file_changed_since_it_was_read_is_not_written(job: Path) -> None:
    (source,) = files.sources([str(job)], None)
    fixed = files.fix_source(source, Scope(engine("nccl-timeout"), {}, lambda f: True))
    job.write_text(job.read_text() + "# edited meanwhile\n")
    with pytest.raises(files.Refused, match="changed since"):
        files.write(fixed)
    assert job.read_text().endswith("# edited meanwhile\n")


def test_a_file_with_an_unreadable_document_is_left_untouched(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = job.read_text() + "---\nkind: [unclosed\n"
    job.write_text(broken)
    assert cli.main(["fix", "--write", str(job)]) == 2
    assert "cannot read document 2" in capsys.readouterr().err
    assert job.read_text() == broken
    assert [p.name for p in job.parent.iterdir()] == [job.name]  # no temporary file left behind


def test_a_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    assert cli.main(["fix", str(tmp_path / "nope.yaml")]) == 2


def test_lint_text_output_says_how_many_findings_fix_can_fix(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["lint", "--jobs", "1", BOUND, str(job)]) == 1
    out, _ = capsys.readouterr()
    lines = out.rstrip("\n").splitlines()
    assert lines[-2] == (
        "kubegap fix can fix 2 of these finding(s): run `kubegap fix PATH…` to see the diff"
    )  # the collective timeout and the liveness probe; the NIC, checkpoint, flight-recorder and
    # disruption findings need a person
    assert lines[-1].startswith("1 object(s) checked: 9 finding(s)")  # 2 of checkpoint-recovery
    assert cli.main(["fix", "--write", BOUND, str(job)]) == 0
    capsys.readouterr()
    cli.main(["lint", "--jobs", "1", BOUND, str(job)])
    assert "kubegap fix can fix" not in capsys.readouterr().out
    assert cli.main(["lint", "--format", "json", "--jobs", "1", BOUND, str(job)]) == 1
    assert "kubegap fix" not in capsys.readouterr().out


def test_lint_counts_the_files_it_read_not_stdin(
    job: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # stdin cannot be read again to be fixed in place: its findings are listed, not counted
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(job.read_bytes())))
    assert cli.main(["lint", "--jobs", "1", BOUND, "-", str(job)]) == 1
    lines = capsys.readouterr().out.rstrip("\n").splitlines()
    assert lines[-2].startswith("kubegap fix can fix 2 of these finding(s): ")
    assert lines[-1].startswith("2 object(s) checked: 18 finding(s)")


def test_lint_does_not_count_a_rendered_stream_whose_findings_name_templates(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job.write_text("# Source: trainer/templates/job.yaml\n" + job.read_text())
    assert cli.main(["lint", "--jobs", "1", BOUND, str(job)]) == 1
    out = capsys.readouterr().out
    assert "trainer/templates/job.yaml" in out and "kubegap fix can fix" not in out


def test_a_file_changed_since_lint_read_it_counts_nothing(job: Path) -> None:
    from kubegap import manifests
    from kubegap.fix.reports import of_file
    from kubegap.lint import lint_documents

    the_engine = engine(
        "nccl-timeout", "health-probes", params={"nccl-timeout": {"maxCollectiveTimeout": "20m"}}
    )
    scope = Scope(the_engine, {}, lambda finding: True)
    documents = list(manifests.Reader().read_bytes(job.read_bytes(), str(job)))
    findings = lint_documents(documents, the_engine, known={}).findings

    def made() -> tuple[tuple[int, int] | None, int | None]:
        fixable, suggested = of_file(str(job), str(job), documents, findings, scope, True, True)
        return fixable, None if suggested is None else len(suggested)

    assert made() == ((2, 0), 2)
    job.write_text("# edited since\n" + job.read_text())  # the documents no longer line up with the file
    assert made() == ((0, 0), 0)
    job.unlink()
    assert made() == ((0, 0), 0)


def test_the_documented_diff_is_what_kubegap_fix_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (Path(__file__).parent.parent.parent / "docs" / "fix.md").read_text("utf-8")
    command = "kubegap fix --set nccl-timeout.maxCollectiveTimeout=20m llama3-8b-sft.yaml"
    shown = page.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    shutil.copy(MANIFESTS / "pytorchjob-llama-sft.yaml", tmp_path / "llama3-8b-sft.yaml")
    monkeypatch.chdir(tmp_path)
    assert cli.main(command.split()[1:]) == 1
    assert capsys.readouterr().out == shown


def test_an_unreadable_stream_passes_through_unchanged(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    broken = b"apiVersion: v1\nkind: Pod\nmetadata: {name: x\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(broken)))
    assert cli.main(["fix", "--write", "-"]) == 2
    out, err = capsysbinary.readouterr()
    assert out == broken
    assert b"cannot read document 1" in err


def test_the_fix_count_is_the_same_in_worker_processes(tmp_path: Path) -> None:
    from kubegap.forked import PARALLEL_MIN_FILES
    from kubegap.lint import Output, lint

    for index in range(PARALLEL_MIN_FILES):
        (tmp_path / f"job-{index:02d}.yaml").write_bytes(HF.read_bytes())
    the_engine = engine(
        "nccl-timeout", "health-probes", params={"nccl-timeout": {"maxCollectiveTimeout": "20m"}}
    )
    serial = lint([str(tmp_path)], the_engine, output=Output(fixable=True))
    assert serial.fixable == (2 * PARALLEL_MIN_FILES, 0)
    parallel = lint([str(tmp_path)], the_engine, jobs=2, output=Output(fixable=True))
    assert parallel.fixable == serial.fixable and parallel.findings == serial.findings
    assert lint([str(tmp_path)], the_engine).fixable is None  # counted only when asked for


def test_parameters_from_a_config_file_set_the_fixed_values(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = job.parent / "kubegap.yaml"
    config.write_text(
        "apiVersion: kubegap.dev/v1alpha1\nkind: Config\n"
        "params:\n  nccl-timeout: {maxCollectiveTimeout: 20m}\n  health-probes: {minLivenessWindow: 10m}\n"
    )
    assert cli.main(["fix", "--write", "--config", str(config), str(job)]) == 0
    text = job.read_text()
    assert '- --ddp_timeout\n            - "1200"\n' in text
    assert "-lt 600" in text and "failureThreshold: 20\n" in text  # 30 s * 20 + 10 s >= 10 min


def test_excluded_files_and_folders_are_not_fixed_as_lint_leaves_them_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("deploy", "deploy/vendor", "deploy/generated"):
        (tmp_path / folder).mkdir()
        shutil.copy(HF, tmp_path / folder / "job.yaml")
    config = tmp_path / "kubegap.yaml"
    config.write_text("apiVersion: kubegap.dev/v1alpha1\nkind: Config\nexclude: [vendor]\n")
    args = ["fix", "--write", "--config", str(config), "--exclude", "*/generated/*", BOUND]
    assert cli.main([*args, str(tmp_path / "deploy")]) == 0
    assert "--ddp_timeout" in (tmp_path / "deploy" / "job.yaml").read_text()
    for left_out in ("vendor", "generated"):
        assert (tmp_path / "deploy" / left_out / "job.yaml").read_bytes() == HF.read_bytes()
    assert "1 file(s) changed" in capsys.readouterr().err
    named = tmp_path / "deploy" / "vendor" / "job.yaml"
    assert cli.main([*args, str(named)]) == 0  # a file named on the command line is always read
    assert "--ddp_timeout" in named.read_text()


def test_many_files_are_fixed_the_same_in_worker_processes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubegap.forked import PARALLEL_MIN_FILES

    for jobs in ("1", "2"):
        folder = tmp_path / jobs
        folder.mkdir()
        for index in range(PARALLEL_MIN_FILES):
            (folder / f"job-{index:02d}.yaml").write_bytes(HF.read_bytes())
        (folder / "broken.yaml").write_text("kind: Job\nmetadata: {name: x\n")  # refused, reported in order
    outputs = {}
    for jobs in ("1", "2"):
        assert cli.main(["fix", "--jobs", jobs, BOUND, str(tmp_path / jobs)]) == 2
        out, err = capsys.readouterr()
        outputs[jobs] = (out.replace(f"/{jobs}/", "/N/"), err.replace(f"/{jobs}/", "/N/"))
        assert out.count("+++ ") == PARALLEL_MIN_FILES
        assert cli.main(["fix", "--write", "--jobs", jobs, BOUND, str(tmp_path / jobs)]) == 2
        capsys.readouterr()
    assert outputs["2"] == outputs["1"]
    written = [sorted((p.name, p.read_bytes()) for p in (tmp_path / jobs).iterdir()) for jobs in ("1", "2")]
    assert written[0] == written[1]
    assert HF.read_bytes() not in [data for _, data in written[1]]  # every job was changed

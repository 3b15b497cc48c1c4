"""`--chart-dir`: `# Source:` names of rendered charts point at the chart's files in the repository."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kubegap import cli, forked

TRAIN = (Path(__file__).parent / "data" / "engine" / "train.yaml").read_text()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    chart = tmp_path / "deploy" / "charts" / "trainer-chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: trainer\nversion: 0.1.0\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def files(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> set[str]:
    rendered = "# Source: trainer/templates/job.yaml\n" + TRAIN
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(rendered.encode())))
    assert cli.main(["lint", "-", "-o", "json", *argv]) == 1
    return {f["file"] for f in json.loads(capsys.readouterr().out)["findings"]}


def test_source_names_map_to_the_chart_folder(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert files(capsys, monkeypatch) == {"trainer/templates/job.yaml"}
    mapped = files(capsys, monkeypatch, "--chart-dir", "deploy/charts/trainer-chart")
    assert mapped == {"deploy/charts/trainer-chart/templates/job.yaml"}


def test_chart_dirs_in_the_config_are_relative_to_it(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "deploy" / "kubegap.yaml").write_text(
        "apiVersion: kubegap.dev/v1alpha1\nkind: Config\nchartDirs: [charts/trainer-chart]\n"
    )
    mapped = files(capsys, monkeypatch, "--config", "deploy/kubegap.yaml")
    assert mapped == {"deploy/charts/trainer-chart/templates/job.yaml"}


def test_a_folder_without_a_chart_is_a_usage_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lint", "--chart-dir", "deploy", "--examples"]) == 2
    assert "--chart-dir deploy: cannot read deploy/Chart.yaml" in capsys.readouterr().err


def test_a_parallel_lint_maps_rendered_files_as_one_process_does(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Findings from worker processes name the chart's files as those of one process do."""
    rendered = repo / "rendered"
    rendered.mkdir()
    for index in range(forked.PARALLEL_MIN_FILES):
        source = f"# Source: trainer/templates/job-{index}.yaml\n"
        (rendered / f"{index:03}.yaml").write_text(source + TRAIN.replace("name: llm", f"name: llm-{index}"))
    chart = ["--chart-dir", "deploy/charts/trainer-chart"]
    outputs = []
    for jobs in ("1", "2"):
        assert cli.main(["lint", "rendered", "-o", "json", *chart, "--jobs", jobs]) == 1
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    named = {f["file"] for f in json.loads(outputs[1])["findings"]}
    templates = "deploy/charts/trainer-chart/templates"
    assert named == {f"{templates}/job-{index}.yaml" for index in range(forked.PARALLEL_MIN_FILES)}

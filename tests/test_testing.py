"""`kubegap test` (kubegap.testing): `# expect:` and `# params:` headers, and engines per parameter set."""

from __future__ import annotations

import shutil
from importlib.resources import files
from pathlib import Path

import pytest

from kubegap import testing
from kubegap.config import Settings
from kubegap.errors import UsageError
from tests.test_evaluate import policy_text

POLICY = policy_text(
    "max-gpus",
    "workload",
    """\
    - name: gpus-bounded
      expression: "facts.totalGpus <= params.maxGpus"
    """,
    extra="params: {maxGpus: {type: int, default: 512}}",
)
JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  template:
    spec:
      containers: [{name: t, image: t, resources: {limits: {nvidia.com/gpu: 8}}}]
"""


def _policies(tmp_path: Path, examples: dict[str, str]) -> Path:
    folder = tmp_path / "max-gpus"
    (folder / "examples").mkdir(parents=True)
    (folder / "policy.yaml").write_text(POLICY)
    for name, header in examples.items():
        (folder / "examples" / name).write_text(header + JOB)
    return tmp_path


def _problems(root: Path) -> dict[str, tuple[str, ...]]:
    return {o.example.path.name: o.problems for o in testing.run(root, Settings())}


def test_params_reach_the_engine_and_each_parameter_set_gets_its_own(tmp_path: Path) -> None:
    root = _policies(
        tmp_path,
        {
            "pass-default.yaml": "# expect: pass gpus-bounded\n",
            "fail-four-at-most.yaml": "# expect: fail gpus-bounded\n# params: {maxGpus: 4}\n",
            "pass-eight-at-most.yaml": "# params: {maxGpus: 8}\n# expect: pass gpus-bounded\n",
        },
    )
    assert _problems(root) == {
        "pass-default.yaml": (),
        "fail-four-at-most.yaml": (),
        "pass-eight-at-most.yaml": (),
    }


def test_an_example_without_its_params_gets_the_default(tmp_path: Path) -> None:
    root = _policies(tmp_path, {"fail-default.yaml": "# expect: fail gpus-bounded\n"})
    assert _problems(root)["fail-default.yaml"] == (
        "got pass for gpus-bounded, not expected",
        "expected fail for gpus-bounded but did not get it",
    )


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ("# params: {maxGpu: 4}", "policy max-gpus has no parameter 'maxGpu' (parameters: maxGpus)"),
        ("# params: {maxGpus: many}", "parameter max-gpus.maxGpus (int)"),
        ("# params: {maxGpus: true}", "parameter max-gpus.maxGpus (int)"),
        ("# params: [maxGpus]", "`# params:` takes a mapping of parameter names"),
        ("# params: {maxGpus: [4}", "`# params:` is not YAML"),
    ],
)
def test_bad_params_are_an_error_naming_the_example(tmp_path: Path, header: str, said: str) -> None:
    root = _policies(tmp_path, {"fail-bad.yaml": f"# expect: fail gpus-bounded\n{header}\n"})
    with pytest.raises(UsageError) as caught:
        testing.run(root, Settings())
    assert str(root / "max-gpus" / "examples" / "fail-bad.yaml") in str(caught.value)
    assert said in str(caught.value)


def test_params_below_the_leading_comments_are_not_read(tmp_path: Path) -> None:
    text = "# expect: pass gpus-bounded\n" + JOB + "# params: {maxGpus: 4}\n"
    assert testing.parse_params(text, "x.yaml") == {}


def test_a_cluster_example_is_judged_over_its_nodes_and_pods_together(tmp_path: Path) -> None:
    bundled = Path(str(files("kubegap.policies"))) / "link-monitor"
    shutil.copytree(bundled, tmp_path / "link-monitor")
    example = tmp_path / "link-monitor" / "examples" / "pass-dcgm-exporter-on-every-node.yaml"
    assert _problems(tmp_path)[example.name] == ()
    # The second node's monitor pod has finished: that node now has no monitor, which only the file's
    # Nodes and Pods judged together can show.
    text = example.read_text("utf-8")
    assert text.count("status: {phase: Running}") == 2
    example.write_text(text[::-1].replace("}gninnuR", "}deliaF", 1)[::-1], "utf-8")
    assert _problems(tmp_path)[example.name] == ("got fail for monitor-running, not expected",)

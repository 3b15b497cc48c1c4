"""`globbed`: `globs` parameters matched in Python against a unit's name lists, under both CEL runtimes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubegap import cel, globbed
from kubegap.config import Settings
from kubegap.errors import KubegapError
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Result

_POLICY = """\
apiVersion: kubegap.dev/v1alpha1
kind: Policy
metadata: {name: probe}
spec:
  title: probe
  severity: high
  scope: container
  remediation: Fix it.
  params:
    hints: {type: globs, default: ["NCCL_SOCKET_*", NCCL_IB_HCA]}
    keys: {type: globs, default: ["nvidia.com/*"]}
  validations:
    - name: hinted
      expression: "container.envNames.exists(n, n in globbed.hints)"
      messageExpression: "'matched: ' + joined(globbed.hints)"
    - name: no-gpu-toleration
      scope: template
      expression: "!template.toleratedKeys.exists(k, k in globbed.keys)"
"""


@pytest.fixture(params=cel.BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def _engine(tmp_path: Path, backend: str, params: dict[str, Any] | None = None) -> Engine:
    (tmp_path / "probe.yaml").write_text(_POLICY)
    settings = Settings(
        policy_dirs=(str(tmp_path),), select=("probe",), cel_backend=backend, params={"probe": params or {}}
    )
    return build_engine(settings)


def _job(env: list[str], tolerations: list[str]) -> dict[str, Any]:
    container = {
        "name": "trainer",
        "image": "t",
        "env": [{"name": n, "value": "x"} for n in env],
        "resources": {"limits": {"nvidia.com/gpu": 8}},
    }
    spec = {
        "containers": [container],
        "tolerations": [{"key": k, "operator": "Exists", "effect": "NoSchedule"} for k in tolerations],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ml"},
        "spec": {"template": {"spec": spec}},
    }


def _results(engine: Engine, obj: dict[str, Any]) -> dict[str, tuple[Result, str]]:
    return {f.rule: (f.result, f.message) for f in engine.evaluate(obj).results if f.policy == "probe"}


def test_names_are_matched_by_the_parameters_globs(tmp_path: Path, backend: str) -> None:
    engine = _engine(tmp_path, backend)
    found = _results(engine, _job(["NCCL_SOCKET_IFNAME", "OTHER"], ["nvidia.com/gpu"]))
    assert found["hinted"][0] is Result.PASS
    assert found["no-gpu-toleration"][0] is Result.FAIL
    missing = _results(engine, _job(["NCCL_SOCKETS", "NCCL_IB_HCA_X"], ["example.com/x"]))
    assert missing["hinted"] == (Result.FAIL, "matched: ")  # a glob matches whole names only
    assert missing["no-gpu-toleration"][0] is Result.PASS


def test_a_name_of_another_list_is_not_taken_for_one_of_this_list(tmp_path: Path, backend: str) -> None:
    """The resource name nvidia.com/gpu matches `keys`, but the template tolerates no such key."""
    engine = _engine(tmp_path, backend)
    assert _results(engine, _job([], []))["no-gpu-toleration"][0] is Result.PASS


def test_parameters_set_by_the_user_are_what_is_matched(tmp_path: Path, backend: str) -> None:
    engine = _engine(tmp_path, backend, {"hints": "OTHER*"})
    found = _results(engine, _job(["NCCL_SOCKET_IFNAME", "OTHER_ONE"], []))
    assert found["hinted"][0] is Result.PASS
    assert _results(engine, _job(["NCCL_SOCKET_IFNAME"], []))["hinted"][0] is Result.FAIL


def test_each_scope_gets_its_policies_parameters_with_names_sorted() -> None:
    globber = globbed.Globber({"hints": (["B*", "A*"], {"container"}), "none": ([], {"container", "node"})})
    values = {"container": {"envNames": ["BX", "AX", "C", 7]}, "template": {"resourceNames": "not a list"}}
    assert globber.names("container", values) == {"hints": ["AX", "BX"], "none": []}
    assert globber.names("node", values) == {"none": []}  # no name list of this scope in `values`
    assert globber.names("workload", values) == {}  # no policy with these parameters judges workloads


def test_memory_stays_bounded_on_endless_new_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(globbed, "_REMEMBERED", 10)
    globber = globbed.Globber({"hints": (["N*"], {"container"})})
    for batch in range(5):
        names = [f"N{batch}-{i}" for i in range(20)]
        assert globber.names("container", {"container": {"envNames": names}})["hints"] == sorted(names)
    assert len(globber._seen["hints"]) == 10
    monkeypatch.setattr(globbed, "_REMEMBERED", 100)
    long = "N" + "x" * 317  # longer than any qualified name Kubernetes takes: matched, not kept
    assert globber.names("container", {"container": {"envNames": [long]}})["hints"] == [long]
    assert long not in globber._seen["hints"]


def test_a_set_of_names_seen_again_is_matched_once() -> None:
    # a set matched anew gives a new result; one remembered gives the same object again
    globber = globbed.Globber({"hints": (["N*"], {"container", "template"})})
    first = globber.names("container", {"container": {"envNames": ["NA", "NB", "X"]}})
    again = globber.names("container", {"container": {"envNames": ["NA", "NB", "X"]}})
    assert first == again == {"hints": ["NA", "NB"]} and again is first
    # the same names in another scope's list are that scope's: matched for it
    other = globber.names("template", {"template": {"resourceNames": ["NA", "NB", "X"]}})
    assert other == first and other is not first
    # names in another order, and a list with what cannot be a key, are matched again, alike
    reordered = globber.names("container", {"container": {"envNames": ["X", "NB", "NA"]}})
    assert reordered == first and reordered is not first
    unhashable = globber.names("container", {"container": {"envNames": ["NA", {"NB": 1}, "NB"]}})
    assert unhashable == first and unhashable is not first
    assert globber.names("container", {"container": {"envNames": ["NA", {"NB": 1}, "NB"]}}) is not unhashable


def test_sets_of_names_remembered_are_bounded_in_number_and_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(globbed, "_SETS", 3)
    monkeypatch.setattr(globbed, "_SET_SIZE", 4)
    globber = globbed.Globber({"hints": (["N*"], {"container"})})
    big = [f"N{i}" for i in range(5)]
    assert globber.names("container", {"container": {"envNames": big}})["hints"] == sorted(big)
    assert not globber._sets  # more names than a remembered set holds
    long = ["N" + "x" * 9000]
    assert globber.names("container", {"container": {"envNames": long}})["hints"] == long
    assert not globber._sets  # more text than a remembered set holds
    for index in range(6):
        names = [f"N{index}", "X"]
        assert globber.names("container", {"container": {"envNames": names}})["hints"] == [f"N{index}"]
    assert len(globber._sets) == 3


def test_a_policy_reading_an_unknown_globs_parameter_is_refused(tmp_path: Path) -> None:
    text = _POLICY.replace("n in globbed.hints", "n in globbed.hint")
    (tmp_path / "probe.yaml").write_text(text)
    with pytest.raises(KubegapError, match=r"no globs parameter hint; did you mean hints\?"):
        build_engine(Settings(policy_dirs=(str(tmp_path),), select=("probe",)))


def test_bundled_policies_no_longer_match_globs_with_regular_expressions() -> None:
    """cel-expr compiles a `matches` pattern at every evaluation: name lists use `globbed` instead."""
    root = Path(__file__).parents[1] / "policies"
    for name in ("gpu-nic-topology", "health-taints", "link-monitor"):
        text = (root / name / "policy.yaml").read_text()
        assert ".matches(params." not in text, name

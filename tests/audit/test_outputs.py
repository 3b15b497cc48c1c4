"""`kubegap audit --output FORMAT=PATH`: the same report in more formats from one run."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import jsonschema
import pytest
import yaml

from tests.audit.invoke import run
from tests.audit.objects import node, pytorchjob
from tests.support.apiserver import ApiServer

DATA = Path(__file__).resolve().parents[1] / "data"


def test_outputs_are_written_beside_stdout(
    capsys: pytest.CaptureFixture[str], apiserver: ApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    apiserver.load([pytorchjob("job", namespace="ml"), node("gpu-0", allocatable=7)])
    sarif, junit = tmp_path / "out" / "audit.sarif", tmp_path / "out" / "audit.xml"
    code, out, _ = run(
        capsys, "--kubeconfig", str(kubeconfig), "-o", "json",
        "--output", f"sarif={sarif}", "--output", f"junit={junit}",
    )  # fmt: skip
    assert code == 1
    stdout = json.loads(out)
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    assert len(results) == len(stdout["findings"]) > 0
    assert {r["ruleId"] for r in results} == {f"{f['policy']}/{f['rule']}" for f in stdout["findings"]}
    assert ElementTree.parse(junit).getroot().tag == "testsuites"


def test_a_bad_output_is_refused_before_any_request(
    capsys: pytest.CaptureFixture[str], apiserver: ApiServer, kubeconfig: Path
) -> None:
    code, out, err = run(capsys, "--kubeconfig", str(kubeconfig), "--output", "sarf=x.sarif")
    assert code == 2 and out == "" and "--output 'sarf=x.sarif'" in err
    assert apiserver.requests == []


def test_an_unwritable_output_exits_2_and_still_prints_the_report(
    capsys: pytest.CaptureFixture[str], apiserver: ApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = run(capsys, "--kubeconfig", str(kubeconfig), "--output", f"json={blocker / 'a.json'}")
    assert code == 2
    assert out.startswith("kubegap audit of https://127.0.0.1:")
    assert f"--output json={blocker / 'a.json'}" in err


def test_policyreports_are_what_the_crd_accepts(
    capsys: pytest.CaptureFixture[str], apiserver: ApiServer, kubeconfig: Path
) -> None:
    schema = yaml.safe_load((DATA / "policyreport" / "schema.yaml").read_text("utf-8"))
    apiserver.load([pytorchjob("job", namespace="ml"), node("gpu-0", allocatable=7)])
    code, out, _ = run(capsys, "--kubeconfig", str(kubeconfig), "-o", "policyreport")
    assert code == 1
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert {d["kind"] for d in docs} == {"PolicyReport", "ClusterPolicyReport"}
    for doc in docs:
        jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)


def test_a_lone_surrogate_from_the_cluster_is_written_not_a_crash(
    capsys: pytest.CaptureFixture[str], apiserver: ApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    # A JSON string may escape half a surrogate pair, which no UTF-8 file can hold as it is.
    name = "job-\ud800"
    apiserver.load([pytorchjob(name, namespace="ml")])
    paths = {f: tmp_path / f"audit.{f}" for f in ("json", "text", "sarif", "junit", "policyreport")}
    argv = [a for f, p in paths.items() for a in ("--output", f"{f}={p}")]
    code, _, err = run(capsys, "--kubeconfig", str(kubeconfig), *argv)
    assert code == 1, err
    findings = json.loads(paths["json"].read_text("utf-8"))["findings"]
    assert findings and {f["object"]["name"] for f in findings} == {name}  # read back as it was
    for fmt in ("text", "sarif", "junit", "policyreport"):
        assert "job-\ufffd" in paths[fmt].read_text("utf-8"), fmt

"""`kubegap lint --format policyreport`: documents the PolicyReport CRD accepts, one per namespace, with
the namespace each manifest names (or none, for `kubectl apply -n` to decide), and a golden example."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kubegap import cli
from kubegap.reports import policyreport
from tests.reports.sample import Sample

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SCHEMA = yaml.safe_load((DATA / "policyreport" / "schema.yaml").read_text("utf-8"))
GOLDEN = DATA / "policyreport" / "lint-train.yaml"
NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels: {nvidia.com/gpu.present: "true"}
status:
  allocatable: {nvidia.com/gpu: "7"}
  capacity: {nvidia.com/gpu: "8"}
"""


def _lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    code = cli.main(["lint", "--jobs", "1", "-o", "policyreport", *args])
    return code, [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]


def test_the_schema_refuses_what_the_crd_refuses() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    good = {"apiVersion": policyreport.API_VERSION, "kind": "PolicyReport", "metadata": {"name": "x"}}
    validator = jsonschema.Draft202012Validator(SCHEMA)
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "results": [{"rule": "no policy"}]})
    assert not validator.is_valid({**good, "results": [{"policy": "p", "severity": "severe"}]})
    assert not validator.is_valid(
        {**good, "kind": "ClusterPolicyReport", "metadata": {"name": "x", "namespace": "a"}}
    )


def test_every_document_is_valid_and_every_result_is_counted(
    capsys: pytest.CaptureFixture[str], sample: Sample, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(sample.root)
    (tmp_path / "node.yaml").write_text(NODE)
    paths = [*sorted({f.file for f in sample.report.findings if f.file}), str(tmp_path / "node.yaml")]
    code, docs = _lint(capsys, *paths)
    assert code == 2, "the sample has an unreadable document"
    for doc in docs:
        jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    scopes = [(d["kind"], d["metadata"].get("namespace")) for d in docs]
    # cluster-scoped first; then what the manifests leave to `kubectl apply -n`; then by namespace
    assert scopes == [("ClusterPolicyReport", None), ("PolicyReport", None), *sorted(scopes[2:])]
    assert {ns for _, ns in scopes[2:]} == {"llm", "vision"}
    assert all(d["metadata"]["name"] == policyreport.LINT_NAME for d in docs)
    node = docs[0]["results"]
    assert node and all(r["resources"][0]["kind"] == "Node" for r in node)
    unreadable = [r for r in docs[1]["results"] if r["policy"] == "invalid-manifest"]
    assert unreadable and all("resources" not in r and r["properties"]["file"] for r in unreadable)
    totals = {k: sum(d["summary"][k] for d in docs) for k in ("fail", "error", "skip")}
    listed = {k: sum(r["result"] == k for d in docs for r in d["results"]) for k in totals}
    assert totals == listed and totals["fail"] and totals["skip"]
    assert sum(d["summary"]["pass"] for d in docs) > 0, "passes are counted, not listed"


def test_golden(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(policyreport.time, "time", lambda: 1_700_000_000.0)
    assert cli.main(["lint", "-o", "policyreport", "tests/data/engine/train.yaml"]) == 1
    out = capsys.readouterr().out
    if os.environ.get("KUBEGAP_UPDATE_GOLDEN"):
        GOLDEN.write_text(out, "utf-8")
    assert out == GOLDEN.read_text("utf-8"), "run with KUBEGAP_UPDATE_GOLDEN=1 to regenerate, then review"

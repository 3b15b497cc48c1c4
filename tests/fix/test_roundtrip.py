"""What `kubegap fix` keeps: comments, key order, quoting, indentation, blank lines, the other documents,
CRLF line ends and a byte-order mark. Checked on every bundled example (all policies at once) and on
real-shaped files with comments, anchors, flow style and several documents."""

from __future__ import annotations

import codecs
import difflib
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegap import manifests
from kubegap.enginerules import INVALID_DECLARATION
from kubegap.findings import Finding, ObjectRef, Result, Severity
from kubegap.lint import lint_documents
from tests.fix.support import engine, failing, fix, identity

ROOT = Path(str(files("kubegap.policies")))
BUNDLED = sorted(p for p in ROOT.glob("*/examples/*.yaml") if p.parent.parent.name != "gpu-node-health")
MANIFESTS = Path(__file__).parent.parent / "data" / "fix" / "manifests"
ALL = ("nccl-timeout", "checkpoint-interval", "gpu-nic-topology", "health-probes", "restart-budget")


def _kept_in_order(original: list[str], fixed: list[str]) -> list[str]:
    """Lines of `original` that are missing from `fixed` (by a line-level diff)."""
    return [d[2:] for d in difflib.ndiff(original, fixed) if d.startswith("- ")]


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_bundled_examples_keep_every_line_a_fix_does_not_need(path: Path) -> None:
    the_engine = engine(*ALL)
    text = path.read_text("utf-8")
    fixed = fix(text, the_engine)
    removed = _kept_in_order(text.splitlines(), fixed.text.splitlines())
    # Comments and blank lines are never removed: removals are the edited lines and removed entries only.
    assert not [line for line in removed if line.strip().startswith("#") or not line.strip()]
    changes = [o for o in fixed.outcomes if o.fixed]
    assert len(removed) <= 2 * len(changes)  # at most an entry and its key line per change
    before = {identity(f) for f in failing(text, the_engine)}
    for finding in failing(fixed.text, the_engine):
        assert identity(finding) in before or (
            finding.rule == INVALID_DECLARATION and "TODO" in finding.message
        )
    assert fix(fixed.text, the_engine).text == fixed.text


def test_other_documents_crlf_and_bom_are_kept_byte_for_byte() -> None:
    text = (MANIFESTS / "jobset-anchored-script.yaml").read_text().replace("- &trainer", "-")
    data = codecs.BOM_UTF8 + text.replace("\n", "\r\n").encode()
    fixed = fix(data, engine(*ALL))
    out = fixed.text.encode("utf-8")
    assert out.startswith(codecs.BOM_UTF8)
    assert out.count(b"\n") == out.count(b"\r\n")  # every line, old and new, ends in CRLF
    documents = out.split(b"---\r\n")
    originals = data.split(b"---\r\n")
    assert documents[0] == originals[0]  # the ConfigMap and the comment before it
    assert documents[2] == originals[2]  # the Service
    assert documents[1] != originals[1]
    plain = fix(text, engine(*ALL)).text
    assert out.decode("utf-8-sig").replace("\r\n", "\n") == plain


def test_a_file_with_mixed_line_ends_keeps_each_line_end() -> None:
    text = (MANIFESTS / "job-hf-block-args.yaml").read_text()
    lines = text.splitlines(keepends=True)
    mixed = "".join(line.replace("\n", "\r\n") if i % 2 else line for i, line in enumerate(lines))
    fixed = fix(mixed, engine("nccl-timeout", params={"nccl-timeout": {"maxCollectiveTimeout": "20m"}}))
    assert not _kept_in_order(mixed.splitlines(keepends=True), fixed.text.splitlines(keepends=True))
    assert "--ddp_timeout" in fixed.text


def test_comments_quoting_and_indentation_around_an_edit_stay() -> None:
    text = (MANIFESTS / "pytorchjob-megatron-script.yaml").read_text()
    fixed = fix(text, engine(*ALL))
    assert fixed.text.startswith("# GPT pretraining on 4 nodes\n")
    assert "  name: gpt-13b   # the run name\n" in fixed.text
    assert 'kubegap.dev/step-time: "6s"' in fixed.text
    assert '            command: ["bash", "-c", "torchrun' in fixed.text
    assert "          - name: megatron\n" in fixed.text  # the sequence stays indentless
    assert "            env:\n            - name: FI_PROVIDER\n              value: efa\n" in fixed.text


def test_a_list_document_is_fixed_item_by_item() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "  - apiVersion: batch/v1\n    kind: Job\n    metadata: {name: a}\n    spec:\n      backoffLimit: 0\n"
        "      template:\n        spec:\n          containers:\n            - name: t\n"
        "              image: t\n              resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    fixed = fix(text, engine("restart-budget"))
    assert fixed.text == text.replace("backoffLimit: 0", "backoffLimit: 3")


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_json_manifests_stay_json(path: Path) -> None:
    """A JSON manifest (one object per file, as `kubectl get -o json` writes it) gets JSON edits only."""
    documents = [d for d in yaml.safe_load_all(path.read_text("utf-8")) if d]
    the_engine = engine(*ALL)
    for data in documents:
        text = json.dumps(data, indent=2) + "\n"
        fixed = fix(text, the_engine, name="object.json")
        assert json.loads(fixed.text) is not None  # still JSON
        assert fix(fixed.text, the_engine).text == fixed.text
        before = {identity(f) for f in failing(text, the_engine)}
        for finding in failing(fixed.text, the_engine):
            assert identity(finding) in before or finding.rule == INVALID_DECLARATION


COUNTED = [*BUNDLED, *sorted(MANIFESTS.glob("*.yaml"))]


@pytest.mark.parametrize("path", COUNTED, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_lints_quick_count_agrees_with_what_fix_does(path: Path) -> None:
    from kubegap.fix.checked import Scope
    from kubegap.fix.files import Source, count_source, fix_source

    source = Source(path.name, None, None, path.read_bytes())
    scope = Scope(engine(*ALL), {}, lambda finding: True)
    outcomes = fix_source(source, scope).outcomes
    expected = (sum(o.fixed and not o.todo for o in outcomes), sum(o.todo for o in outcomes))
    assert count_source(source, scope) == expected
    # and from lint's findings of the file, as `kubegap lint` counts: its documents are not evaluated again
    documents = list(manifests.Reader().read_bytes(source.data, source.name))
    linted = lint_documents(documents, scope.engine, known={}).findings
    assert count_source(source, scope, linted) == expected
    assert count_source(source, scope, linted, documents) == expected  # as lint's runs count: no re-read


ALIASED = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: aliased}
spec:
  runPolicy: {backoffLimit: 2}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: m
              image: t
              command: [torchrun, t.py, --ddp_timeout, "600"]
              env:
                - &debug {name: NCCL_DEBUG, value: WARN}
              resources: &gpu {limits: {nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: w
              image: t
              command: [torchrun, t.py, --ddp_timeout, "600"]
              env:
                - *debug
              resources: *gpu
"""


def test_nothing_is_placed_after_an_alias_whose_node_lies_elsewhere() -> None:
    fixed = fix(ALIASED, engine("gpu-nic-topology"))
    notes = {o.finding.role: o for o in fixed.outcomes if o.finding.rule == "nccl-nic-hints"}
    assert notes["Master"].fixed  # its env list ends with the anchored item itself
    assert not notes["Worker"].fixed and "alias" in notes["Worker"].note
    assert _kept_in_order(ALIASED.splitlines(), fixed.text.splitlines()) == []
    assert fixed.text.count("FI_PROVIDER") == 1


def test_lints_count_evaluates_only_the_patched_text_where_lint_has_the_findings() -> None:
    from kubegap.fix.checked import Scope
    from kubegap.fix.files import Source, count_source

    path = MANIFESTS / "pytorchjob-llama-sft.yaml"
    source = Source(path.name, None, None, path.read_bytes())
    the_engine = engine(*ALL)
    linted = lint_documents(manifests.Reader().read_bytes(source.data, source.name), the_engine, known={})
    evaluated: list[object] = []

    class Counting:  # the engine, counting what it evaluates (a compiled Engine's methods are fixed)
        def __getattr__(self, name: str) -> Any:
            return getattr(the_engine, name)

        def evaluate(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
            evaluated.append(obj)
            return the_engine.evaluate(obj, *args, **kwargs)

    scope = Scope(Counting(), {}, lambda finding: True)  # type: ignore[arg-type]
    without = count_source(source, scope)
    alone = len(evaluated)
    evaluated.clear()
    assert count_source(source, scope, linted.findings) == without != (0, 0)
    assert len(evaluated) == alone - 1  # the text as it is was not evaluated again


def test_lints_findings_are_not_taken_for_another_documents() -> None:
    from kubegap.fix.files import Source, own_findings

    text = b"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n"
    source = Source("pods.yaml", None, None, text)
    (doc,) = manifests.Reader().read_bytes(text, source.name)
    assert doc.obj is not None
    mine = Finding("p", "r", Severity.LOW, Result.FAIL, "m", "f", ObjectRef.of(doc.obj), document=0)
    elsewhere = ObjectRef("v1", "Pod", None, "b")
    other = Finding("p", "r", Severity.LOW, Result.FAIL, "m", "f", elsewhere, document=0)
    assert own_findings([mine], [doc], source) == [mine]
    assert own_findings([other], [doc], source) is None  # about another object: evaluated instead
    assert own_findings(None, [doc], source) is None
    renamed = Source("elsewhere.yaml", None, None, text)  # the document's name is not the file's
    assert own_findings([mine], [doc], renamed) is None
    assert own_findings([mine], [doc, doc], source) is None  # a List's items share one document number

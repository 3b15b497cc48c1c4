"""One home per idea for results: the engine's rule ids in kubegap.enginerules, results built only by the
named constructors of kubegap.findings, one Evaluator protocol, and no command-level `lint` module under
the webhook or `kubegap test`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kubegap import enginerules
from kubegap.findings import Check, ObjectRef, Result, Severity, error, fail, passed, skip

PACKAGE = Path(enginerules.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))
# The ids no ordinary word could be confused with (`resources`, `deadline` and `annotations` are also
# Kubernetes field names, spelt elsewhere for that reason).
IDS = {v for k, v in vars(enginerules).items() if k.isupper() and isinstance(v, str) and "-" in v}
# The same spelling for another idea: a kind's coverage status in the audit.
ELSEWHERE = {("audit/coverage.py", "not-evaluated")}
CHECK = Check("nccl-timeout", "timeout-bounded", Severity.HIGH, "Lower it.")
REF = ObjectRef("batch/v1", "Job", "ml", "train")


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"), str(path))


def _docstrings(tree: ast.Module) -> set[int]:
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef))]
    return {id(n.body[0].value) for n in nodes if n.body and isinstance(n.body[0], ast.Expr)}


def test_engine_rule_ids_are_spelt_only_in_enginerules() -> None:
    assert {"invalid-manifest", "not-evaluated", "unresolved-count", "exemption-reason"} <= IDS
    found = []
    for path in SOURCES:
        if path.name == "enginerules.py":
            continue
        tree = _tree(path)
        skip_ids = _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or node.value not in IDS or id(node) in skip_ids:
                continue
            where = str(path.relative_to(PACKAGE))
            if (where, node.value) not in ELSEWHERE:
                found.append(f"{where}:{node.lineno}: {node.value}")
    assert not found, "import the id from kubegap.enginerules"


def test_results_are_built_by_the_named_constructors_only() -> None:
    calls = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in SOURCES
        if path.name != "findings.py"
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Finding"
    ]
    assert not calls, "use kubegap.findings.passed/fail/error/skip"


def test_one_evaluator_protocol() -> None:
    defined = [
        f"{path.relative_to(PACKAGE)}"
        for path in SOURCES
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ClassDef) and node.name == "Evaluator"
    ]
    assert defined == ["evaluate.py"]


@pytest.mark.parametrize("path", [*sorted((PACKAGE / "webhook").glob("*.py")), PACKAGE / "testing.py"])
def test_the_webhook_and_kubegap_test_do_not_import_lint(path: Path) -> None:
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom):
            names = {node.module or "", *(f"{node.module}.{a.name}" for a in node.names)}
            assert "kubegap.lint" not in names, f"{path.name}:{node.lineno}"
        if isinstance(node, ast.Import):
            assert all(a.name != "kubegap.lint" for a in node.names), f"{path.name}:{node.lineno}"


def test_each_constructor_gives_its_result() -> None:
    where = {"role": "Worker", "container": "trainer", "path": "spec.x", "unresolved": ("secret s/k",)}
    made = [
        passed(CHECK, REF, ("Worker", "trainer", "spec.x", ("secret s/k",), "workload", ())),
        fail(CHECK, REF, "too long", **where),
        error(CHECK, REF, "no such key", **where),
        skip(CHECK, REF, "platform-managed", **where),
    ]
    assert [f.result for f in made] == [Result.PASS, Result.FAIL, Result.ERROR, Result.SKIP]
    assert [f.message for f in made] == ["", "too long", "no such key", "exempted: platform-managed"]
    for finding in made:
        assert (finding.policy, finding.rule, finding.severity) == (
            "nccl-timeout",
            "timeout-bounded",
            Severity.HIGH,
        )
        assert (finding.remediation, finding.object) == ("Lower it.", REF)
        assert (finding.role, finding.container, finding.path, finding.unresolved) == tuple(where.values())


def test_a_position_reaches_the_finding() -> None:
    found = error(CHECK, REF, "unreadable", file="a.yaml", document=2, line=7, column=3)
    assert (found.file, found.document, found.line, found.column) == ("a.yaml", 2, 7, 3)
    assert found.role is None and found.unresolved == ()

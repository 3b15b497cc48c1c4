"""docs/reliability.md tells the truth: every case has a row, every row names tests that exist (or says why
the case is out of scope); and the cases no other module covers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubegap import cel
from kubegap.cel import CelError

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reliability.md"
CASES = (
    [f"W{i}" for i in range(1, 36)]
    + [f"P{i}" for i in range(1, 9)]
    + [f"L{i}" for i in range(1, 11)]
    + [f"A{i}" for i in range(1, 12)]
    + [f"H{i}" for i in range(1, 5)]
)
_ROW = re.compile(r"^\| ([WPLAHK]\d+) \|(.*)\|\s*$", re.M)
_NODE = re.compile(r"`(tests/[^`]+)`")


def rows() -> dict[str, str]:
    found = _ROW.findall(DOC.read_text("utf-8"))
    table = dict(found)
    assert len(table) == len(found), "a case id appears twice"
    return table


def missing(node: str) -> str | None:
    """Why `node` (a pytest node id: file, or file::test[params]) does not exist; None when it does."""
    file, _, name = node.partition("::")
    path = ROOT / file
    if not path.is_file():
        return f"{file} does not exist"
    function = name.split("[", 1)[0]
    if function and not re.search(rf"^\s*def {re.escape(function)}\(", path.read_text("utf-8"), re.M):
        return f"{file} has no test {function}"
    return None


def test_every_case_of_the_matrix_has_a_row() -> None:
    table = rows()
    assert [case for case in CASES if case not in table] == []


def test_every_row_names_existing_tests_or_why_it_is_out_of_scope() -> None:
    problems = []
    for case, row in rows().items():
        nodes = _NODE.findall(row)
        if not nodes and "out of scope" not in row:
            problems.append(f"{case}: names no test and no reason")
        problems += [f"{case}: {why}" for node in nodes if (why := missing(node))]
    assert problems == []


def test_the_checker_catches_a_missing_test() -> None:
    assert missing("tests/test_reliability.py::test_no_such_test") is not None
    assert missing("tests/no_such_file.py::test_x") is not None
    assert missing("tests/webhook/test_no_such_module.py") is not None
    assert missing("tests/test_reliability.py::test_the_checker_catches_a_missing_test[x]") is None


@pytest.mark.parametrize("backend", cel.BACKENDS)
@pytest.mark.parametrize("pattern", [r"(a)\\1", r"(?=a)a", r"a(?<!b)"])
def test_regexes_are_re2_in_both_runtimes(backend: str, pattern: str) -> None:
    """Backreferences and look-around exist only in backtracking engines: RE2 refuses them, so a
    catastrophic pattern cannot stall an evaluation (W23, P7)."""
    runtime = cel.backend(backend)
    program = runtime.compile(f"'aaaa'.matches('{pattern}')")
    with pytest.raises(CelError):
        program(runtime.activation({}))
    assert runtime.compile("'aaaa'.matches('^(a+)+$')")(runtime.activation({})) is True

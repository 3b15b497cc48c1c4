"""Which files a lint reads, and the names its findings carry: as `Path` writes them, in path order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubegap.errors import UsageError
from kubegap.inputs import STDIN, STDIN_NAME, expand

TREE = [
    "b.yaml",
    "a.YML",
    "notes.txt",
    "z/c.json",
    "z/y/d.yaml",
    "a-dir/e.yaml",
    ".git/hidden.yaml",
    "vendor/skip.yaml",
    "chart/Chart.yaml",
    "chart/values.yaml",
    "chart/templates/t.yaml",
]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in TREE:
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "tree"


# in the order of each file's path components below the folder given (`a-dir` before `a.YML`)
WALKED = [
    "a-dir/e.yaml",
    "a.YML",
    "b.yaml",
    "chart/Chart.yaml",
    "chart/values.yaml",
    "z/c.json",
    "z/y/d.yaml",
]


@pytest.mark.parametrize("given", ["tree", "./tree", "tree/", "tree//", "TREE_ABSOLUTE", "."])
def test_a_folder_is_walked_in_path_order_with_the_names_path_writes(tree: Path, given: str) -> None:
    if given == "TREE_ABSOLUTE":
        given = str(tree)
    if given == ".":
        os.chdir(tree)
    notes: list[str] = []
    found = expand([given], ("vendor",), notes)
    expected = [str(Path(given, name)) for name in WALKED]
    assert found == [(name, name) for name in expected]
    assert notes and "chart/templates" in notes[0]  # skipped, and said so


def test_files_stdin_and_missing_paths(tree: Path) -> None:
    assert expand(["tree/notes.txt", STDIN, "./tree/b.yaml"]) == [
        ("tree/notes.txt", "tree/notes.txt"),  # named on the command line: read whatever its name
        (STDIN_NAME, None),
        ("./tree/b.yaml", "./tree/b.yaml"),  # as given
    ]
    for missing in ("tree/nope.yaml", "tree/b.yaml/inside", "tree/\0"):
        with pytest.raises(UsageError, match="no such file or directory"):
            expand([missing])

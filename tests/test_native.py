"""kubegap.native: which modules run compiled (setup.py), and a compiled module older than its source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubegap import native


def test_no_compiled_module_is_older_than_its_source() -> None:
    state = native.state()
    assert state.stale == (), f"kubegap runs old code: {state.describe()} (pip install -e . again)"


def test_a_compiled_module_whose_source_changed_is_stale(tmp_path: Path) -> None:
    state = native.state()
    if not state.compiled:
        pytest.skip("kubegap is installed as pure Python here: no module runs compiled")
    name = state.compiled[0]
    relative = name.replace(".", "/") + ".py"
    source = tmp_path / relative
    source.parent.mkdir(parents=True)
    text = (native.PACKAGE.parent / relative).read_bytes()
    built = tmp_path / "kubegap" / "_built.json"
    built.write_text(json.dumps({relative: json.loads(native.BUILT.read_text())[relative]}))
    source.write_bytes(text)
    assert native.state(built) == native.State((name,), ())
    source.write_bytes(text + b"\n# edited\n")
    found = native.state(built)
    assert found == native.State((name,), (name,))
    assert name in found.describe() and "install again" in found.describe()


def test_without_a_build_record_nothing_counts_as_compiled(tmp_path: Path) -> None:
    assert native.state(tmp_path / "missing.json") == native.State((), ())
    assert native.State((), ()).describe() == "pure Python"

"""Benchmark: YAML parsers on the 2,000-manifest lint corpus, against PyYAML's C loader (the lint floor).

    python benchmarks/bench_yaml.py [--count 2000] [--repeat 5] [--calls]
    pip install rapidyaml   # optional, not a kubegap dependency: adds its rows (see docs/speed.md)

Rows: PyYAML's C loader; kubegap's reader (guards, positions); the same reader held to its careful path
(PyYAML's SafeConstructor after the guard walks, as every document was read before the quick walk of
kubegap.yamlbuild); with rapidyaml installed, its parse alone (a C++ tree, no Python objects) and its parse
plus a Python walk that builds dicts and lists with a minimal YAML 1.1 scalar resolution (no guards, no
positions, no anchors: a lower bound for a guarded reader on rapidyaml). CPU seconds, best of --repeat with
the rows interleaved (the machine's background load hits all alike); prints ratios to the floor, asserts
nothing. `--calls` also counts Python function calls per row (cProfile), a figure that noise does not move.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import pstats
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus

from kubegap import yamlbuild
from kubegap.manifests import Reader

_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False,
          "yes": True, "no": False, "on": True, "off": False}  # fmt: skip
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})


def _scalar(tree: Any, node: int) -> Any:
    text = bytes(tree.val(node)).decode()
    if tree.is_val_quoted(node):
        return text
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if _INT.fullmatch(text):
        return int(text)
    return float(text) if _FLOAT.fullmatch(text) else text


def _walk(tree: Any, node: int, none: int) -> Any:
    if not tree.is_container(node):
        return _scalar(tree, node)
    child = tree.first_child(node)
    if tree.is_map(node):
        out: dict[str, Any] = {}
        while child != none:
            out[bytes(tree.key(child)).decode()] = _walk(tree, child, none)
            child = tree.next_sibling(child)
        return out
    items = []
    while child != none:
        items.append(_walk(tree, child, none))
        child = tree.next_sibling(child)
    return items


def careful() -> contextlib.AbstractContextManager[None]:
    """The reader with its quick walk turned off: every document goes through SafeConstructor."""

    def unsure(root: object, constructor: object, max_depth: int) -> Any:
        raise yamlbuild.Unsure

    @contextlib.contextmanager
    def patched() -> Any:
        build, yamlbuild.build = yamlbuild.build, unsure
        try:
            yield
        finally:
            yamlbuild.build = build

    return patched()


def interleaved(repeat: int, rows: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best CPU time of each row, the rows taking turns."""
    times: dict[str, float] = dict.fromkeys(rows, float("inf"))
    for _ in range(repeat):
        for name, run in rows.items():
            start = time.process_time()
            run()
            times[name] = min(times[name], time.process_time() - start)
    return times


def calls(run: Callable[[], object]) -> int:
    profile = cProfile.Profile()
    profile.runcall(run)
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def rapidyaml_rows(texts: list[bytes]) -> dict[str, Callable[[], object]]:
    try:
        import ryml
    except ImportError:
        print("rapidyaml is not installed (pip install rapidyaml): its rows are left out")
        return {}

    def parse_only() -> None:
        for text in texts:
            ryml.parse_in_arena(text)

    def to_python() -> list[Any]:
        out = []
        for text in texts:
            tree = ryml.parse_in_arena(text)
            root = tree.root_id()
            out.append(_walk(tree, tree.first_child(root) if tree.is_stream(root) else root, ryml.NONE))
        return out

    same = to_python() == [yaml.load(t, Loader=yaml.CSafeLoader) for t in texts]
    print(f"rapidyaml + walk gives the same data as PyYAML: {same}")
    return {"rapidyaml, parse only": parse_only, "rapidyaml + Python walk": to_python}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--calls", action="store_true", help="also count Python calls per row (cProfile)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = corpus.write(Path(tmp), args.count)
        texts = [p.read_bytes() for p in paths]

        def floor() -> None:
            for text in texts:
                for _ in yaml.load_all(text, Loader=yaml.CSafeLoader):
                    pass

        def reader() -> None:
            for path, text in zip(paths, texts, strict=True):
                list(Reader().read_bytes(text, str(path)))

        def careful_reader() -> None:
            with careful():
                reader()

        print(f"{len(texts)} manifests")
        rows = {
            "PyYAML C loader (the floor)": floor,
            "kubegap reader (guards, positions)": reader,
            "kubegap reader, careful path only": careful_reader,
            **rapidyaml_rows(texts),
        }
        times = interleaved(args.repeat, rows)
        base = times["PyYAML C loader (the floor)"]
        for name, seconds in times.items():
            counted = f"  {calls(rows[name]):>9,} Python calls" if args.calls else ""
            print(f"{name:38} {seconds:6.3f} s CPU = {seconds / base:4.2f}x the floor{counted}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

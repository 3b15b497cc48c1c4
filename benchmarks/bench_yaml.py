"""Benchmark: YAML parsers on the 2,000-manifest lint corpus, against PyYAML's C loader (the lint floor).

    pip install rapidyaml   # not a kubegap dependency; measured here, see docs/speed.md
    python benchmarks/bench_yaml.py [--count 2000] [--repeat 3]

Rows: PyYAML's C loader; rapidyaml's parse alone (a C++ tree, no Python objects); rapidyaml plus a Python
walk that builds dicts and lists with a minimal YAML 1.1 scalar resolution (no guards, no positions, no
anchors, so a lower bound on what a guarded reader on rapidyaml would cost); kubegap's own reader (guards
and positions). CPU seconds, best of --repeat; prints ratios to the floor, asserts nothing.
"""

from __future__ import annotations

import argparse
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


def best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    try:
        import ryml
    except ImportError:
        raise SystemExit("rapidyaml is not installed: pip install rapidyaml") from None
    with tempfile.TemporaryDirectory() as tmp:
        paths = corpus.write(Path(tmp), args.count)
        texts = [p.read_bytes() for p in paths]

        def floor() -> None:
            for text in texts:
                for _ in yaml.load_all(text, Loader=yaml.CSafeLoader):
                    pass

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

        def reader() -> None:
            for path, text in zip(paths, texts, strict=True):
                list(Reader().read_bytes(text, str(path)))

        same = to_python() == [yaml.load(t, Loader=yaml.CSafeLoader) for t in texts]
        print(f"{len(texts)} manifests; rapidyaml + walk gives the same data as PyYAML: {same}")
        base = best(args.repeat, floor)
        rows = [("PyYAML C loader (the floor)", base),
                ("rapidyaml, parse only", best(args.repeat, parse_only)),
                ("rapidyaml + Python walk", best(args.repeat, to_python)),
                ("kubegap reader (guards, positions)", best(args.repeat, reader))]  # fmt: skip
        for name, seconds in rows:
            print(f"{name:38} {seconds:6.3f} s CPU = {seconds / base:4.2f}x the floor")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

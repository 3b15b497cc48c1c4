"""Which of kubegap's modules run compiled to C (setup.py), and whether any is older than its source.

Python imports a compiled module in preference to the source beside it, so in an editable install a
module edited after it was compiled keeps running its old code until kubegap is installed again. The build
writes each compiled module's source digest into `_built.json`; a module whose source no longer has that
digest is stale. `kubegap version` tells which, and the test suite fails while any is.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
BUILT = PACKAGE / "_built.json"


@dataclass(frozen=True, slots=True)
class State:
    compiled: tuple[str, ...]  # modules that import from a compiled file
    stale: tuple[str, ...]  # of those, the ones whose source changed since the build

    def describe(self) -> str:
        if not self.compiled:
            return "pure Python"
        text = f"compiled ({len(self.compiled)} modules)"
        if self.stale:
            text += f"; older than their source, install again: {', '.join(self.stale)}"
        return text


def state(built: Path = BUILT) -> State:
    """What the last build compiled and is still imported compiled, and which of those are stale."""
    try:
        digests: dict[str, str] = json.loads(built.read_text())
    except (OSError, ValueError):
        digests = {}
    compiled, stale = [], []
    root = built.parent.parent
    for relative, digest in sorted(digests.items()):
        name = relative.removesuffix(".py").replace("/", ".")
        spec = importlib.util.find_spec(name)
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            continue
        compiled.append(name)
        source = root / relative
        if not source.is_file() or hashlib.sha256(source.read_bytes()).hexdigest() != digest:
            stale.append(name)
    return State(tuple(compiled), tuple(stale))

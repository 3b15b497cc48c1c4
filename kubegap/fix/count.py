"""How many findings `kubegap fix` settles, for the text report of `kubegap lint`: the same patches and
the same engine check, run by lint file by file as it reads them (kubegap.lint.Output.fixable)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kubegap import manifests
from kubegap.findings import Finding
from kubegap.fix.checked import Scope
from kubegap.fix.files import Refused, Source, count_source


def count_file(
    name: str,
    path: str,
    documents: Sequence[manifests.Document],
    findings: Sequence[Finding],
    scope: Scope,
) -> tuple[int, int]:
    """(fixed, left as TODO) in one file lint has just read (`documents`) and checked (`findings`, as lint
    located them). A file is counted when some finding names it: not a stream whose `# Source:` lines
    name other files (fixing rendered output fixes no template). Its bytes are read again (8 µs) for what
    the documents' texts leave out, the byte-order mark and the line ends; a file that changed since
    no longer lines up with its documents and, like a file kubegap fix would refuse, counts nothing."""
    own = [finding for finding in findings if finding.file == name]
    if not own:
        return 0, 0
    try:
        source = Source(name, Path(path), None, manifests.read_file(path))
        return count_source(source, scope, own, documents)
    except (OSError, Refused):
        return 0, 0

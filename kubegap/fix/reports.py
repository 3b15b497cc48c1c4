"""What lint's reports say of `kubegap fix`, made in lint's runs file by file, while each file's
documents and findings are at hand (kubegap.lint.Output): the text report's count of the findings it
settles, and SARIF's suggested fix for each finding. Made after lint, every file was read, parsed and
forked over again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kubegap import manifests
from kubegap.findings import Finding
from kubegap.fix.checked import Scope
from kubegap.fix.files import Refused, Source, count_layout, layout
from kubegap.fix.suggestions import Suggested, suggest


def of_file(
    name: str,
    path: str,
    documents: Sequence[manifests.Document],
    findings: Sequence[Finding],
    scope: Scope,
    count: bool,
    suggested: bool,
) -> tuple[tuple[int, int] | None, list[Suggested] | None]:
    """For one file lint has just read (`documents`) and checked (`findings`, as lint located them):
    (fixed, left as TODO) if `count`, and each finding's suggestion if `suggested` (None: not asked).
    A file is worked on when some finding names it: not a stream whose `# Source:` lines name other files
    (fixing rendered output fixes no template). Its bytes are read again (8 µs) for what the documents'
    texts leave out, the byte-order mark and the line ends; a file that changed since no longer lines up
    with its documents and, like a file kubegap fix would refuse, gives nothing."""
    nothing: tuple[tuple[int, int] | None, list[Suggested] | None]
    nothing = ((0, 0) if count else None), ([] if suggested else None)
    own = [finding for finding in findings if finding.file == name]
    if not own:
        return nothing
    try:
        source = Source(name, Path(path), None, manifests.read_file(path))
        parts = layout(source, documents)
    except (OSError, Refused):
        return nothing
    fixable = count_layout(parts, source, scope, own) if count else None
    return fixable, (suggest(parts, source, scope, own) if suggested else None)

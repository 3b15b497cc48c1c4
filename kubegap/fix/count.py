"""How many findings `kubegap fix` settles, for the text report of `kubegap lint`: the same patches and
the same engine check, run in worker processes when there are many files (as lint itself does)."""

from __future__ import annotations

from collections.abc import Sequence

from kubegap.evaluate import Engine
from kubegap.findings import Finding
from kubegap.fix.files import Refused, by_file, count_source, readable_sources
from kubegap.forked import each_file


def fixable_line(
    findings: Sequence[Finding], paths: Sequence[str], engine: Engine, jobs: int = 1
) -> str | None:
    """The line `kubegap lint` prints above its summary; None when nothing can be fixed (stdin cannot be
    read again, and a file kubegap fix would refuse counts nothing)."""
    readable = readable_sources(findings, paths, engine)
    if readable is None:
        return None
    found, scope = readable
    linted = by_file(findings)  # lint's findings of each file: its documents need not be evaluated again

    def count(index: int) -> tuple[int, int]:
        """(fixed, left as TODO) in one file."""
        try:
            return count_source(found[index], scope, linted.get(found[index].name))
        except Refused:
            return 0, 0

    parts = list(each_file(count, len(found), jobs))
    fixed, todo = sum(p[0] for p in parts), sum(p[1] for p in parts)
    if not fixed and not todo:
        return None
    extra = f", {todo} more get a TODO value to fill in" if todo else ""
    return f"kubegap fix can fix {fixed} of these finding(s){extra}: run `kubegap fix PATH…` to see the diff"

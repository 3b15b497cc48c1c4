"""How many findings `kubegap fix` settles, for the text report of `kubegap lint`: the same patches and
the same engine check, run in worker processes when there are many files (as lint itself does)."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from collections.abc import Mapping, Sequence

from kubegap import lint
from kubegap.evaluate import Engine
from kubegap.findings import Finding
from kubegap.fix.checked import Scope
from kubegap.fix.files import Refused, Source, count_source, readable_sources

# Inherited by forked workers, so that the compiled policies are not pickled: the files, the scope, and
# lint's findings of each file (its documents need not be evaluated again).
_WORK: tuple[list[Source], Scope, Mapping[str | None, list[Finding]]] | None = None


def _count(indexes: range) -> tuple[int, int]:
    """(fixed, left as TODO) over some of the files."""
    assert _WORK is not None
    found, scope, linted = _WORK
    fixed = todo = 0
    for index in indexes:
        try:
            done, left = count_source(found[index], scope, linted.get(found[index].name))
        except Refused:
            continue
        fixed, todo = fixed + done, todo + left
    return fixed, todo


def fixable_line(
    findings: Sequence[Finding], paths: Sequence[str], engine: Engine, jobs: int = 1
) -> str | None:
    """The line `kubegap lint` prints above its summary; None when nothing can be fixed (stdin cannot be
    read again, and a file kubegap fix would refuse counts nothing)."""
    global _WORK
    readable = readable_sources(findings, paths, engine)
    if readable is None:
        return None
    by_file: dict[str | None, list[Finding]] = {}
    for finding in findings:
        by_file.setdefault(finding.file, []).append(finding)
    _WORK = (*readable, by_file)
    total = len(readable[0])
    try:
        if jobs <= 1 or total < lint.PARALLEL_MIN_FILES:
            parts = [_count(range(total))]
        else:
            context = multiprocessing.get_context("fork")
            with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
                parts = list(pool.map(_count, [range(i, total, jobs) for i in range(jobs)]))
    finally:
        _WORK = None
    fixed, todo = sum(p[0] for p in parts), sum(p[1] for p in parts)
    if not fixed and not todo:
        return None
    extra = f", {todo} more get a TODO value to fill in" if todo else ""
    return f"kubegap fix can fix {fixed} of these finding(s){extra}: run `kubegap fix PATH…` to see the diff"

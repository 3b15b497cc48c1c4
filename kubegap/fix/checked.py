"""Fixing one document's text: lint it, patch one finding, lint the result, keep the patch only if it
settled the finding and brought no new one; repeat until nothing more can be fixed.

Checking every patch with the engine itself means a fix can never claim more than lint confirms: a patch
that leaves its finding (or makes another appear) is dropped and the finding reported as not fixed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubegap import fieldpath, manifests
from kubegap.enginerules import INVALID_DECLARATION
from kubegap.evaluate import Context, Engine
from kubegap.findings import Finding, Result
from kubegap.fix import edits, fixers
from kubegap.fix.nodes import Tree, Unsafe
from kubegap.fix.target import Patch, Target
from kubegap.lint import locate_finding

MAX_PATCHES = 200  # per document: every finding is tried once, so this is a guard, not a limit in use

Key = tuple[tuple[str | int, ...], tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Outcome:
    finding: Finding  # located in the file
    fixed: bool  # a patch was made for it
    todo: bool  # the patch leaves a TODO value for a person
    note: str  # what the patch does, or why there is no safe fix


@dataclass(frozen=True, slots=True)
class Scope:
    engine: Engine
    configmaps: Mapping[tuple[str, str], Mapping[str, str]]
    selected: Callable[[Finding], bool]


Documents = Sequence[manifests.Document]
Current = list[tuple[manifests.Document, Finding]]


def _evaluate(
    text: str, scope: Scope, name: str, line: int, documents: Documents | None = None, located: bool = True
) -> Current:
    """The failing findings of the text's documents (read from `text` unless the caller has them);
    placed in the file unless `located` is False (what identifies a finding does not need its place)."""
    if documents is None:
        documents = list(manifests.Reader().read_bytes(text.encode("utf-8"), name))
    if any(d.error is not None for d in documents):
        raise Unsafe("the document no longer parses")
    out: Current = []
    for doc in documents:
        assert doc.obj is not None
        placed = _placed(doc, line)
        for finding in scope.engine.evaluate(doc.obj, Context(scope.configmaps)).findings:
            if finding.result is Result.FAIL:
                out.append((placed, locate_finding(placed, finding) if located else finding))
    return out


def _placed(doc: manifests.Document, line: int) -> manifests.Document:
    return manifests.Document(doc.file, doc.index, line, doc.obj, None, doc.prefix, doc.text)


def _current(docs: Documents, scope: Scope, linted: Sequence[Finding] | None) -> Current:
    """The failing findings of one text's documents (`docs`, as the file was read): `linted`, the findings
    lint gave its one document, located as lint locates them, where the caller has them; else evaluated."""
    doc = docs[0]
    if linted is not None and len(docs) == 1:
        placed = _placed(doc, doc.line)
        return [(placed, finding) for finding in linted if finding.result is Result.FAIL]
    return _evaluate(doc.text, scope, doc.file, doc.line, docs)


def _key(doc: manifests.Document, finding: Finding) -> Key:
    """A finding's identity; with its message, since removing one of several variables can leave a finding
    at the same path that now names the next one."""
    return (doc.prefix, (*finding.key(), finding.message))


def _params(engine: Engine, policy: str) -> Mapping[str, Any]:
    return next((c.params for c in engine.compiled if c.policy.id == policy), {})


def _ids(scope: Scope) -> frozenset[str]:
    """The policies a patch is checked against: a fix may write what another of them asks for."""
    return frozenset(c.policy.id for c in scope.engine.compiled)


def _pathless(key: Key) -> Key:
    """A finding's identity without its field path: removing env[0] turns env[1] into env[0], and a
    finding that only moved is neither new nor settled."""
    prefix, identity = key
    return prefix, (*identity[:7], *identity[8:])


def _check(patch: Patch, key: Key, before: set[Key], after: set[Key]) -> None:
    """Raises Unsafe unless the patch settled its finding and brought no other finding."""
    moved = {_pathless(k) for k in before}
    for prefix, new in after - before:
        if _pathless((prefix, new)) in moved:
            continue
        same_rule = new[:5] == key[1][:5]  # the next offender of the same rule in the same object
        todo = (
            patch.todo is not None
            and new[1] == INVALID_DECLARATION
            and new[7] == fieldpath.render(patch.todo)
        )
        if not (same_rule or todo) or prefix != key[0]:
            raise Unsafe(f"the edit would bring a new finding ({new[0]}/{new[1]} at {new[7]})")
    if patch.todo is None and _pathless(key) in {_pathless(k) for k in after}:
        raise Unsafe("the edit did not settle the finding")


def _attempt(
    text: str,
    scope: Scope,
    name: str,
    line: int,
    current: Current,
    found: tuple[manifests.Document, Finding],
    located: bool = True,
) -> tuple[Patch, str, Current]:
    """The patch for one finding of `text`, the text it gives and that text's findings (placed in the
    file unless `located` is False); Unsafe when it has no safe fix or the engine does not confirm it."""
    doc, finding = found
    assert doc.obj is not None
    params = _params(scope.engine, finding.policy)
    target = Target(finding, doc.obj, doc.prefix, Tree(text), params, scope.engine.catalogue, _ids(scope))
    patch = fixers.plan(target)
    changed = edits.apply(text, patch.edits)
    after = _evaluate(changed, scope, name, line, located=located)
    _check(patch, _key(doc, finding), {_key(d, f) for d, f in current}, {_key(d, f) for d, f in after})
    return patch, changed, after


def fix_text(docs: Documents, scope: Scope, current: Current | None = None) -> tuple[str, list[Outcome]]:
    """The text of `docs` (one document, or a List's items) with every safe fix applied, and what was
    done for each finding (`current`: the text's failing findings, where the caller has them)."""
    text, name, line = docs[0].text, docs[0].file, docs[0].line
    outcomes: dict[Key, Outcome] = {}
    ours: set[Key] = set()  # invalid-declaration findings of the TODO values this run wrote
    if current is None:
        current = _current(docs, scope, None)
    for _ in range(MAX_PATCHES):
        todo = [
            (d, f)
            for d, f in current
            if _key(d, f) not in outcomes and _key(d, f) not in ours and scope.selected(f)
        ]
        if not todo:
            break
        key = _key(*todo[0])
        try:
            patch, changed, after = _attempt(text, scope, name, line, current, todo[0])
        except Unsafe as reason:
            outcomes[key] = Outcome(todo[0][1], False, False, str(reason))
            continue
        outcomes[key] = Outcome(todo[0][1], True, patch.todo is not None, patch.summary)
        before = {_key(d, f) for d, f in current}
        ours |= {_key(d, f) for d, f in after if f.rule == INVALID_DECLARATION} - before
        text, current = changed, after
    return text, list(outcomes.values())


def patches(
    docs: Documents, scope: Scope, linted: Sequence[Finding] | None = None
) -> list[tuple[Finding, Patch]]:
    """Each finding's own patch against the text of `docs` as it is (not one after the other), for tools
    that offer fixes one finding at a time (SARIF `fixes`); `linted` as for `count_fixable`. What each
    patch leaves is only compared with what was there, so it is not placed in the file."""
    text, name, line = docs[0].text, docs[0].file, docs[0].line
    current = _current(docs, scope, linted)
    out: list[tuple[Finding, Patch]] = []
    for found in current:
        if scope.selected(found[1]):
            with contextlib.suppress(Unsafe):
                out.append((found[1], _attempt(text, scope, name, line, current, found, located=False)[0]))
    return out


def count_fixable(docs: Documents, scope: Scope, linted: Sequence[Finding] | None = None) -> tuple[int, int]:
    """(fixed, left as TODO) among the findings of the text of `docs`, cheaply: every patch is planned
    against the text as it is, all are applied together and the engine confirms them at once (two
    evaluations, not one per patch). When that does not hold, `fix_text` itself counts. `linted`: the
    findings lint gave the one document of `docs`, located as lint locates them, so it is not evaluated
    again."""
    text, name, line = docs[0].text, docs[0].file, docs[0].line
    current = _current(docs, scope, linted)
    tree = Tree(text) if current else None
    planned: list[tuple[Key, Patch]] = []
    policies = _ids(scope)
    for doc, finding in current:
        if tree is None or not scope.selected(finding):
            continue
        assert doc.obj is not None
        params = _params(scope.engine, finding.policy)
        with contextlib.suppress(Unsafe):
            target = Target(finding, doc.obj, doc.prefix, tree, params, scope.engine.catalogue, policies)
            planned.append((_key(doc, finding), fixers.plan(target)))
    if not planned:
        return 0, 0
    todo = sum(patch.todo is not None for _, patch in planned)
    try:
        changed = edits.apply(text, [e for _, patch in planned for e in patch.edits])
        after = {_key(d, f) for d, f in _evaluate(changed, scope, name, line, located=False)}
    except Unsafe:
        after = None
    if after is not None and _confirmed(planned, {_key(d, f) for d, f in current}, after):
        return len(planned) - todo, todo
    outcomes = fix_text(docs, scope, current)[1]
    return sum(o.fixed and not o.todo for o in outcomes), sum(o.todo for o in outcomes)


def _confirmed(planned: list[tuple[Key, Patch]], before: set[Key], after: set[Key]) -> bool:
    """Every planned finding settled (TODOs aside) and nothing new but the TODOs' own declarations."""
    remaining = {_pathless(k) for k in after}
    todos = {(key[0], fieldpath.render(p.todo)) for key, p in planned if p.todo is not None}
    for prefix, new in {_pathless(k) for k in after} - {_pathless(k) for k in before}:
        found = [k for k in after if _pathless(k) == (prefix, new)]
        if new[1] != INVALID_DECLARATION or not any((prefix, k[1][7]) in todos for k in found):
            return False
    return all(p.todo is not None or _pathless(key) not in remaining for key, p in planned)

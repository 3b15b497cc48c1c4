"""Files in and out of `kubegap fix`: read once, fixed document by document, written back only when safe.

- A file with any document kubegap cannot read is left untouched (`Refused`).
- The fixed text keeps the file's bytes outside the edits: its byte-order mark, its line ends (CRLF
  lines stay CRLF; new lines take the file's usual line end), the documents that need no fix.
- A write goes through a symlink only when the link's target stays inside the tree the file was found
  in (the folder given on the command line, or the file's own folder), and never when the file changed
  since it was read. The new content replaces the file atomically, keeping its permissions.
"""

from __future__ import annotations

import codecs
import difflib
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubegap import inputs, manifests
from kubegap.errors import KubegapError
from kubegap.evaluate import Engine
from kubegap.findings import Finding, ObjectRef
from kubegap.fix.checked import Outcome, Scope, count_fixable, fix_text
from kubegap.fix.nodes import line_starts


class Refused(KubegapError):
    """A file kubegap will not change; the message says why."""


@dataclass(slots=True)
class Source:
    name: str  # as shown: the path as given, or <stdin>
    path: Path | None  # None for stdin
    root: Path | None  # the tree the file was found in
    data: bytes  # exactly as read


@dataclass(slots=True)
class Fixed:
    source: Source
    original: str  # decoded, line ends as in the file
    text: str  # fixed, same conventions
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.text != self.original

    def diff(self) -> str:
        name = self.source.name
        lines = difflib.unified_diff(
            self.original.splitlines(keepends=True),
            self.text.splitlines(keepends=True),
            name,
            name,
        )
        return "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
        )


def sources(
    paths: list[str],
    stdin_data: bytes | None,
    exclude: Sequence[str] = (),
    notes: list[str] | None = None,
) -> list[Source]:
    """The files to fix, read: folders walked as lint walks them (`exclude` globs, notes on what is left
    out)."""
    out: list[Source] = []
    for given in paths:
        if given == inputs.STDIN:
            out.append(Source(inputs.STDIN_NAME, None, None, stdin_data or b""))
            continue
        root = Path(given) if Path(given).is_dir() else Path(given).parent
        for name, path in inputs.expand([given], exclude, notes):
            assert path is not None
            try:
                data = Path(path).read_bytes()
            except OSError as err:
                raise Refused(f"{name}: cannot read: {err.strerror or err}") from None
            out.append(Source(name, Path(path), root, data))
    return out


def _decode(data: bytes) -> tuple[str, str]:
    """(byte-order mark, text); Refused for what manifests.Reader would not read either."""
    bom = codecs.BOM_UTF8.decode() if data.startswith(codecs.BOM_UTF8) else ""
    try:
        text = data[len(codecs.BOM_UTF8) if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("not UTF-8 text") from None
    if "\r" in text.replace("\r\n", ""):
        raise Refused("the file ends lines with a lone CR")
    return bom, text


@dataclass(frozen=True, slots=True)
class Layout:
    """A file split into the texts of its documents, as `manifests.Reader` reads them."""

    bom: str
    original: str  # without the byte-order mark, line ends as in the file
    plain: str  # line ends as LF, which is what documents' texts use
    # (offset in `plain`, the documents of that text: one, or the items of a List)
    pieces: list[tuple[int, list[manifests.Document]]]


def layout(source: Source, documents: Sequence[manifests.Document] | None = None) -> Layout:
    """`documents`: the source's, as a Reader read them, where the caller has them (lint's runs)."""
    bom, original = _decode(source.data)
    if documents is None:
        documents = list(manifests.Reader().read_bytes(source.data, source.name))
    broken = next((d for d in documents if d.error is not None), None)
    if broken is not None:
        assert broken.error is not None
        message = broken.error.message
        raise Refused(f"kubegap cannot read document {broken.index + 1} ({message}); file left as it is")
    plain = original.replace("\r\n", "\n")
    starts = line_starts(plain)
    pieces: dict[int, list[manifests.Document]] = {}
    for doc in documents:  # the items of a List share one text: fixed together
        pieces.setdefault(starts[doc.line - 1], []).append(doc)
    for offset, (doc, *_) in pieces.items():
        if plain[offset : offset + len(doc.text)] != doc.text:
            raise Refused("the document's text could not be found again in the file")
    return Layout(bom, original, plain, sorted(pieces.items(), key=lambda p: p[0]))


def fix_source(source: Source, scope: Scope) -> Fixed:
    parts = layout(source)
    out, pos, outcomes = [], 0, []
    for offset, docs in parts.pieces:
        doc = docs[0]
        fixed, done = fix_text(docs, scope)
        out += [parts.plain[pos:offset], fixed]
        pos = offset + len(doc.text)
        outcomes += done
    new_plain = "".join(out) + parts.plain[pos:]
    text = parts.bom + _restore_line_ends(parts.original, new_plain)
    return Fixed(source, parts.bom + parts.original, text, outcomes)


def count_source(
    source: Source,
    scope: Scope,
    linted: Sequence[Finding] | None = None,
    documents: Sequence[manifests.Document] | None = None,
) -> tuple[int, int]:
    """(fixed, left as TODO) of one file, as `fix_source` would make them (`checked.count_fixable`).
    `linted`: the file's findings from lint with the same engine, so that its documents are not evaluated
    a second time (a third of what counting cost); `documents` as for `layout`."""
    return count_layout(layout(source, documents), source, scope, linted)


def count_layout(
    parts: Layout, source: Source, scope: Scope, linted: Sequence[Finding] | None = None
) -> tuple[int, int]:
    """`count_source` of a file already laid out."""
    fixed = todo = 0
    for _, docs in parts.pieces:
        done, left = count_fixable(docs, scope, own_findings(linted, docs, source))
        fixed, todo = fixed + done, todo + left
    return fixed, todo


def own_findings(
    linted: Sequence[Finding] | None, docs: Sequence[manifests.Document], source: Source
) -> list[Finding] | None:
    """Lint's findings of one document, where they are surely its own; else None (evaluated again). Not
    for the items of a List, which share a document number, nor for a document a `# Source:` line names
    otherwise (another file's documents may carry that name), nor where a finding is about another object."""
    doc = docs[0]
    if linted is None or len(docs) != 1 or doc.file != source.name or doc.obj is None:
        return None
    own = [f for f in linted if f.document == doc.index]
    ref = ObjectRef.of(doc.obj)
    return own if all(f.object == ref for f in own) else None


def _restore_line_ends(original: str, fixed: str) -> str:
    """`fixed` (LF) with the original line ends on the lines it kept, the file's usual one on new lines."""
    if "\r\n" not in original:
        return fixed
    old = original.splitlines(keepends=True)
    new = fixed.splitlines(keepends=True)
    usual = "\r\n" if original.count("\r\n") * 2 >= original.count("\n") else "\n"
    plain_old = [line.replace("\r\n", "\n") for line in old]
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, plain_old, new, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            out += old[a1:a2]
        else:
            out += [line[:-1] + usual if line.endswith("\n") else line for line in new[b1:b2]]
    return "".join(out)


def check_writable(source: Source) -> Path:
    """The real file to write; Refused for a link out of the tree or a file changed since it was read."""
    assert source.path is not None and source.root is not None
    real = source.path.resolve()
    root = source.root.resolve()
    if real != root and root not in real.parents:
        raise Refused(f"it is a link to {real}, outside {source.root}; not written through")
    try:
        now = real.read_bytes()
    except OSError as err:
        raise Refused(f"cannot read it again: {err.strerror or err}") from None
    if now != source.data:
        raise Refused("it changed since kubegap read it; run kubegap fix again")
    return real


def write(fixed: Fixed) -> None:
    real = check_writable(fixed.source)
    mode = real.stat().st_mode & 0o7777
    handle, temp = tempfile.mkstemp(prefix=f".{real.name}.", dir=real.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(fixed.text.encode("utf-8"))
        Path(temp).chmod(mode)
        Path(temp).replace(real)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def fix_bytes(data: bytes, name: str, scope: Scope) -> Fixed:
    """One file's content fixed in memory (nothing is written): for tests, reports and other tools."""
    return fix_source(Source(name, None, None, data), scope)


def scope_for(found: Sequence[Source], engine: Engine, selected: Callable[[Finding], bool]) -> Scope:
    """What a run fixes with: the engine, the ConfigMaps of all its files (as lint reads them), the rules."""
    mention = [s for s in found if b"ConfigMap" in s.data]  # as lint does: only these can hold one
    documents = (d for s in mention for d in manifests.Reader().read_bytes(s.data, s.name))
    return Scope(engine, manifests.configmaps_of(documents), selected)

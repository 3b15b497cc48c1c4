"""Kubernetes manifests read for `kubegap lint`: files, directories and stdin, safely, with positions.

`Reader().read(paths)` (or the shorthand `read(paths)`) yields one `Document` per Kubernetes object and
one per document that cannot be read; a bad document is an error `Document`, never an exception, so the
rest of the input is still linted. Only a path that does not exist raises `UsageError`, and it does so
before anything is read.

Inputs
- A file is read whatever its name; a directory is walked as `kubegap.inputs` says; `-` is stdin,
  named `<stdin>`. JSON is read by the YAML loader (JSON is YAML flow syntax), so a `.json` file may hold
  one object or a List.
- A file is split at its document markers before parsing, so a broken document hides no other. A marker
  is a line that starts, at column 0, with `---` or `...` followed by a space, a tab or the end of the
  line. YAML itself forbids such a line inside any scalar, so indented `---` in a block scalar is content.
  `---` opens the next document; `...` closes the current one.
- A UTF-8 byte-order mark and CRLF line ends are accepted; NUL bytes or text that is not UTF-8 make the
  whole file a `binary` error. A file over 64 MiB (`MAX_FILE_BYTES`) is not read past that size and is a
  `too-large` error; so is a single document over 8 MiB (`MAX_DOCUMENT_BYTES`).

Documents
- Empty documents (nothing, `---` alone, only comments, `null`) are skipped and not counted.
  `Document.index` counts the other documents of a file from 0, including those that are skipped as not
  Kubernetes objects and those in error.
- A mapping without both `apiVersion` and `kind` (a values.yaml, a kustomization patch) is not a
  Kubernetes object: nothing is yielded and `Reader.skipped` counts it. `Reader.files` counts files read and
  `Reader.documents` counts non-empty documents.
- `kind: List`, and any `*List` kind whose `items` is a list, yields one Document per item with
  `prefix == ("items", i)`; all items share the List's `index` and `line`.
- A top level that is not a mapping is a `not-an-object` error; see `kubegap.yamlguard` for the loading
  rules (plain types only, duplicate keys, alias and depth limits, YAML 1.1 booleans).
- Helm leftovers: a Helm action (`{{ .Values.x }}`, `{{ include ... }}`) outside comments, or any `{{` in a
  document that fails to load, is an `unrendered-template` error. `{{ }}` text inside a document that loads
  is kept, since rendered manifests carry it (Argo Workflows, Prometheus alert templates).
- `# Source: chart/templates/x.yaml` comment lines (as `helm template` writes them) name the documents that
  follow, up to the next such line: `Document.file` is that name, while `Document.line` and all positions
  stay lines of the stream that was read.

Positions: `locate(doc, path)` walks the node graph of the document's text, which the reader kept for the
last documents it read (an older document's text is composed again), and returns the 1-based line and
column of the path's key, or of the nearest existing parent when the path does not exist.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from yaml.nodes import Node

from kubegap import raw, yamlguard
from kubegap.fieldpath import FieldPath
from kubegap.inputs import expand

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024

# A marker line starts with `---` or `...`, then a space, a tab or the line's end. Searched for with the
# newline before it, in the text after a newline that stands for its start: a pattern that begins with
# one character is searched for that character, where `^` was tried at every position (9.3 against 2.0 µs
# a file of the lint corpus).
_MARKER = re.compile(r"\n(?:---|\.\.\.)(?=[ \t\n]|\Z)")
_DIRECTIVES_ONLY = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n|%[^\n]*(?:\n|\Z))*")
_BLANK = re.compile(r"(?:(?:---|\.\.\.)?[ \t]*(?:#[^\n]*)?(?:\n|\Z))*")
_SOURCE = re.compile(r"^# Source: *(\S[^\n]*?)[ \t]*$", re.MULTILINE)
_HELM_HINT = "render the chart first, e.g. `helm template RELEASE CHART | kubegap lint -`"


@dataclass(frozen=True, slots=True)
class ManifestError:
    """Why a document is no object kubegap can read, and where (an `invalid-manifest` finding)."""

    rule: str  # yaml-syntax, duplicate-key, alias-limit, too-deep, number-range, too-large,
    # unrendered-template, binary, not-an-object, unreadable
    message: str
    line: int | None  # 1-based, in the file
    column: int | None


@dataclass(frozen=True, slots=True)
class Document:
    """One YAML document of an input: its object, or why there is none, and where it is."""

    file: str  # the path as given, "<stdin>", or the name from a `# Source:` line
    index: int  # 0-based among the file's non-empty documents
    line: int  # 1-based line of the file where `text` starts
    obj: Mapping[str, Any] | None  # None when `error` is set
    error: ManifestError | None
    prefix: FieldPath = ()  # ("items", i) for an item of a List
    text: str = ""  # the document's text, composed again by `locate` only when a position is needed


def configmaps_of(documents: Iterable[Document]) -> dict[tuple[str, str], Mapping[str, str]]:
    """The ConfigMaps among the documents by (namespace, name), so that `configMapKeyRef` and `envFrom`
    resolve as they would in the cluster (lint, `kubegap test` and `kubegap fix` read them alike)."""
    out: dict[tuple[str, str], Mapping[str, str]] = {}
    for doc in documents:
        obj = doc.obj
        if obj is None or obj.get("kind") != "ConfigMap" or obj.get("apiVersion") != "v1":
            continue
        meta, data = raw.mapping(obj.get("metadata")), raw.mapping(obj.get("data"))
        out[(str(meta.get("namespace") or "default"), str(meta.get("name", "")))] = {
            str(k): str(v) for k, v in data.items()
        }
    return out


def read_file(path: str) -> bytes:
    """The file's bytes, at most `MAX_FILE_BYTES + 1` (enough to tell it is too large). A regular file is
    read at its size: asking for 64 MiB sets that much aside first, for every file. Pipes
    (`<(helm template …)`) have no size: read in chunks to their end. Through the file descriptor, not a
    buffered file object: 8 against 20 µs a file (2,000 files, measured), paid once before lint's runs
    (looking for ConfigMaps) and again in them."""
    fd = os.open(path, os.O_RDONLY | _BINARY)
    try:
        info = os.fstat(fd)
        ask = min(info.st_size, MAX_FILE_BYTES) + 1 if stat.S_ISREG(info.st_mode) else _PIPE_CHUNK
        chunks: list[bytes] = []
        left = MAX_FILE_BYTES + 1
        # to the end (an empty read; a read a signal cut short is not one), up to the bound: a regular
        # file may have grown since its size was taken
        while left > 0 and (chunk := os.read(fd, min(ask, left))):
            chunks.append(chunk)
            left -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
_PIPE_CHUNK = 1 << 16


class Reader:
    """Reads manifests and counts what it saw; one Reader per run."""

    def __init__(self) -> None:
        self.files = 0
        self.documents = 0
        self.skipped = 0

    def read(self, paths: Sequence[str], stdin: IO[bytes] | None = None) -> Iterator[Document]:
        """Documents of every path in order; raises UsageError now if a path does not exist."""
        return self.read_files(expand(paths), stdin)

    def read_files(
        self, files: Sequence[tuple[str, str | None]], stdin: IO[bytes] | None = None
    ) -> Iterator[Document]:
        """Documents of files `inputs.expand` listed: (display name, path or None for stdin)."""
        for name, path in files:
            try:
                if path is None:
                    data = (stdin if stdin is not None else sys.stdin.buffer).read(MAX_FILE_BYTES + 1)
                else:
                    data = read_file(path)
            except OSError as exc:
                self.files += 1
                reason = exc.strerror or str(exc)
                yield _failed(name, ManifestError("unreadable", f"cannot read {name}: {reason}", None, None))
                continue
            yield from self.read_bytes(data, name)

    def read_bytes(self, data: bytes, name: str) -> Iterator[Document]:
        """Documents of one file's content; `name` is the display name."""
        self.files += 1
        if len(data) > MAX_FILE_BYTES:
            message = f"file is larger than {MAX_FILE_BYTES // 2**20} MiB; split it"
            yield _failed(name, ManifestError("too-large", message, None, None))
            return
        text = _decode(data)
        if isinstance(text, ManifestError):
            yield _failed(name, text)
            return
        source, index = name, 0
        for line, piece in _pieces(text):
            named = _SOURCE.findall(piece) if "# Source:" in piece else None
            source = named[-1] if named else source
            documents = self._documents(piece, line, source, index)
            if documents is not None:
                self.documents += 1
                index += 1
                yield from documents

    def _documents(self, text: str, line: int, file: str, index: int) -> list[Document] | None:
        """The documents of one piece of text: None when it is empty, [] when it is not Kubernetes."""

        def failed(rule: str, message: str, where: tuple[int | None, int | None]) -> list[Document]:
            at, column = where
            if at is not None and at > (last := line + text.rstrip("\n").count("\n")):
                at, column = last, None  # "unexpected end": keep it off the next document's marker line
            return [Document(file, index, line, None, ManifestError(rule, message, at, column), (), text)]

        if len(text) > MAX_DOCUMENT_BYTES // 4 and len(text.encode()) > MAX_DOCUMENT_BYTES:
            return failed(
                "too-large", f"document is larger than {MAX_DOCUMENT_BYTES // 2**20} MiB", (line, 1)
            )
        has_braces = "{{" in text
        leftover = yamlguard.template_leftover(text, line=line, helm_only=True) if has_braces else None
        try:
            if leftover is not None:
                return failed("unrendered-template", _unrendered(leftover[2]), leftover[:2])
            data = yamlguard.load(text, line=line)
        except yamlguard.LoadError as exc:
            if _BLANK.fullmatch(text):  # libyaml trips on a lone `...` or a tab-only line: still empty
                return None
            leftover = yamlguard.template_leftover(text, line=line, helm_only=False) if has_braces else None
            if leftover is not None:
                return failed("unrendered-template", _unrendered(leftover[2]), leftover[:2])
            return failed(exc.rule, exc.message, (exc.line, exc.column))
        if data is None:
            return None
        if not isinstance(data, dict):
            placed = Document(file, index, line, None, None, (), text)
            return failed(
                "not-an-object",
                f"top level is a {_kind_of(data)}, not a Kubernetes object",
                locate(placed, ()),
            )
        return self._objects(data, Document(file, index, line, data, None, (), text))

    def _objects(self, data: dict[Any, Any], whole: Document) -> list[Document]:
        kind, items = data.get("kind"), data.get("items")
        if not (isinstance(kind, str) and kind.endswith("List") and isinstance(items, list)):
            if _is_object(data):
                return [whole]
            self.skipped += 1
            return []
        out: list[Document] = []
        for i, item in enumerate(items):
            prefix: FieldPath = ("items", i)
            if isinstance(item, dict) and _is_object(item):
                out.append(Document(whole.file, whole.index, whole.line, item, None, prefix, whole.text))
            elif isinstance(item, dict):
                self.skipped += 1
            else:
                placed = Document(whole.file, whole.index, whole.line, None, None, prefix, whole.text)
                at, column = locate(placed, ())
                message = f"items[{i}] is a {_kind_of(item)}, not a Kubernetes object"
                error = ManifestError("not-an-object", message, at, column)
                out.append(Document(whole.file, whole.index, whole.line, None, error, prefix, whole.text))
        return out


def read(paths: Sequence[str], stdin: IO[bytes] | None = None) -> Iterator[Document]:
    """`Reader().read(paths, stdin)` for callers that need no counters."""
    return Reader().read(paths, stdin)


def _failed(name: str, error: ManifestError) -> Document:
    return Document(name, 0, error.line or 1, None, error)


def _is_object(data: Mapping[Any, Any]) -> bool:
    return "apiVersion" in data and "kind" in data


def _kind_of(value: object) -> str:
    if isinstance(value, list):
        return "list"
    return "null" if value is None else f"scalar ({type(value).__name__})"


def _unrendered(snippet: str) -> str:
    return f"unrendered template {snippet[:80]!r}: {_HELM_HINT}"


def _decode(data: bytes) -> str | ManifestError:
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        return ManifestError("binary", "binary content (NUL bytes), not a UTF-8 text manifest", line, None)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        message = f"not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}); save the file as UTF-8"
        return ManifestError("binary", message, line, None)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _markers(text: str) -> Iterator[int]:
    """Where each marker line starts in `text`: in the text after a newline, its newline is one before."""
    return (marker.start() for marker in _MARKER.finditer("\n" + text))


def _pieces(text: str) -> Iterator[tuple[int, str]]:
    """(1-based first line, text) of each document, split at the marker lines described above."""
    start, line = 0, 1
    for cut in _markers(text):
        if text.startswith("...", cut):
            end = text.find("\n", cut)
            cut = len(text) if end < 0 else end + 1
        piece = text[start:cut]
        # `%YAML`/`%TAG` directives belong to the document that the following `---` opens.
        if not piece or ("%" in piece and _DIRECTIVES_ONLY.fullmatch(piece)):
            continue
        yield line, piece
        line += piece.count("\n")
        start = cut
    if start < len(text):
        yield line, text[start:]


def locate(doc: Document, path: FieldPath, root: Node | None = None) -> tuple[int, int]:
    """1-based (line, column) in the file of `doc.prefix + path`, or of its nearest existing parent.
    `root`: the graph of the document's text (`yamlguard.compose`), where the caller holds it."""
    at = doc.prefix + tuple(path)
    found = yamlguard.position(doc.text, at) if root is None else yamlguard.position_in(root, at)
    return (doc.line, 1) if found is None else (doc.line + found[0], found[1] + 1)

from __future__ import annotations

import codecs
import contextlib
import io
import os
import re
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegap import manifests
from kubegap.errors import UsageError
from kubegap.manifests import Document, Reader, locate

DATA = Path(__file__).parent / "data" / "manifests"

POD = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"


def read_bytes(data: bytes, name: str = "f.yaml") -> list[Document]:
    return list(Reader().read_bytes(data, name))


def name_of(doc: Document) -> str:
    assert doc.obj is not None
    return str(doc.obj["metadata"]["name"])


def outcomes(documents: list[Document]) -> list[tuple[str, int]]:
    """(error rule or "ok:<name>", line of the error or of the document) for each document."""
    out = []
    for doc in documents:
        if doc.error is not None:
            out.append((doc.error.rule, doc.error.line or 0))
        else:
            assert doc.obj is not None
            out.append((f"ok:{doc.obj['metadata']['name']}", doc.line))
    return out


# (case, content, expected outcomes): one bad input each, with valid documents around it still read.
CASES: list[tuple[str, bytes, list[tuple[str, int]]]] = [
    ("valid", POD, [("ok:p", 1)]),
    ("duplicate key", POD + b"  name: q\n", [("duplicate-key", 5)]),
    ("python tag", POD + b"x: !!python/object/apply:os.system [ls]\n", [("yaml-syntax", 5)]),
    (
        "syntax error mid-stream",
        POD + b"---\na: [1\n---\n" + POD,
        [("ok:p", 1), ("yaml-syntax", 6), ("ok:p", 7)],
    ),
    ("error at end of a document stays in it", b"a: 'open\n---\n" + POD, [("yaml-syntax", 1), ("ok:p", 2)]),
    ("bare list", b"- a\n- b\n", [("not-an-object", 1)]),
    ("scalar", b"---\n  just text\n", [("not-an-object", 2)]),
    (
        "helm values reference",
        b"---\n" + POD + b"  namespace: '{{ .Release.Namespace }}'\n",
        [("unrendered-template", 6)],
    ),
    ("unquoted braces break the document", POD + b"spec: {{ spec }}\n", [("unrendered-template", 5)]),
    ("braces in a comment only", POD + b"# {{ .Values.x }}\n", [("ok:p", 1)]),
    ("NUL bytes", POD + b"\x00\x01\x02", [("binary", 5)]),
    ("not UTF-8", POD + b"x: caf\xe9\n", [("binary", 5)]),
    (
        "BOM and CRLF",
        codecs.BOM_UTF8 + POD.replace(b"\n", b"\r\n") + b"---\r\n" + POD.replace(b"\n", b"\r\n"),
        [("ok:p", 1), ("ok:p", 5)],
    ),
    (
        "old Mac line ends",
        POD.replace(b"\n", b"\r") + b"---\r" + POD.replace(b"\n", b"\r"),
        [("ok:p", 1), ("ok:p", 5)],
    ),
    (
        "empty, markers, comments and null are skipped",
        b"\n---\n---\n# c\n---\nnull\n---\n~\n...\n" + POD,
        [("ok:p", 10)],
    ),
    ("lone end markers and tab-only lines", b"...\n---\n\t\n...\n...\n" + POD, [("ok:p", 6)]),
    ("marker with a comment", b"--- # first\n" + POD + b"--- # second\n" + POD, [("ok:p", 1), ("ok:p", 6)]),
    (
        "indented marker inside a block scalar is content",
        POD + b"data:\n  x: |\n    a\n    ---\n    b\n",
        [("ok:p", 1)],
    ),
    ("dashes that are not a marker", POD + b"data:\n  x: >-\n    ---not-a-marker\n", [("ok:p", 1)]),
    ("document end marker", POD + b"...\n" + POD + b"...\n", [("ok:p", 1), ("ok:p", 6)]),
    ("directive before a marker", b"%YAML 1.1\n---\n" + POD, [("ok:p", 1)]),
    (
        "marker with content on its line",
        b"--- {apiVersion: v1, kind: Pod, metadata: {name: p}}\n",
        [("ok:p", 1)],
    ),
]


@pytest.mark.parametrize(("case", "content", "expected"), CASES, ids=[c[0] for c in CASES])
def test_bad_inputs_become_error_documents(
    case: str, content: bytes, expected: list[tuple[str, int]]
) -> None:
    assert outcomes(read_bytes(content)) == expected


# What a marker line is (YAML 1.2 §9.1), written as it reads: `---` or `...` at a line's start, then a space,
# a tab or the line's end. The reader searches for it another way (kubegap.manifests._MARKER).
MARKER_LINE = re.compile(r"^(?:---|\.\.\.)(?=[ \t]|$)", re.MULTILINE)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["---", "...", "--", "-", ".", "\n", " ", "\t", "a", "#"]), max_size=16))
def test_marker_lines_are_found_where_they_are_and_nowhere_else(parts: list[str]) -> None:
    text = "".join(parts)
    assert list(manifests._markers(text)) == [m.start() for m in MARKER_LINE.finditer(text)]


def test_alias_bomb_and_deep_nesting_are_errors_beside_good_documents() -> None:
    levels = ['l0: &l0 ["lol"]'] + [
        f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)
    ]
    bomb = ("apiVersion: v1\nkind: ConfigMap\n" + "\n".join(levels) + "\n").encode()
    deep = b"apiVersion: v1\nkind: ConfigMap\ndata: " + b"[" * 500 + b"]" * 500 + b"\n"
    stream = POD + b"---\n" + bomb + b"---\n" + deep + b"---\n" + POD
    got = outcomes(read_bytes(stream))
    assert [rule for rule, _ in got] == ["ok:p", "alias-limit", "too-deep", "ok:p"]
    assert got[2][1] == 21  # the `data:` line of the deep document


def test_error_messages_are_one_line_and_name_the_fix() -> None:
    docs = read_bytes(POD + b"  namespace: '{{ .Values.ns }}'\n")
    assert docs[0].error is not None
    assert "helm template" in docs[0].error.message and "\n" not in docs[0].error.message
    dup = read_bytes(POD + b"  name: q\n")[0].error
    assert dup is not None and "'name'" in dup.message and "line 4" in dup.message and "line 5" in dup.message


def test_index_counts_non_empty_documents_only() -> None:
    stream = b"# preamble\n---\n" + POD + b"---\n---\nvalues: 1\n---\n- x\n---\n" + POD
    docs = read_bytes(stream)
    assert [(d.index, d.error.rule if d.error else "ok") for d in docs] == [
        (0, "ok"),
        (2, "not-an-object"),
        (3, "ok"),
    ]


def test_reader_counters() -> None:
    reader = Reader()
    docs = list(
        reader.read([str(DATA / "values.yaml"), str(DATA / "list.yaml"), str(DATA / "multi-broken.yaml")])
    )
    assert len(docs) == 2 + 1 + 3  # list: two pods and one not-an-object item
    assert (reader.files, reader.documents, reader.skipped) == (3, 1 + 1 + 3, 1 + 1)


def test_multi_document_file_with_broken_middle() -> None:
    docs = list(manifests.read([str(DATA / "multi-broken.yaml")]))
    assert outcomes(docs) == [("ok:first", 1), ("yaml-syntax", 15), ("ok:third", 16)]
    assert [d.index for d in docs] == [0, 1, 2]
    assert docs[2].obj is not None and docs[2].obj["kind"] == "Job"


def test_list_items_are_documents_with_a_prefix() -> None:
    docs = list(manifests.read([str(DATA / "list.yaml")]))
    assert [(d.prefix, d.error.rule if d.error else name_of(d)) for d in docs] == [
        (("items", 0), "one"),
        (("items", 1), "two"),
        (("items", 2), "not-an-object"),
    ]
    assert docs[2].error is not None and docs[2].error.line == 20
    assert locate(docs[1], ("spec", "containers", 0, "image")) == (19, 7)


def test_json_files_hold_an_object_or_a_list() -> None:
    docs = list(manifests.read([str(DATA / "pod.json"), str(DATA / "list.json")]))
    assert [(d.file.rsplit("/", 1)[-1], d.obj["metadata"]["name"] if d.obj else None) for d in docs] == [
        ("pod.json", "from-json"),
        ("list.json", "a"),
        ("list.json", "b"),
    ]
    assert locate(docs[0], ("spec", "containers", 0, "image")) == (7, 24)
    assert locate(docs[2], ("metadata", "name")) == (3, 52)


def test_helm_source_comments_name_the_documents() -> None:
    docs = list(manifests.read([str(DATA / "helm-rendered.yaml")]))
    assert [(d.file, d.line, d.obj["kind"] if d.obj else None) for d in docs] == [
        ("trainer/templates/configmap.yaml", 1, "ConfigMap"),
        ("trainer/templates/job.yaml", 9, "Job"),
        ("trainer/templates/job.yaml", 21, "Service"),  # kept until the next `# Source:`
    ]
    # Lines stay lines of the stream that was read.
    assert locate(docs[1], ("spec", "template", "spec", "containers", 0, "image")) == (20, 9)


def test_helm_leftovers_and_legitimate_braces() -> None:
    bad = list(manifests.read([str(DATA / "helm-unrendered.yaml")]))
    assert [(d.error.rule, d.error.line, d.error.column) if d.error else None for d in bad] == [
        ("unrendered-template", 5, 10),
        ("unrendered-template", 7, 1),
        ("unrendered-template", 17, 9),
    ]
    good = list(manifests.read([str(DATA / "rendered-templates.yaml")]))
    assert [d.obj["kind"] if d.obj else d.error for d in good] == ["Workflow", "PrometheusRule"]


# (path, expected (line, column)) in multi-broken.yaml's third document (a Job starting at line 16).
POSITIONS = [
    ((), (17, 1)),
    (("metadata", "name"), (20, 3)),
    (("spec", "template", "spec", "containers", 0), (25, 9)),
    (("spec", "template", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"), (29, 13)),
    (("spec", "template", "spec", "containers", 0, "livenessProbe"), (25, 9)),  # missing: the container
    (("spec", "template", "spec", "containers", 3, "image"), (24, 7)),  # no such item: the list's key
    (("spec", "template", "spec", "nodeSelector", "zone"), (23, 5)),
    (("metadata", "name", "deeper"), (20, 3)),  # below a scalar: the scalar's key
]


@pytest.mark.parametrize(("path", "expected"), POSITIONS, ids=[str(p[0]) for p in POSITIONS])
def test_locate(path: tuple[str | int, ...], expected: tuple[int, int]) -> None:
    third = list(manifests.read([str(DATA / "multi-broken.yaml")]))[2]
    assert locate(third, path) == expected


def test_locate_follows_merge_keys_and_falls_back_for_error_documents() -> None:
    docs = read_bytes(b"x: 1\n---\n" + POD + b"  labels:\n    <<: {team: a}\n    app: b\n---\na: [\n")
    assert locate(docs[0], ("metadata", "labels", "team")) == (8, 10)
    assert docs[1].error is not None
    assert locate(docs[1], ("spec",)) == (docs[1].line, 1)


def test_stdin_is_read_once_under_its_own_name() -> None:
    docs = list(manifests.read(["-"], io.BytesIO(POD + b"---\n" + POD)))
    assert [(d.file, d.index, d.line) for d in docs] == [("<stdin>", 0, 1), ("<stdin>", 1, 5)]


def test_directories_recurse_in_sorted_order_skipping_hidden_and_other_suffixes() -> None:
    root = DATA / "tree"
    docs = list(manifests.read([str(root)]))
    names = [
        (Path(d.file).relative_to(root).as_posix(), d.obj["metadata"]["name"] if d.obj else None)
        for d in docs
    ]
    assert names == [("a/y.json", "a-y"), ("a/z.yml", "a-z"), ("a.yaml", "a"), ("b.yaml", "b")]


def test_a_named_file_is_read_whatever_its_suffix() -> None:
    docs = list(manifests.read([str(DATA / "tree" / "notes.txt")]))
    assert [d.obj["metadata"]["name"] if d.obj else None for d in docs] == ["not-a-manifest-suffix"]


def test_missing_path_is_a_usage_error_before_anything_is_read(tmp_path: Path) -> None:
    stdin = io.BytesIO(POD)
    with pytest.raises(UsageError, match=r"nope\.yaml"):
        manifests.read(["-", str(tmp_path / "nope.yaml")], stdin)
    assert stdin.tell() == 0


def test_unreadable_file_is_an_error_document(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_bytes(POD)
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "missing-target.yaml")
    reader = Reader()
    docs = list(reader.read([str(tmp_path)]))
    assert [(Path(d.file).name, d.error.rule if d.error else "ok") for d in docs] == [
        ("gone.yaml", "unreadable"),
        ("ok.yaml", "ok"),
    ]
    assert reader.files == 2


def test_size_caps_stop_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifests, "MAX_FILE_BYTES", 200)
    stdin = io.BytesIO(POD * 100)
    docs = list(manifests.read(["-"], stdin))
    assert [d.error.rule if d.error else "ok" for d in docs] == ["too-large"]
    assert stdin.tell() == 201  # read no further than one byte past the cap
    monkeypatch.undo()
    monkeypatch.setattr(manifests, "MAX_DOCUMENT_BYTES", 100)
    big = POD + b"data:\n  x: '" + b"y" * 120 + b"'\n"
    assert outcomes(read_bytes(POD + b"---\n" + big)) == [("ok:p", 1), ("too-large", 5)]


def test_a_file_is_read_whole_up_to_one_byte_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manifests, "MAX_FILE_BYTES", 200)
    small, large = tmp_path / "small.yaml", tmp_path / "large.yaml"
    small.write_bytes(POD)
    large.write_bytes(POD * 100)
    assert manifests.read_file(str(small)) == POD
    assert manifests.read_file(str(large)) == (POD * 100)[:201]
    assert [d.error.rule if d.error else "ok" for d in manifests.read([str(large)])] == ["too-large"]


def test_a_file_that_grew_after_its_size_was_taken_is_read_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "growing.yaml"
    path.write_bytes(POD * 3)
    real = os.fstat

    def earlier(fd: int) -> os.stat_result:  # the size the file had a moment before
        info = real(fd)
        fields = list(info)
        fields[6] = len(POD)  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(manifests.os, "fstat", earlier)
    assert manifests.read_file(str(path)) == POD * 3
    monkeypatch.setattr(manifests, "MAX_FILE_BYTES", len(POD) * 2)
    assert manifests.read_file(str(path)) == (POD * 3)[: len(POD) * 2 + 1]


def test_a_pipe_is_read_to_its_end_though_it_has_no_size(monkeypatch: pytest.MonkeyPatch) -> None:
    # what `kubegap lint <(helm template …)` passes: /dev/fd/N, a pipe whose size reads 0
    monkeypatch.setattr(manifests, "MAX_FILE_BYTES", 200)
    for content, expected in ((POD, POD), (POD * 100, (POD * 100)[:201])):
        read_end, write_end = os.pipe()
        writer = threading.Thread(target=_write_all, args=(write_end, content))
        writer.start()
        try:
            assert manifests.read_file(f"/dev/fd/{read_end}") == expected
        finally:
            writer.join()
            os.close(read_end)


def _write_all(fd: int, content: bytes) -> None:
    with contextlib.suppress(BrokenPipeError), os.fdopen(fd, "wb") as handle:
        handle.write(content)

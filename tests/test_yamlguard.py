from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
import yaml

from kubegap import yamlguard
from kubegap.yamlguard import MAX_DEPTH, LoadError

LOADERS = [pytest.param(False, id="fast"), pytest.param(True, id="pure")]
if not yaml.__with_libyaml__:
    LOADERS = [pytest.param(True, id="pure")]


def bomb(levels: int, fan_out: int = 9) -> str:
    """A 'billion laughs' document: each anchor is a list of `fan_out` aliases of the previous one."""
    lines = ['l0: &l0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan_out) + "]")
    return "\n".join(lines) + "\n"


def flow_nesting(levels: int) -> str:
    return "d: " + "[" * levels + "]" * levels + "\n"


def block_nesting(levels: int) -> str:
    """`levels` mappings in block style: the top level plus `levels - 1` nested `k:` keys."""
    lines = [" " * (2 * i) + "k:" for i in range(levels - 1)]
    return "\n".join(lines) + "\n" + " " * (2 * (levels - 1)) + "leaf: 1\n"


# (case, text, expected data)
LOADS: list[tuple[str, str, Any]] = [
    ("empty", "", None),
    ("comments only", "# nothing\n# here\n", None),
    ("null", "null\n", None),
    ("marker only", "---\n", None),
    ("plain mapping", "a: 1\nb: [x, y]\n", {"a": 1, "b": ["x", "y"]}),
    (
        "dates stay strings",
        "d: 2024-01-01\nt: 2024-01-01T10:00:00Z\n",
        {"d": "2024-01-01", "t": "2024-01-01T10:00:00Z"},
    ),
    ("equals sign is a string", "v: =\n", {"v": "="}),
    ("YAML 1.1 booleans kept as PyYAML reads them", "a: on\nb: no\n", {"a": True, "b": False}),
    # Kubernetes keeps an integer past int64 as a float64 (sigs.k8s.io/json); so does kubegap.
    (
        "integers past int64 become floats",
        "a: 9223372036854775808\nb: -9223372036854775808\n",
        {"a": 9.223372036854776e18, "b": -(2**63)},
    ),
    ("small aliases load", "base: &b {x: 1}\ncopy: *b\n", {"base": {"x": 1}, "copy": {"x": 1}}),
    (
        "merge key overrides are not duplicates",
        "b: &b {x: 1, y: 2}\nm: {<<: *b, x: 3}\n",
        {"b": {"x": 1, "y": 2}, "m": {"x": 3, "y": 2}},
    ),
    (
        "merge of a list of mappings",
        "a: &a {x: 1}\nb: &b {y: 2}\nm: {<<: [*a, *b]}\n",
        {"a": {"x": 1}, "b": {"y": 2}, "m": {"x": 1, "y": 2}},
    ),
    (
        "ampersand without alias",
        'url: "http://x/?a=1&b=2"\nglob: "*.yaml"\n',
        {"url": "http://x/?a=1&b=2", "glob": "*.yaml"},
    ),
    ("nesting at the limit", block_nesting(MAX_DEPTH), None),  # data checked separately below
    ("alias fan-out under the budget", bomb(4), None),
]


@pytest.mark.parametrize("pure", LOADERS)
@pytest.mark.parametrize(("case", "text", "expected"), LOADS, ids=[c[0] for c in LOADS])
def test_load_accepts(case: str, text: str, expected: Any, pure: bool) -> None:
    data = yamlguard.load(text, pure=pure)
    if case == "nesting at the limit":
        depth = 0
        while isinstance(data, dict) and "k" in data:
            data, depth = data["k"], depth + 1
        assert (depth, data) == (MAX_DEPTH - 1, {"leaf": 1})
    elif case == "alias fan-out under the budget":
        assert len(data["l4"]) == 9 and data["l4"][0][0][0][0] == ["lol"]
    else:
        assert data == expected


# (case, text, rule, line, column); the text starts at line 10 of its file.
REJECTS: list[tuple[str, str, str, int | None, int | None]] = [
    ("duplicate key", "a: 1\nb: 2\na: 3\n", "duplicate-key", 12, 1),
    ("nested duplicate key", "m:\n  name: x\n  name: y\n", "duplicate-key", 12, 3),
    ("duplicate int keys", "1: a\n0x1: b\n", "duplicate-key", 11, 1),
    ("duplicate beside a merge", "b: &b {x: 1}\nm:\n  <<: *b\n  y: 1\n  y: 2\n", "duplicate-key", 14, 3),
    ("python object tag", "x: !!python/object/apply:os.system [ls]\n", "yaml-syntax", 10, 4),
    ("python name tag", "x: !!python/name:os.system\n", "yaml-syntax", 10, 4),
    ("custom tag", "x: !Ref thing\n", "yaml-syntax", 10, 4),
    ("binary tag", "x: !!binary aGVsbG8=\n", "yaml-syntax", 10, 4),
    ("set tag", "x: !!set {a, b}\n", "yaml-syntax", 10, 4),
    ("timestamp tag", "x: !!timestamp 2024-01-01\n", "yaml-syntax", 10, 4),
    ("bool tag on a non-boolean", "x: !!bool maybe\n", "yaml-syntax", 10, 4),
    ("float tag on a non-number", "x: !!float abc\n", "yaml-syntax", 10, 4),
    ("int tag on nothing", "x: !!int\n", "yaml-syntax", 10, 4),
    ("syntax", "a: b\n c: d\n", "yaml-syntax", 11, 3),
    ("unclosed flow", "a: [1, 2\n", "yaml-syntax", None, None),
    ("unhashable key", "? [a]\n: 1\n", "yaml-syntax", 10, None),
    ("control character", "a: \x07\n", "yaml-syntax", 10, None),
    ("billion laughs", bomb(9), "alias-limit", None, None),
    ("recursive sequence alias", "a: &a [*a]\n", "alias-limit", 10, 4),
    ("recursive mapping alias", "a: &a {b: *a}\n", "alias-limit", 10, 4),
    ("flow nesting over our limit", flow_nesting(MAX_DEPTH + 5), "too-deep", 10, None),
    ("block nesting over our limit", block_nesting(MAX_DEPTH + 1), "too-deep", None, None),
    ("100,000-digit integer", "a: " + "9" * 100_000 + "\n", "number-range", 10, 4),
    ("integer past float64", "a: [1, " + "9" * 320 + "]\n", "number-range", 10, 8),
    ("huge hexadecimal integer", "a: 0x" + "f" * 1000 + "\n", "number-range", 10, 4),
    ("huge sexagesimal integer", "a: 1" + ":59" * 1000 + "\n", "number-range", 10, 4),
    (
        "deep through aliases",
        "a: &a " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 50 + "*a" + "]" * 50 + "\n",
        "too-deep",
        None,
        None,
    ),
]


@pytest.mark.parametrize("pure", LOADERS)
@pytest.mark.parametrize(("case", "text", "rule", "line", "column"), REJECTS, ids=[c[0] for c in REJECTS])
def test_load_rejects(
    case: str, text: str, rule: str, line: int | None, column: int | None, pure: bool
) -> None:
    with pytest.raises(LoadError) as raised:
        yamlguard.load(text, line=10, pure=pure)
    error = raised.value
    assert error.rule == rule, error.message
    if line is not None:
        assert error.line == line
    if column is not None:
        assert error.column == column
    assert "\n" not in error.message


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="libyaml's own nesting cap")
def test_libyaml_nesting_cap_is_a_clean_error() -> None:
    # libyaml stops at 1,000 levels with a scanner error, before our own walk could see the nodes.
    with pytest.raises(LoadError) as raised:
        yamlguard.load(flow_nesting(1100), line=10)
    assert (raised.value.rule, raised.value.line) == ("too-deep", 10)


def test_duplicate_key_message_names_key_and_both_lines() -> None:
    with pytest.raises(LoadError) as raised:
        yamlguard.load("metadata:\n  name: a\n  labels: {}\n  name: b\n", line=5)
    assert "'name'" in raised.value.message
    assert "line 8" in raised.value.message and "first at line 6" in raised.value.message


def test_alias_budget_counts_copies_not_unique_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlguard, "MAX_ALIAS_NODES", 100)
    # Many more unique nodes than the budget, with an anchor so the graph walk runs: accepted.
    many = "a: &a [x]\nb: *a\n" + "".join(f"k{i}: [a, b, c]\n" for i in range(100))
    assert len(yamlguard.load(many)) == 102
    # Three levels of 9 aliases copy 2 * 9**3 nodes: over a budget of 100.
    with pytest.raises(LoadError, match="more than 100 extra nodes"):
        yamlguard.load(bomb(3))
    assert len(yamlguard.load(bomb(1))["l1"]) == 9


# (path, expected 0-based (line, column)) in POSITIONED.
POSITIONED = "a:\n  b: [x, {c: 1}]\n  <<: {m: 2}\nl:\n- k: v\n"
POSITIONS: list[tuple[tuple[str | int, ...], tuple[int, int]]] = [
    ((), (0, 0)),
    (("a",), (0, 0)),
    (("a", "b"), (1, 2)),
    (("a", "b", 1), (1, 9)),
    (("a", "b", 1, "c"), (1, 10)),
    (("a", "m"), (2, 7)),  # brought in by the merge key
    (("a", "missing", "deeper"), (0, 0)),
    (("a", "b", 7), (1, 2)),
    (("a", "b", "0"), (1, 2)),  # a key does not index a sequence
    (("l", 0, "k"), (4, 2)),
]


@pytest.mark.parametrize(("path", "expected"), POSITIONS, ids=[str(p[0]) for p in POSITIONS])
def test_position(path: tuple[str | int, ...], expected: tuple[int, int]) -> None:
    assert yamlguard.position(POSITIONED, path) == expected


def test_a_position_is_an_own_key_before_a_merged_one() -> None:
    text = "a:\n  <<: [{n: 1}, {m: 2}]\n  m: 3\nb:\n  <<: [{n: 1}, {m: 2}]\n"
    assert yamlguard.position(text, ("a", "m")) == (2, 2)  # the own key, written after the merge
    assert yamlguard.position(text, ("b", "m")) == (4, 16)  # from the second merged mapping
    assert yamlguard.position(text, ("b", "<<")) == (3, 0)  # a merge key is no key of the mapping


def test_position_needs_no_guards_and_fails_softly() -> None:
    assert yamlguard.position("a: &a [*a]\n", ("a", 0, 0, 0)) == (0, 3)
    assert yamlguard.position("# only a comment\n", ("a",)) is None
    assert yamlguard.position("a: [\n", ("a",)) is None


# (case, text, helm_only, expected (line, column) or None); the text starts at line 1.
TEMPLATES: list[tuple[str, str, bool, tuple[int, int] | None]] = [
    ("no braces", "a: b\n", False, None),
    ("values reference", 'a: b\nname: "{{ .Values.name }}"\n', True, (2, 8)),
    ("root values reference", "name: x-{{ $.Values.name }}\n", True, (1, 9)),
    ("release name mid-string", 'name: "{{ .Release.Name }}-svc"\n', True, (1, 8)),
    ("trimmed control line", "{{- if .Values.on }}\na: b\n{{- end }}\n", True, (1, 1)),
    ("include helper", '  labels: {{ include "chart.labels" . | nindent 4 }}\n', True, (1, 11)),
    ("whole-line comment", "# {{ .Values.name }}\na: b\n", True, None),
    ("trailing comment", "a: b # {{ .Values.name }}\n", True, None),
    ("hash inside a word is not a comment", "a: b#{{ .Values.x }}\n", True, (1, 6)),
    ("argo placeholder is not helm", 'args: ["{{inputs.parameters.message}}"]\n', True, None),
    ("prometheus template is not helm", 'summary: "{{ $labels.instance }} {{ .Labels.x }}"\n', True, None),
    ("any braces when the document failed", "name: {{ name }}\n", False, (1, 7)),
    ("any braces skip comments too", "# {{ x }}\nname: {{ y }}\n", False, (2, 7)),
]


@pytest.mark.parametrize(("case", "text", "helm_only", "expected"), TEMPLATES, ids=[c[0] for c in TEMPLATES])
def test_template_leftover(case: str, text: str, helm_only: bool, expected: tuple[int, int] | None) -> None:
    found = yamlguard.template_leftover(text, helm_only=helm_only)
    assert (found[:2] if found else None) == expected
    if found:
        assert found[2].startswith("{{")


def test_graphs_are_kept_for_the_last_texts_within_a_count_and_a_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(yamlguard, "_NODES", OrderedDict())
    monkeypatch.setattr(yamlguard, "_nodes_text", 0)
    texts = [f"a: {i}\n" for i in range(yamlguard._NODES_KEPT + 1)]
    for text in texts:
        yamlguard.compose(text)
    assert yamlguard.kept(texts[0]) is None  # the oldest went
    assert all(yamlguard.kept(text) is not None for text in texts[1:])
    monkeypatch.setattr(yamlguard, "_NODES_TEXT_KEPT", 40)
    long = "b: " + "x" * 60 + "\n"
    yamlguard.compose(long)
    assert list(yamlguard._NODES) == [long]  # past the length, only the latest is kept, whatever its size
    assert yamlguard._nodes_text == len(long)
    yamlguard.compose("c: 1\n")
    assert list(yamlguard._NODES) == ["c: 1\n"]


def test_template_leftover_positions_are_in_the_file() -> None:
    found = yamlguard.template_leftover("a: 1\nb: '{{ .Chart.Name }}'\n", line=40, helm_only=True)
    assert found == (41, 5, "{{ .Chart.Name }}")

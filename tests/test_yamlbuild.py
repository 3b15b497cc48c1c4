"""The quick walk (kubegap.yamlbuild) against the careful path: the same data or the same error, always."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegap import yamlbuild, yamlguard

# Scalars whose reading depends on YAML 1.1 resolution, explicit tags, ranges and key equality.
SCALARS = [
    "a", "name", "0755", "0x1F", "0b101", "1_000", "+12", "-0", "00", "09", "1:30", "190:20:30.15", ".inf",
    "-.Inf", ".nan", "1e3", "1.5", "6.8523015e+5", "685.230_15e+03", "0.", "yes", "No", "ON", "off", "y",
    "n", "~", "null", "NULL", "True", "FALSE", "''", '""', "'1'", '"true"', "=", "2024-01-01",
    "2024-01-01T10:00:00Z", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
    "999999999999999999", "1000000000000000000", "1" * 401, "!!str 1", "!!int '12'", "!!float 1",
    "!!null x", "!!bool yes", "!!bool maybe", "!!float abc", "!!int abc", "!!int 1e3", "! 12",
    "!<tag:yaml.org,2002:str> 5", "!!binary aGk=", "!Ref x", "\u00b2", "!!int \u0663", "&s 5", "*s",
    "'a && b'", "'*.py'", "&m {k: 1}", "*m", "&q [1, *s]", "*q",
]  # fmt: skip
KEYS = [
    "a",
    "b",
    "1",
    "0x1",
    "true",
    "yes",
    "1.0",
    "~",
    "null",
    "<<",
    "=",
    "'a'",
    "!!value a",
    "!!str 1",
    "*s",
]
DOCUMENTS = [
    "a: 1\na: 2\n",
    "1: a\ntrue: b\n",
    "1.0: x\n1: y\n",
    ".nan: a\n.nan: b\n",
    "~: a\nnull: b\n",
    "'a': 1\n\"a\": 2\n",
    "- a\n- b: 1\n  b: 2\n",
    "? [a]\n: 1\n",
    "? {a: 1}\n: 1\n",
    "x: !!map x\n",
    "x: !!seq x\n",
    "x: !!str {a: 1}\n",
    "- !!map {}\n- !!seq []\n",
    "!!omap [a: 1]\n",
    "!!set {a}\n",
    "m: {<<: {a: 1}, b: 2}\n",
    "m: {<<: [{a: 1}, {b: 2}], a: 3}\n",
    "<<: 1\n",
    "a: b\n c: d\n",
    "a: !!python/tuple [1]\n",
    "a: &x {k: 1}\nb: *x\n",
    "a: &x [1]\nb: *x\n",
    "a: &x 1\nb: *x\n",
    "a: &x {k: 1}\nb: {<<: *x, j: 2}\n",
    "a: &x [*x]\n",
    "cmd: make && make install\nschedule: '*/5 * * * *'\n",
    "a: &x [[[[[[[[[[1]]]]]]]]]]\nb: [*x, *x, *x]\n",
    "x: '&*'\nd: " + "[" * 101 + "]" * 101 + "\n",
    "x: '&*'\nd: " + "{a: " * 101 + "}" * 101 + "\n",
]


def outcome(text: str) -> tuple[Any, ...]:
    """What `load` makes of a text: its data (repr keeps 1, 1.0 and True apart) or its error."""
    try:
        return ("data", repr(yamlguard.load(text, line=3)))
    except yamlguard.LoadError as exc:
        return ("error", exc.rule, exc.message, exc.line, exc.column)


def careful(monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[Any, ...]:
    def unsure(*_: object) -> Any:
        raise yamlbuild.Unsure

    with monkeypatch.context() as patch:
        patch.setattr(yamlbuild, "build", unsure)
        return outcome(text)


def render(value: Any, indent: int = 0) -> str:
    """Block YAML for nested ("map", pairs) / ("seq", items) / scalar-text values."""
    pad = " " * indent
    if isinstance(value, str):
        return value
    kind, parts = value
    if not parts:
        return "{}" if kind == "map" else "[]"
    lines = []
    for part in parts:
        key, item = part if kind == "map" else ("-", part)
        head = f"{pad}{key}:" if kind == "map" else f"{pad}-"
        inline = isinstance(item, str) or not item[1]  # a scalar or an empty collection
        lines.append(f"{head} {render(item)}" if inline else f"{head}\n{render(item, indent + 2)}")
    return "\n".join(lines)


def render_flow(value: Any) -> str:
    """Flow YAML for the same values."""
    if isinstance(value, str):
        return value
    kind, parts = value
    if kind == "seq":
        return "[" + ", ".join(render_flow(item) for item in parts) + "]"
    return "{" + ", ".join(f"{key}: {render_flow(item)}" for key, item in parts) + "}"


def trees(scalars: list[str], keys: list[str], unique: bool) -> st.SearchStrategy[Any]:
    """Nested mappings and sequences; with `unique`, no mapping repeats a key."""

    def mapping(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        pairs = st.lists(
            st.tuples(st.sampled_from(keys), inner),
            max_size=4,
            unique_by=(lambda p: p[0]) if unique else None,
        )
        return st.tuples(st.just("map"), pairs)

    return st.recursive(
        st.sampled_from(scalars),
        lambda inner: mapping(inner) | st.tuples(st.just("seq"), st.lists(inner, max_size=4)),
        max_leaves=12,
    )


def documents() -> st.SearchStrategy[Any]:
    """Hostile trees (most fail to load), and trees of scalars and keys that load on their own."""
    loadable = [s for s in SCALARS if "*" not in s and "!" not in s and len(s) < 100]
    distinct = ["a", "b", "1", "~", "'c'", "off"]  # keys of different values (1 == True in a dict)
    return st.one_of(
        *(
            st.tuples(
                st.just("map"),
                st.lists(
                    st.tuples(st.sampled_from(keys), trees(scalars, keys, unique)),
                    min_size=1,
                    max_size=5,
                    unique_by=(lambda p: p[0]) if unique else None,
                ),
            )
            for scalars, keys, unique in ((SCALARS, KEYS, False), (loadable, distinct, True))
        )
    )


@pytest.mark.parametrize("text", [f"k: {s}\n" for s in SCALARS] + [f"{k}: 1\n" for k in KEYS] + DOCUMENTS)
def test_quick_and_careful_agree_on_each_case(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert outcome(text) == careful(monkeypatch, text)


@settings(max_examples=200, deadline=None, database=None)
@given(documents())
def test_quick_and_careful_agree_on_generated_trees(tree: Any) -> None:
    for text in (render(tree) + "\n", render_flow(tree) + "\n"):
        with pytest.MonkeyPatch.context() as monkeypatch:
            assert outcome(text) == careful(monkeypatch, text), text


@pytest.mark.parametrize("extra", ["", "cmd: make && make install\nschedule: '*/5 * * * *'\n"])
def test_a_plain_manifest_takes_the_quick_walk(extra: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Guards the tests above: if the quick walk gave up on ordinary documents they would compare nothing.
    def no_careful_path(*_: object) -> None:
        raise AssertionError("the careful path ran")

    monkeypatch.setattr(yamlguard, "_check_tree", no_careful_path)
    monkeypatch.setattr(yamlguard, "_check_graph", no_careful_path)
    text = "a: [1, -2, 0.5, on, ~, x]\nb: {c: 'q', d: [[{}]]}\nports: [{containerPort: 8080}]\n" + extra
    expected = {
        "a": [1, -2, 0.5, True, None, "x"],
        "b": {"c": "q", "d": [[{}]]},
        "ports": [{"containerPort": 8080}],
    }
    assert yamlguard.load(text) == {**expected, **yaml.safe_load(extra or "{}")}


def test_an_aliased_collection_is_one_shared_object_as_before() -> None:
    data = yamlguard.load("a: &x {k: [1]}\nb: *x\n")
    assert data == {"a": {"k": [1]}, "b": {"k": [1]}} and data["a"] is data["b"]


@pytest.mark.parametrize("pure", [False, True] if yaml.__with_libyaml__ else [True])
def test_the_resolver_shortcut_gives_the_resolver_answers(pure: bool) -> None:
    loader_class = yamlguard.PURE_LOADER if pure else yamlguard.FAST_LOADER
    loader = loader_class("")
    try:
        reference = yaml.resolver.BaseResolver.resolve
        values = SCALARS + KEYS + ["", "<<", "~", "-", "+1", ".5", "é", "-a", "x" * 100, "1" * 100]
        for value in values + values:  # the second time from the table of known answers
            for implicit in ((True, False), (False, True), (False, False)):
                assert loader.resolve(yaml.ScalarNode, value, implicit) == reference(
                    loader, yaml.ScalarNode, value, implicit
                ), (value, implicit)
        for kind in (yaml.SequenceNode, yaml.MappingNode):
            assert loader.resolve(kind, None, True) == reference(loader, kind, None, True)
    finally:
        loader.dispose()


def test_the_resolver_shortcut_refuses_a_loader_with_path_resolvers() -> None:
    # Path resolvers answer by position in the document, which the shortcut does not track.
    class Pathed(yaml.SafeLoader):
        pass

    Pathed.add_path_resolver("tag:yaml.org,2002:str", ["spec"], dict)
    with pytest.raises(AssertionError, match="path or wildcard"):
        yamlbuild.resolver_hooks(Pathed, dict(Pathed.yaml_implicit_resolvers))

from __future__ import annotations

import pytest

from kubegap.fieldpath import FieldPath, parse, render

CASES: list[tuple[FieldPath, str]] = [
    ((), ""),
    (("spec",), "spec"),
    (("spec", "containers", 0, "env", 3), "spec.containers[0].env[3]"),
    ((0,), "[0]"),
    (("items", 2, "spec"), "items[2].spec"),
    (("metadata", "annotations", "kubegap.dev/step-time"), "metadata.annotations['kubegap.dev/step-time']"),
    (("spec", "pytorchReplicaSpecs", "Worker"), "spec.pytorchReplicaSpecs.Worker"),
    (("a-b", "$x", "_y"), "a-b.$x._y"),
    (("resources", "limits", "nvidia.com/gpu"), "resources.limits['nvidia.com/gpu']"),
    (("a b",), "['a b']"),
    (("it's",), "['it\\'s']"),
    (("back\\slash",), "['back\\\\slash']"),
    (("-leading",), "['-leading']"),
    (("1st",), "['1st']"),
    (("",), "['']"),
    (("x", "]['"), "x['][\\'']"),
]


@pytest.mark.parametrize(("path", "text"), CASES)
def test_render(path: FieldPath, text: str) -> None:
    assert render(path) == text


@pytest.mark.parametrize(("path", "text"), CASES)
def test_parse_inverts_render(path: FieldPath, text: str) -> None:
    assert parse(text) == path


@pytest.mark.parametrize("text", ["a..b", "a[x]", "[0", "a.", "a[-1]", "a['open", "a b", "a[0]]"])
def test_parse_rejects_text_render_cannot_produce(text: str) -> None:
    with pytest.raises(ValueError, match="not a field path"):
        parse(text)


def test_parse_gives_the_same_path_again_and_for_paths_too_long_to_keep() -> None:
    long = ("spec", "x" * 600, 3)  # longer than the paths parse keeps
    for path in (("spec", "containers", 0, "env", 2), long):
        assert parse(render(path)) == parse(render(path)) == path
    for _ in range(2):  # a refusal is not remembered as an answer
        with pytest.raises(ValueError, match="not a field path"):
            parse("a..b")

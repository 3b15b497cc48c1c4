from __future__ import annotations

from typing import Any

import pytest

from kubegap.facts import argv, env, knobs, readings

CATALOGUE = knobs.load()
BASE = ("spec", "containers", 0)


def knob(unit: str, **extra: Any) -> knobs.Knob:
    fields: dict[str, Any] = {
        "setting": "collectiveTimeout",
        "framework": None,
        "flags": frozenset({"--t"}),
        "overrides": (),
        "env": frozenset(),
        "annotation": None,
        "unit": unit,
        "disabled_by": frozenset(),
        "only_if": None,
    }
    fields.update(extra)
    return knobs.Knob(**fields)


@pytest.mark.parametrize(
    ("unit", "text", "value"),
    [
        ("steps", "500", 500.0),
        ("steps", " 500 ", 500.0),
        ("s", "1800", 1800.0),
        ("min", "20", 1200.0),
        ("h", "1", 3600.0),
        ("duration", "10m", 600.0),
        ("hms", "00:10:00", 600.0),
        ("duration-or-seconds", "600", 600.0),
    ],
)
def test_convert(unit: str, text: str, value: float) -> None:
    assert readings.convert(knob(unit), text) == value


@pytest.mark.parametrize(
    ("unit", "text"),
    [
        ("steps", "0"),
        ("steps", "-5"),
        ("steps", "1.5"),
        ("steps", "5e2"),
        ("steps", "epoch"),
        ("s", "x"),
        ("min", "-1"),
    ],
)
def test_convert_rejects(unit: str, text: str) -> None:
    with pytest.raises(ValueError):
        readings.convert(knob(unit), text)


def read(
    container: dict[str, Any], catalogue: knobs.Catalogue = CATALOGUE
) -> tuple[list[readings.Reading], list[readings.Unreadable]]:
    cmd = argv.tokenize(container)
    environment = env.resolve(container, BASE, "ns", {}, cmd.env)
    return readings.container_readings(catalogue, cmd, environment, BASE)


def test_readings_carry_setting_value_source_and_absolute_path() -> None:
    found, unreadable = read({"args": ["--save-interval", "500", "--ddp_timeout=60", "--save", "/ckpt"]})
    assert unreadable == []
    assert sorted(found, key=lambda r: r.setting) == [
        readings.Reading("checkpointSteps", 500.0, "--save-interval 500 (Megatron-LM)", (*BASE, "args", 0)),
        readings.Reading("collectiveTimeout", 60.0, "--ddp_timeout 60 (HF Trainer)", (*BASE, "args", 2)),
    ]


def test_annotation_knobs_are_not_read_from_the_command_line() -> None:
    found, _ = read({"args": ["kubegap.dev/step-time=1s"], "env": [{"name": "X", "value": "1"}]})
    assert found == []


def test_unreadable_values_keep_source_and_reason() -> None:
    _, unreadable = read({"args": ["--ddp_timeout", "soon"]})
    assert [(u.source, u.path) for u in unreadable] == [
        ("--ddp_timeout soon (HF Trainer)", (*BASE, "args", 0))
    ]
    assert "soon" in unreadable[0].reason


@pytest.mark.parametrize(
    ("value", "env_entries", "expected"),
    [
        ("$T", [{"name": "T", "value": "60"}], 60.0),
        ("${T}", [{"name": "T", "value": "61"}], 61.0),
        ("$(T)", [{"name": "T", "value": "62"}], 62.0),
        ("$T", [], None),  # undefined: unreadable, never a guess
        ("x$T", [{"name": "T", "value": "63"}], None),  # only a whole-value reference is expanded
        ("$T$U", [{"name": "T", "value": "6"}, {"name": "U", "value": "4"}], None),
        ("${T:-900}", [], 900.0),  # the shell's default stands in for an unknown variable
        ("${T-900}", [], 900.0),
        ("${T:-900}", [{"name": "T", "value": "64"}], 64.0),  # a known value wins
        ("${T:-}", [], None),  # an empty default is no value
    ],
)
def test_variable_expansion(value: str, env_entries: list[dict[str, Any]], expected: float | None) -> None:
    found, unreadable = read({"args": ["--ddp_timeout", value], "env": env_entries})
    if expected is None:
        assert found == []
        assert len(unreadable) == 1
    else:
        assert [r.value for r in found] == [expected]


def test_only_if_values_compare_case_insensitively() -> None:
    head: dict[str, Any] = {"apiVersion": "kubegap.dev/v1alpha1", "kind": "KnobCatalogue"}
    custom = knobs.merge(
        [
            (
                "mine",
                {
                    **head,
                    "knobs": [
                        {
                            "setting": "checkpointSteps",
                            "flags": ["--every"],
                            "unit": "steps",
                            "onlyIf": {"flags": ["--mode"], "values": ["Steps"]},
                        }
                    ],
                },
            )
        ]
    )
    assert [r.value for r in read({"args": ["--mode", "STEPS", "--every", "5"]}, custom)[0]] == [5.0]
    assert read({"args": ["--every", "5"]}, custom)[0] == []  # orUnset defaults to false


@pytest.mark.parametrize(
    ("template", "workload", "expected"),
    [
        (
            {"annotations": {"a": "1s"}},
            {"annotations": {"a": "2s"}},
            ("1s", ("spec", "template", "metadata", "annotations", "a")),
        ),
        ({}, {"annotations": {"a": "2s"}}, ("2s", ("metadata", "annotations", "a"))),
        ({"annotations": {"b": "1s"}}, {"annotations": {"a": 5}}, ("5", ("metadata", "annotations", "a"))),
        ({"annotations": "x"}, {"annotations": None}, None),
        ({}, {}, None),
    ],
)
def test_declaration_template_first(
    template: dict[str, Any], workload: dict[str, Any], expected: tuple[str, tuple[Any, ...]] | None
) -> None:
    found = readings.declaration("a", template, ("spec", "template"), workload)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert (found.text, found.path) == expected


def test_the_knobs_looked_for_are_those_present_in_catalogue_order() -> None:
    """`Catalogue.valued` finds by index what testing every knob with `present` finds, in the same order."""
    flags = sorted({f for k in CATALOGUE.knobs for f in k.flags})
    names = sorted({n for k in CATALOGUE.knobs for n in k.env})
    cases = [
        ([], []),
        (flags[::3], []),
        ([], names[::2]),
        (flags[1::4], names[1::3]),
        (flags, names),
        (["--not-a-knob"], ["NOT_A_KNOB"]),
    ]
    for index, (flag_words, env_names) in enumerate(cases):
        words = [w for flag in flag_words for w in (flag, "1")] + (["a.b.c=1"] if index % 2 else [])
        cmd = argv.tokenize({"command": ["train"], "args": words})
        environment = env.resolve({"env": [{"name": n, "value": "1"} for n in env_names]}, BASE, "ns", {})
        found = 0
        for argv_only in (False, True):
            expected = [
                k
                for k in CATALOGUE.knobs
                if not k.annotation and not k.textual and readings.present(k, cmd, environment, argv_only)
            ]
            names_seen = () if argv_only else environment.variables
            assert CATALOGUE.valued(cmd.flags, names_seen, bool(cmd.overrides)) == expected
            found += len(expected)
        assert found or index in (0, 5)  # the cases find knobs where they should

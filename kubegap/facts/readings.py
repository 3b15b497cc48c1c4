"""Knob readings: what a container's command line, environment and annotations say about timeouts and
checkpoints, in seconds or steps, each with the source and field it came from."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubegap import durations, raw
from kubegap.facts import argv
from kubegap.facts.env import SOURCED, Environment
from kubegap.facts.knobs import Catalogue, Framework, Knob
from kubegap.fieldpath import FieldPath

_VAR_REF: Final = re.compile(
    r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\(([A-Za-z_][A-Za-z0-9_]*)\)|([A-Za-z_][A-Za-z0-9_]*))\Z"
)


@dataclass(slots=True, unsafe_hash=True, init=False)
class Reading:
    setting: str
    value: float | None  # seconds, or steps for checkpointSteps; None for checkpointDisabled/Unbounded
    source: str  # e.g. "--save-interval 500 (Megatron-LM)"
    path: FieldPath  # absolute

    # written out, for mypyc to compile (kubegap.records)
    def __init__(self, setting: str, value: float | None, source: str, path: FieldPath) -> None:
        self.setting, self.value, self.source, self.path = setting, value, source, path


@dataclass(slots=True, unsafe_hash=True)
class Unreadable:
    """A knob whose value is there but cannot be read (a Secret, a variable, a typo)."""

    source: str
    reason: str
    path: FieldPath
    setting: str = ""


def _label(text: str, knob: Knob) -> str:
    return f"{text} ({knob.framework})" if knob.framework else text


def expand(value: str, env: Environment) -> str | None:
    """`--save-interval $SAVE` reads the variable when its value is known; None when it is not."""
    match = _VAR_REF.match(value)
    if not match:
        return value
    braced, default, paren, bare = match.groups()
    found = env.value(braced or paren or bare)
    # `${VAR:-default}`: the shell's default stands in when the variable's value is not known
    return default if found is None and default is not None else found


def convert(knob: Knob, text: str) -> float:
    """The knob's value in seconds (or steps); raises ValueError."""
    if knob.unit == "steps":
        steps = int(text.strip())
        if steps <= 0:
            raise ValueError(f"{text!r} is not a positive number of steps")
        return float(steps)
    return durations.parse_in_unit(text, knob.unit or "duration")


def present(knob: Knob, cmd: argv.CommandLine, env: Environment, argv_only: bool = False) -> bool:
    """Whether some form of the knob may be on the command line or in the environment. Most knobs are
    absent from most containers: the knob's few names are looked up before `raw_values` reads anything
    (`isdisjoint` against a mapping walks all of the mapping's keys: every variable, for each knob)."""
    flags, variables = cmd.flags, env.variables
    if any(flag in flags for flag in knob.flags) or (knob.overrides and cmd.overrides):
        return True
    return not argv_only and any(name in variables for name in knob.env)


def raw_values(
    knob: Knob, cmd: argv.CommandLine, env: Environment, base: FieldPath, argv_only: bool
) -> Iterator[tuple[str, str | None, FieldPath]]:
    """(what was written, its value, path) for each form of the knob present; the last occurrence wins."""
    if knob.flags:
        found = cmd.flag_values(knob.flags)
        if found:
            flag, value, token = found[-1]
            yield (f"{flag} {value}" if value is not None else flag), value, (*base, *token.path)
    if knob.overrides:
        found_overrides = [o for o in cmd.overrides if knob.matches_override(o[0])]
        if found_overrides:
            key, value, token = found_overrides[-1]
            yield f"{key}={value}", value, (*base, *token.path)
    variables = env.variables
    # a knob names one to three variables: each looked up, not the whole environment walked
    for name in sorted([n for n in knob.env if n in variables]) if not argv_only else ():
        var = variables[name]
        if var.value is not None:  # an unseen value is listed by the environment
            yield f"{name}={var.value} ({var.source})", var.value, var.path


def _applies(knob: Knob, cmd: argv.CommandLine) -> bool:
    if knob.only_if is None:
        return True
    found = cmd.flag_values(knob.only_if.flags)
    if not found:
        return knob.only_if.or_unset
    value = found[-1][1]
    return value is not None and value.lower() in knob.only_if.values


def container_readings(
    catalogue: Catalogue, cmd: argv.CommandLine, env: Environment, base: FieldPath, argv_only: bool = False
) -> tuple[list[Reading], list[Unreadable]]:
    """Knob readings of one container; `argv_only` leaves out environment knobs (an MPI launcher's own
    environment reaches the ranks only through `-x`, which the ranks' environment already holds)."""
    readings: list[Reading] = []
    unreadable: list[Unreadable] = []
    for knob in catalogue.valued(cmd.flags, () if argv_only else env.variables, bool(cmd.overrides)):
        if not _applies(knob, cmd):
            continue
        for written, text, path in raw_values(knob, cmd, env, base, argv_only):
            if knob.requires and not cmd.flag_values(knob.requires):
                # Megatron-LM saves only `if args.save and args.save_interval` (megatron/training/training.py)
                missing = " or ".join(sorted(knob.requires))
                readings.append(
                    Reading("checkpointDisabled", None, _label(f"{written} without {missing}", knob), path)
                )
                continue
            value = expand(text, env) if text is not None else None
            if knob.setting in ("checkpointDisabled", "checkpointUnbounded"):
                if value is not None and value.strip().lower() in knob.disabled_by | knob.unbounded_by:
                    readings.append(Reading(knob.setting, None, _label(written, knob), path))
                continue
            if value is None:
                unreadable.append(
                    Unreadable(_label(written, knob), "its value cannot be seen", path, knob.setting)
                )
                continue
            try:
                readings.append(Reading(knob.setting, convert(knob, value), _label(written, knob), path))
            except ValueError as err:
                unreadable.append(Unreadable(_label(written, knob), str(err), path, knob.setting))
    return readings, unreadable


def hidden(
    catalogue: Catalogue,
    setting: str,
    env: Environment,
    unreadable: Sequence[Unreadable],
    recognised: Framework | None,
) -> bool:
    """A knob of `setting` may be set where kubegap cannot see it: a flag whose value is a variable it
    cannot read, a variable from a Secret or an absent ConfigMap, or an unreadable `envFrom` source that
    could carry a variable the recognised framework reads. A default must not stand in for such a value."""
    if any(u.setting == setting for u in unreadable):
        return True
    env_knobs = [k for k in catalogue.by_setting(setting) if k.env]
    for knob in env_knobs:
        if any(name in env.variables and env.variables[name].value is None for name in knob.env):
            return True
    unseen_sources = any(u.startswith(("envFrom ", SOURCED)) for u in env.unresolved)
    readers = {k.framework for k in env_knobs}
    return unseen_sources and (None in readers or (recognised is not None and recognised.name in readers))


def framework(catalogue: Catalogue, cmd: argv.CommandLine) -> Framework | None:
    return catalogue.framework_of([t.text for t in cmd.tokens])


@dataclass(slots=True, unsafe_hash=True, init=False)
class Declaration:
    annotation: str
    text: str
    path: FieldPath

    def __init__(self, annotation: str, text: str, path: FieldPath) -> None:  # (kubegap.records)
        self.annotation, self.text, self.path = annotation, text, path


def declaration(
    annotation: str, template: Mapping[str, Any], template_path: FieldPath, workload: Mapping[str, Any]
) -> Declaration | None:
    """The pod template's annotation, else the workload's (RULES.md §1 "declarations")."""
    for metadata, base in ((template, template_path), (workload, ())):
        annotations = raw.mapping(raw.mapping(metadata).get("annotations"))  # a dict is tested exactly first
        if annotation in annotations:
            return Declaration(
                annotation, str(annotations[annotation]), (*base, "metadata", "annotations", annotation)
            )
    return None


def declared(catalogue: Catalogue, setting: str) -> Sequence[Knob]:
    return [k for k in catalogue.by_setting(setting) if k.annotation]

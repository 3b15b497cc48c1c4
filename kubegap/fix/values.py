"""Writing a value where the finding points: a flag or override on the command line, an env entry, an
annotation, or a TODO annotation for a person to fill in."""

from __future__ import annotations

import math

from kubegap import durations, raw
from kubegap.facts import argv, readings
from kubegap.fix import edits, scripts
from kubegap.fix.nodes import Unsafe
from kubegap.fix.target import FieldPath, Patch, Target, declared, in_unit, knob_at
from kubegap.workloads import Container, PodTemplate

COLLECTIVE_TIMEOUT = "kubegap.dev/collective-timeout"
STEP_TIME = "kubegap.dev/step-time"
TODO = "TODO"


def write_value(target: Target, container: Container, name: str, element: FieldPath, value: str) -> Patch:
    """Set the value of `name` (a flag or override) written in the command-line element `element`."""
    relative = element[len(container.path) :]
    written = raw.dig(container.spec, relative)
    where = target.at(element)
    if written == name and isinstance(relative[-1], int):  # `--flag`, `"value"`: two list items
        following = (*relative[:-1], relative[-1] + 1)
        if raw.dig(container.spec, following) is None and relative[0] == "command":
            following = ("args", 0)
        edit = edits.set_scalar(target.tree, target.at((*container.path, *following)), value)
    elif isinstance(written, str) and written.startswith(name + "="):
        edit = edits.set_scalar(target.tree, where, f"{name}={value}")
    else:
        edit = scripts.replace_value(target.tree, where, name, value)
    return Patch((edit,), f"set {name} to {value}")


def annotation_todo(target: Target, template: PodTemplate, path: FieldPath, name: str, why: str) -> Patch:
    """`name: TODO` at `path`, unless the template's pods already see a (wrong) value for it."""
    if declared(target, template, name):
        raise Unsafe(f"{name} is declared but cannot be read: correct its value")
    edit = edits.insert_key(target.tree, target.at(path), name, TODO, comment=f"kubegap fix: {why}")
    return Patch((edit,), f"added {name}: {TODO} for you to fill in with {why}", todo=(*path, name))


def lower(target: Target, settings: tuple[str, ...], bound: float, annotation: str) -> Patch:
    """Lower the value the finding points at to `bound`, in the unit of the knob that holds it."""
    path = target.path
    if path[-1] == annotation:
        edit = edits.set_scalar(target.tree, target.at(path), durations.format_seconds(bound))
        return Patch((edit,), f"set {annotation} to {durations.format_seconds(bound)}")
    template, container = target.container()
    relative = path[len(container.path) :]
    if relative[:1] == ("env",) and len(relative) == 2:
        return _lower_variable(target, container, settings, bound)
    cmd = argv.tokenize(container.spec)
    if any(a.path == relative for a in (*cmd.env, *cmd.forwarded)):
        return _lower_variable(target, container, settings, bound, cmd)
    use = knob_at(target, container, settings)
    if use.knob.unit != "steps":
        return write_value(target, container, use.name, use.element, in_unit(bound, use.knob.unit))
    workload_metadata = raw.mapping(target.obj.get("metadata"))
    found = readings.declaration(STEP_TIME, template.metadata, template.path, workload_metadata)
    if found is None:
        raise Unsafe("the step time is not declared")
    step = readings.convert(target.catalogue.by_setting("stepTime")[0], found.text)
    steps = math.floor(bound / step)
    if steps < 1:
        raise Unsafe(f"one step ({found.text}) takes longer than {durations.format_seconds(bound)}")
    return write_value(target, container, use.name, use.element, str(steps))


def _lower_variable(
    target: Target,
    container: Container,
    settings: tuple[str, ...],
    bound: float,
    cmd: argv.CommandLine | None = None,
) -> Patch:
    """An environment knob (`DEEPSPEED_TIMEOUT`) set by an env entry, or by `export`/`-x` in a script."""
    relative = target.path[len(container.path) :]
    if cmd is None:
        name = raw.dig(container.spec, (*relative, "name"))
    else:
        name = [a for a in (*cmd.env, *cmd.forwarded) if a.path == relative][-1].name
    knob = next((k for k in target.catalogue.knobs if k.setting in settings and name in k.env), None)
    if knob is None:
        raise Unsafe(f"{name} is not a knob kubegap knows")
    value = in_unit(bound, knob.unit)
    if cmd is None:
        edit = edits.set_scalar(target.tree, target.at((*target.path, "value")), value)
    elif raw.dig(container.spec, relative) == "-x" and isinstance(relative[-1], int):
        following = target.at((*container.path, *relative[:-1], relative[-1] + 1))
        edit = edits.set_scalar(target.tree, following, f"{name}={value}")
    else:
        edit = scripts.replace_value(target.tree, target.at(target.path), str(name), value)
    return Patch((edit,), f"set {name} to {value}")

"""Fixes of durations: the collective timeout (nccl-timeout) and the checkpoint interval
(checkpoint-interval)."""

from __future__ import annotations

from dataclasses import dataclass

from kubegap import durations, raw
from kubegap.facts import argv, readings
from kubegap.facts.knobs import Framework, Knob
from kubegap.fix import edits, scripts
from kubegap.fix.nodes import Unsafe
from kubegap.fix.target import Patch, Target, annotations_of, in_unit
from kubegap.fix.values import COLLECTIVE_TIMEOUT, STEP_TIME, annotation_todo, lower
from kubegap.kinds import workload_of
from kubegap.workloads import Container


def _recognised(cmd: argv.CommandLine, tokens: frozenset[str], flags: frozenset[str]) -> argv.Token | None:
    for token in cmd.tokens:
        word = token.text.partition("=")[0] if token.text.startswith("-") else token.text
        if word in flags or token.text in tokens or token.text.rsplit("/", 1)[-1] in tokens:
            return token
    return None


def _preferred(flags: frozenset[str], cmd: argv.CommandLine) -> str:
    """The spelling (`--ddp_timeout` or `--ddp-timeout`) that matches the flags the command already uses."""
    underscores = any("_" in t.text for t in cmd.tokens if t.text.startswith("--"))
    return sorted(flags, key=lambda f: (("_" in f) != underscores, f))[0]


# Units kubegap writes as a plain number. A duration-typed knob (Lightning's
# `--trainer.strategy.init_args.timeout`) takes a format and a strategy class kubegap cannot check, so it is
# declared with a TODO instead.
_NUMERIC_UNITS = ("min", "s")


@dataclass(frozen=True, slots=True)
class _Where:
    """Where a collective timeout can be written: the container, its command line, framework and knob."""

    container: Container
    cmd: argv.CommandLine
    framework: Framework
    knob: Knob


def _where(target: Target, container: Container) -> _Where | None:
    """The container's own framework knob; else, for a rank started by mpirun, the flag on the launcher's
    command line (mpirun hands the ranks the flags of the program it starts, RULES.md §1)."""
    own = argv.tokenize(container.spec)
    candidates = [(container, own)]
    workload = workload_of(target.obj)
    for template in workload.templates if workload else ():
        candidates += [(c, cmd) for c in template.containers if (cmd := argv.tokenize(c.spec)).launches_mpi]
    for candidate, cmd in candidates:
        framework = readings.framework(target.catalogue, cmd)
        knobs = [
            k
            for k in target.catalogue.by_setting("collectiveTimeout")
            if framework and k.framework == framework.name and k.unit in _NUMERIC_UNITS
        ]
        for knob in knobs:
            if framework and (knob.flags or (knob.env and candidate is container)):
                return _Where(candidate, cmd, framework, knob)
    return None


def timeout_declared(target: Target) -> Patch:
    if target.finding.unresolved:
        raise Unsafe("a value kubegap cannot see may set it: " + "; ".join(target.finding.unresolved))
    return _set_timeout(target)


def _set_timeout(target: Target) -> Patch:
    """Write a collective timeout of at most the policy's bound where the framework reads it: the
    framework's default when that is shorter (writing it changes nothing but makes it explicit), else the
    bound; with no knob kubegap can write, a TODO declaration for the value set in code."""
    template, container = target.container()
    bound = target.params["maxCollectiveTimeout"]
    where = _where(target, container)
    if where is None:
        why = f"the collective timeout your code sets, at most {durations.format_seconds(bound)}"
        return annotation_todo(target, template, annotations_of(template), COLLECTIVE_TIMEOUT, why)
    framework, knob = where.framework, where.knob
    value = in_unit(min(bound, framework.default_timeout or bound), knob.unit)
    if knob.flags:
        token = _recognised(where.cmd, framework.tokens, framework.flags)
        assert token is not None  # the framework was recognised by one of them
        patch = _add_flag(target, where.container, token, _preferred(knob.flags, where.cmd), value)
        if where.container is container:
            return patch
        via = f" of container {where.container.name}, whose mpirun passes it to the ranks"
        return Patch(patch.edits, patch.summary + via)
    name = sorted(knob.env)[0]
    item = {"name": name, "value": value}
    edit = edits.append_items(target.tree, target.at((*container.path, "env")), [item])
    return Patch((edit,), f"added env {name}={value} ({framework.name})")


def _add_flag(target: Target, container: Container, token: argv.Token, flag: str, value: str) -> Patch:
    element = (*container.path, *token.path)
    if raw.dig(container.spec, token.path) != token.text:  # the launcher is inside a script
        word = token.text.partition("=")[0].rsplit("/", 1)[-1]
        edit = scripts.append_to_statement(target.tree, target.at(element), word, f"{flag} {value}")
        return Patch((edit,), f"added {flag} {value} to the script")
    key = "args" if isinstance(container.spec.get("args"), list) else "command"
    edit = edits.append_items(target.tree, target.at((*container.path, key)), [flag, value])
    return Patch((edit,), f"added {flag} {value} to {key}")


def timeout_bounded(target: Target) -> Patch:
    bound = target.params["maxCollectiveTimeout"]
    if _is_default(target):  # nothing is written: the framework's default is too long
        return _set_timeout(target)
    return lower(target, ("collectiveTimeout",), bound, COLLECTIVE_TIMEOUT)


def _is_default(target: Target) -> bool:
    """Whether the finding judges the framework's default: its path is the container itself."""
    workload = workload_of(target.obj)
    containers = [c for t in workload.templates for c in t.containers] if workload else []
    return any(target.path == c.path for c in containers)


def interval_bounded(target: Target) -> Patch:
    bound = target.params["maxCheckpointInterval"]
    return lower(target, ("checkpointInterval", "checkpointSteps"), bound, "kubegap.dev/checkpoint-interval")


def interval_declared(target: Target) -> Patch:
    if target.finding.unresolved:
        raise Unsafe("a value kubegap cannot see may set it: " + "; ".join(target.finding.unresolved))
    template, container = target.container()
    if target.path == container.path:
        raise Unsafe("no checkpoint knob is set: how often this trainer can save is for you to choose")
    bound = durations.format_seconds(target.params["maxCheckpointInterval"])
    why = (
        f"the measured time of one training step; steps between checkpoints times it must be {bound} or less"
    )
    return annotation_todo(target, template, ("metadata", "annotations"), STEP_TIME, why)


def checkpointing_enabled(target: Target) -> Patch:
    raise Unsafe("turning checkpointing on needs a place and an interval only you can choose")

"""Fixes of durations: the collective timeout (nccl-timeout) and the checkpoint interval
(checkpoint-interval)."""

from __future__ import annotations

from kubegap import argv, durations, raw, readings
from kubegap.fix import edits, scripts
from kubegap.fix.nodes import Unsafe
from kubegap.fix.target import Patch, Target, annotations_of, in_unit
from kubegap.fix.values import COLLECTIVE_TIMEOUT, STEP_TIME, annotation_todo, lower
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


def timeout_declared(target: Target) -> Patch:
    if target.finding.unresolved:
        raise Unsafe("a value kubegap cannot see may set it: " + "; ".join(target.finding.unresolved))
    template, container = target.container()
    cmd = argv.tokenize(container.spec)
    framework = readings.framework(target.catalogue, cmd)
    bound = target.params["maxCollectiveTimeout"]
    seconds = min(bound, framework.default_timeout or bound) if framework else bound
    knobs = [
        k
        for k in target.catalogue.by_setting("collectiveTimeout")
        if framework and k.framework == framework.name
    ]
    for knob in (k for k in knobs if k.unit in _NUMERIC_UNITS):
        if knob.flags and framework is not None:
            flag, value = _preferred(knob.flags, cmd), in_unit(seconds, knob.unit)
            token = _recognised(cmd, framework.tokens, framework.flags)
            assert token is not None  # the framework was recognised by one of them
            return _add_flag(target, container, token, flag, value)
        if knob.env:
            name, value = sorted(knob.env)[0], in_unit(seconds, knob.unit)
            item = {"name": name, "value": value}
            edit = edits.append_items(target.tree, target.at((*container.path, "env")), [item])
            return Patch((edit,), f"added env {name}={value} ({framework.name if framework else ''})")
    why = f"the collective timeout your code sets, at most {durations.format_seconds(bound)}"
    return annotation_todo(target, annotations_of(template), COLLECTIVE_TIMEOUT, why)


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
    return lower(target, ("collectiveTimeout",), bound, COLLECTIVE_TIMEOUT)


def interval_bounded(target: Target) -> Patch:
    bound = target.params["maxCheckpointInterval"]
    return lower(target, ("checkpointInterval", "checkpointSteps"), bound, "kubegap.dev/checkpoint-interval")


def interval_declared(target: Target) -> Patch:
    if target.finding.unresolved:
        raise Unsafe("a value kubegap cannot see may set it: " + "; ".join(target.finding.unresolved))
    _, container = target.container()
    if target.path == container.path:
        raise Unsafe("no checkpoint knob is set: how often this trainer can save is for you to choose")
    bound = durations.format_seconds(target.params["maxCheckpointInterval"])
    why = (
        f"the measured time of one training step; steps between checkpoints times it must be {bound} or less"
    )
    return annotation_todo(target, ("metadata", "annotations"), STEP_TIME, why)


def checkpointing_enabled(target: Target) -> Patch:
    raise Unsafe("turning checkpointing on needs a place and an interval only you can choose")

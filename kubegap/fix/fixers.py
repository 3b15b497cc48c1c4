"""One fix per (policy, rule): each reads the finding and the policy's parameters and returns a `Patch`,
or raises `Unsafe` saying why there is no safe fix. Nothing here guesses a value it cannot derive.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kubegap import argv, durations, raw, readings
from kubegap.fix import edits, scripts
from kubegap.fix.nodes import Unsafe
from kubegap.fix.target import (
    FieldPath,
    Patch,
    Target,
    annotations_of,
    declared_anywhere,
    in_unit,
    knob_at,
)
from kubegap.workloads import Container, kind_info

COLLECTIVE_TIMEOUT = "kubegap.dev/collective-timeout"
STEP_TIME = "kubegap.dev/step-time"
TODO = "TODO"
HEARTBEAT_FILE = "/tmp/kubegap-heartbeat"
# The value restart-budget's remediation names; the policy has no parameter for it.
RESTARTS = 3


def _write_value(target: Target, container: Container, name: str, element: FieldPath, value: str) -> Patch:
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


def _annotation_todo(target: Target, path: FieldPath, name: str, why: str) -> Patch:
    if declared_anywhere(target, name):
        raise Unsafe(f"{name} is declared but cannot be read: correct its value")
    edit = edits.insert_key(target.tree, target.at(path), name, TODO, comment=f"kubegap fix: {why}")
    return Patch((edit,), f"added {name}: {TODO} for you to fill in ({why})", todo=(*path, name))


# --- nccl-timeout ------------------------------------------------------------------------------------
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
    for knob in knobs:
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
    why = "the collective timeout your code sets (at most " + durations.format_seconds(bound) + ")"
    return _annotation_todo(target, annotations_of(template), COLLECTIVE_TIMEOUT, why)


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
    return _lower(target, ("collectiveTimeout",), bound, COLLECTIVE_TIMEOUT)


def _lower(target: Target, settings: tuple[str, ...], bound: float, annotation: str) -> Patch:
    path = target.path
    if path[-1] == annotation:
        edit = edits.set_scalar(target.tree, target.at(path), durations.format_seconds(bound))
        return Patch((edit,), f"set {annotation} to {durations.format_seconds(bound)}")
    template, container = target.container()
    if len(path) == len(container.path) + 2 and path[len(container.path)] == "env":
        knob = next((k for k in target.catalogue.knobs if k.setting in settings and k.env), None)
        name = raw.dig(container.spec, (*path[len(container.path) :], "name"))
        if knob is None or name not in knob.env:
            raise Unsafe("the variable is not a knob kubegap knows")
        value = in_unit(bound, knob.unit)
        edit = edits.set_scalar(target.tree, target.at((*path, "value")), value)
        return Patch((edit,), f"set {name} to {value}")
    use = knob_at(target, container, settings)
    if use.knob.unit == "steps":
        found = readings.declaration(
            STEP_TIME, template.metadata, template.path, raw.mapping(target.obj.get("metadata"))
        )
        if found is None:
            raise Unsafe("the step time is not declared")
        step = readings.convert(target.catalogue.by_setting("stepTime")[0], found.text)
        steps = math.floor(bound / step)
        if steps < 1:
            raise Unsafe(f"one step ({found.text}) takes longer than {durations.format_seconds(bound)}")
        return _write_value(target, container, use.name, use.element, str(steps))
    return _write_value(target, container, use.name, use.element, in_unit(bound, use.knob.unit))


# --- removing variables ------------------------------------------------------------------------------
def _remove_variable(target: Target, offending: Callable[[str, str | None], bool]) -> Patch:
    _, container = target.container()
    relative = target.path[len(container.path) :]
    if relative[:1] == ("envFrom",) or (
        relative[:1] == ("env",)
        and len(relative) == 2
        and "valueFrom" in raw.mapping(raw.dig(container.spec, relative))
    ):
        raise Unsafe("the value comes from a ConfigMap that other workloads may share: change it there")
    if relative[:1] == ("env",) and len(relative) == 2 and isinstance(index := relative[1], int):
        entry = raw.mapping(raw.dig(container.spec, relative))
        name = str(entry.get("name"))
        if not offending(name, None if entry.get("value") is None else str(entry.get("value"))):
            raise Unsafe(f"env {name} is not the offending variable")
        edit = edits.remove_items(target.tree, target.at((*container.path, "env")), index, index)
        return Patch((edit,), f"removed env {name}")
    cmd = argv.tokenize(container.spec)
    found = [a for a in (*cmd.env, *cmd.forwarded) if a.path == relative and offending(a.name, a.value)]
    if not found:
        raise Unsafe("the variable is not set where the finding points")
    assignment = found[-1]
    element = target.at(target.path)
    written = raw.dig(container.spec, relative)
    if assignment.how == "mpirun -x" and written == "-x" and isinstance(relative[-1], int):
        sequence = target.at((*container.path, *relative[:-1]))
        edit = edits.remove_items(target.tree, sequence, relative[-1], relative[-1] + 1)
    else:
        edit = scripts.remove_assignment(target.tree, element, assignment.name, assignment.how)
    return Patch((edit,), f"removed {assignment.name}={assignment.value} ({assignment.how})")


def _zero(*names: str) -> Callable[[str, str | None], bool]:
    return lambda name, value: name in names and (value or "").strip() == "0"


def async_error_handling(target: Target) -> Patch:
    return _remove_variable(target, _zero("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"))


def watchdog_enabled(target: Target) -> Patch:
    # Without the variable PyTorch uses its default heartbeat timeout (480 s, under the policy's 10m bound).
    monitoring_off = _zero("TORCH_NCCL_ENABLE_MONITORING")
    return _remove_variable(
        target, lambda n, v: monitoring_off(n, v) or n == "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"
    )


def no_placebo_timeout(target: Target) -> Patch:
    return _remove_variable(target, lambda name, value: name == "NCCL_TIMEOUT")


# The switches gpu-nic-topology's no-transport-fallback names (RULES.md §2).
def _fallback(name: str, value: str | None) -> bool:
    text = (value or "").strip().lower()
    return (
        (name in ("NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE") and text == "1")
        or (name == "NCCL_NET" and text == "socket")
        or (name == "NCCL_NET_GDR_LEVEL" and text in ("loc", "0"))
    )


def no_transport_fallback(target: Target) -> Patch:
    return _remove_variable(target, _fallback)


# --- checkpoint-interval -----------------------------------------------------------------------------
def interval_bounded(target: Target) -> Patch:
    bound = target.params["maxCheckpointInterval"]
    return _lower(target, ("checkpointInterval", "checkpointSteps"), bound, "kubegap.dev/checkpoint-interval")


def interval_declared(target: Target) -> Patch:
    if target.finding.unresolved:
        raise Unsafe("a value kubegap cannot see may set it: " + "; ".join(target.finding.unresolved))
    _, container = target.container()
    if target.path == container.path:
        raise Unsafe("no checkpoint knob is set: how often this trainer can save is for you to choose")
    bound = durations.format_seconds(target.params["maxCheckpointInterval"])
    why = (
        f"the measured time of one training step (steps between checkpoints times it must be {bound} or less)"
    )
    return _annotation_todo(target, ("metadata", "annotations"), STEP_TIME, why)


def checkpointing_enabled(target: Target) -> Patch:
    raise Unsafe("turning checkpointing on needs a place and an interval only you can choose")


# --- health-probes -----------------------------------------------------------------------------------
def liveness_probe(target: Target) -> Patch:
    _, container = target.container()
    window = math.ceil(target.params["minLivenessWindow"])
    period, timeout = 30, 10
    failures = max(1, math.ceil((window - timeout) / period))
    probe = {
        "exec": {
            "command": [
                "sh",
                "-c",
                f"test $(( $(date +%s) - $(stat -c %Y {HEARTBEAT_FILE}) )) -lt {window}",
            ]
        },
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failures,
    }
    comment = f"kubegap fix: the training loop must touch {HEARTBEAT_FILE} at least every {window}s"
    edit = edits.insert_key(target.tree, target.at(container.path), "livenessProbe", probe, comment=comment)
    return Patch((edit,), f"added an exec heartbeat liveness probe ({HEARTBEAT_FILE}, window ≥ {window}s)")


def _number(probe: object, key: str, default: int) -> int:
    value = raw.mapping(probe).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def probe_window(target: Target) -> Patch:
    path = target.path
    probe = raw.dig(target.obj, path)
    window = target.params["minLivenessWindow"]
    period, timeout = _number(probe, "periodSeconds", 10), _number(probe, "timeoutSeconds", 1)
    failures = max(1, math.ceil((window - timeout) / period))
    if "failureThreshold" in raw.mapping(probe):
        edit = edits.set_scalar(target.tree, target.at((*path, "failureThreshold")), failures)
    else:
        edit = edits.insert_key(target.tree, target.at(path), "failureThreshold", failures)
    return Patch((edit,), f"set failureThreshold to {failures} (window {period * failures + timeout}s)")


# --- restart-budget ----------------------------------------------------------------------------------
_RESTART_FIELD: dict[tuple[str, str], FieldPath] = {
    ("batch", "Job"): ("spec", "backoffLimit"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "backoffLimit"),
    ("jobset.x-k8s.io", "JobSet"): ("spec", "failurePolicy", "maxRestarts"),
    ("batch.volcano.sh", "Job"): ("spec", "maxRetry"),
    ("ray.io", "RayJob"): ("spec", "backoffLimit"),
    **{
        ("kubeflow.org", kind): ("spec", "runPolicy", "backoffLimit")
        for kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob")
    },
}


def auto_restart(target: Target) -> Patch:
    info = kind_info(target.obj)
    field = _RESTART_FIELD.get((info.group, info.kind)) if info else None
    if field is None:
        raise Unsafe("kubegap does not know this kind's restart setting")
    if target.path[-1:] == ("backoffLimitPerIndex",):
        field = target.path
    if raw.dig(target.obj, field) is not None:
        edit = edits.set_scalar(target.tree, target.at(field), RESTARTS)
    else:
        edit = edits.insert_key(target.tree, target.at(field[:-1]), str(field[-1]), RESTARTS)
    return Patch((edit,), f"set {'.'.join(map(str, field))} to {RESTARTS}")


# --- gpu-nic-topology --------------------------------------------------------------------------------
# AWS: EFA is used by NCCL through libfabric's `efa` provider (aws-ofi-nccl), selected by FI_PROVIDER=efa.
_FABRIC_HINTS = {"vpc.amazonaws.com/efa": ("FI_PROVIDER", "efa")}


def nccl_nic_hints(target: Target) -> Patch:
    template, container = target.container()
    names = {n for c in template.containers for n in _resources(c.spec)}
    hints = sorted({_FABRIC_HINTS[n] for n in names if n in _FABRIC_HINTS})
    if len(hints) != 1:
        raise Unsafe(
            "the attached fabric does not say which NIC to use: "
            "set NCCL_IB_HCA or NCCL_SOCKET_IFNAME to your nodes' devices"
        )
    name, value = hints[0]
    edit = edits.append_items(
        target.tree, target.at((*container.path, "env")), [{"name": name, "value": value}]
    )
    return Patch((edit,), f"added env {name}={value} (the pod requests EFA)")


def _resources(spec: object) -> set[str]:
    resources = raw.mapping(raw.mapping(spec).get("resources"))
    return {str(k) for part in ("limits", "requests") for k in raw.mapping(resources.get(part))}


def _never(reason: str) -> Callable[[Target], Patch]:
    def fixer(target: Target) -> Patch:
        raise Unsafe(reason)

    return fixer


FIXERS: dict[tuple[str, str], Callable[[Target], Patch]] = {
    ("nccl-timeout", "timeout-declared"): timeout_declared,
    ("nccl-timeout", "timeout-bounded"): timeout_bounded,
    ("nccl-timeout", "async-error-handling"): async_error_handling,
    ("nccl-timeout", "watchdog-enabled"): watchdog_enabled,
    ("nccl-timeout", "no-placebo-timeout"): no_placebo_timeout,
    ("checkpoint-interval", "checkpointing-enabled"): checkpointing_enabled,
    ("checkpoint-interval", "interval-declared"): interval_declared,
    ("checkpoint-interval", "interval-bounded"): interval_bounded,
    ("health-probes", "liveness-probe"): liveness_probe,
    ("health-probes", "probe-window"): probe_window,
    ("restart-budget", "auto-restart"): auto_restart,
    ("gpu-nic-topology", "no-transport-fallback"): no_transport_fallback,
    ("gpu-nic-topology", "nccl-nic-hints"): nccl_nic_hints,
    ("gpu-nic-topology", "nic-attached"): _never("attaching a NIC depends on the cluster's fabric"),
}
_BY_RULE = {
    "exemption-reason": "only a person can give the exemption's reason",
    "invalid-declaration": "the declaration's value is for you to correct",
}


def plan(target: Target) -> Patch:
    """The patch for one finding; raises Unsafe with the reason when there is no safe one."""
    finding = target.finding
    fixer = FIXERS.get((finding.policy, finding.rule))
    if fixer is None:
        raise Unsafe(_BY_RULE.get(finding.rule, "kubegap has no fix for this rule"))
    return fixer(target)

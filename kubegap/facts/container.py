"""Container facts: GPUs and accelerators, the resolved environment, the collective timeout, probes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from kubegap import durations, raw
from kubegap.facts import argv, env, mpi, persistence, rails, readings, recorder, torchrun, transport
from kubegap.facts.knobs import Catalogue, Framework
from kubegap.facts.model import Scratch, UnreadableCount, longest, seconds
from kubegap.fieldpath import FieldPath, render
from kubegap.quantities import count, is_zero
from kubegap.workloads import Container, PodTemplate

_HIDDEN_FORWARD: Final = "mpirun -x {} (launcher value not visible)"
_PROBE_HANDLERS: Final = ("exec", "httpGet", "tcpSocket", "grpc")


def resource_counts(container: Mapping[str, Any]) -> dict[str, int]:
    """Limit, else request, per resource name."""
    resources = raw.mapping(container.get("resources"))
    counts = {str(k): count(v) for k, v in raw.mapping(resources.get("requests")).items()}
    counts.update({str(k): count(v) for k, v in raw.mapping(resources.get("limits")).items()})
    return counts


def unreadable_quantities(container: Container) -> Iterator[tuple[str, Any, FieldPath]]:
    """(resource, value, path) of each limit and request that is not a whole number (`${GPUS}`, `1.5`)."""
    resources = raw.mapping(container.spec.get("resources"))
    for section in ("limits", "requests"):
        for name, value in raw.mapping(resources.get(section)).items():
            if count(value) == 0 and not is_zero(value):
                yield str(name), value, (*container.path, "resources", section, str(name))


def unreadable_counts(catalogue: Catalogue, container: Container) -> list[UnreadableCount]:
    """Accelerator requests and limits that are not whole numbers (RULES.md v2 `unresolved-count`)."""
    return [
        UnreadableCount(name, "" if value is None else str(value), path)
        for name, value, path in unreadable_quantities(container)
        if catalogue.is_accelerator(name)
    ]


def probe(spec: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The probe if it names a handler; a probe without one does nothing."""
    found = spec.get(kind)
    return found if raw.is_mapping(found) and any(k in found for k in _PROBE_HANDLERS) else None


def _liveness(container: Container) -> dict[str, Any] | None:
    found = probe(container.spec, "livenessProbe")
    if found is None:
        return None

    def number(key: str, default: int) -> int:
        value = found.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default

    window = number("periodSeconds", 10) * number("failureThreshold", 3) + number("timeoutSeconds", 1)
    return {
        "windowSeconds": float(window),
        "windowText": durations.format_seconds(window),
        "path": render((*container.path, "livenessProbe")),
    }


def gather(
    scratch: Scratch,
    template: PodTemplate,
    container: Container,
    cmd: argv.CommandLine,
    counts: Mapping[str, int],
    launch: mpi.Launch | None,
) -> tuple[dict[str, Any], list[readings.Reading]]:
    """Facts of one container; `launch` is what an MPI launcher hands it (None unless in a GPU pod)."""
    forwarded = launch.forwarded if launch else []
    environment = env.resolve(
        container.spec,
        container.path,
        scratch.namespace,
        scratch.configmaps,
        cmd.env,
        forwarded,
        cmd.sourced,
    )
    found, unreadable = readings.container_readings(scratch.catalogue, cmd, environment, container.path)
    if launch and not cmd.launches_mpi:
        found += launch.readings
    # A `-x NAME` whose launcher value is unseen lands here: listed where it is judged (RULES.md §3).
    hidden = [_HIDDEN_FORWARD.format(v.name) for v in forwarded if v.value is None]
    unresolved = list(environment.unresolved) + hidden + [f"{u.source}: {u.reason}" for u in unreadable]
    scratch.unresolved.extend(unresolved)
    facts = _identity(scratch.catalogue, container, counts) | _environment(environment, unresolved)
    facts["startupProbe"] = probe(container.spec, "startupProbe") is not None
    seen, spec, path = facts["envNames"], container.spec, container.path
    facts["ibTransport"] = transport.gather(facts["env"])
    facts["flightRecorder"] = recorder.gather(facts["env"], seen, template.spec, spec, path)
    if (launcher := torchrun.gather(cmd, facts["env"], seen, path)) is not None:
        facts["torchrun"] = launcher
    framework = readings.framework(scratch.catalogue, cmd)
    if framework is not None:
        facts["framework"] = _framework(framework)
    timeout = _collective_timeout(scratch, template, found)
    if timeout is None and framework is not None and framework.default_timeout is not None:
        # Nothing set: the launcher's documented default applies (knobs.yaml cites each), unless a
        # source kubegap cannot read may set the timeout.
        hides = readings.hidden(scratch.catalogue, "collectiveTimeout", environment, unreadable, framework)
        source = f"default of {framework.name}"
        timeout = (
            None if hides else {**seconds(framework.default_timeout, source, container.path), "default": True}
        )
    if timeout is not None:
        facts["collectiveTimeout"] = timeout
    hca = rails.ib_hca(environment)
    if hca is not None:
        facts["ibHca"] = hca
    recovery = persistence.container_facts(scratch, template, container, cmd, environment)
    if recovery:
        facts["recovery"] = recovery
    liveness = _liveness(container)
    if liveness:
        facts["liveness"] = liveness
    return facts, found


def _identity(catalogue: Catalogue, container: Container, counts: Mapping[str, int]) -> dict[str, Any]:
    return {
        "name": container.name,
        "path": render(container.path),
        "gpus": sum(n for r, n in counts.items() if catalogue.is_gpu(r)),
        "accelerators": sum(n for r, n in counts.items() if catalogue.is_accelerator(r)),
    }


def _environment(environment: env.Environment, unresolved: list[str]) -> dict[str, Any]:
    variables = environment.variables.values()
    names = sorted(environment.variables)
    return {
        "env": {v.name: v.value for v in variables if v.value is not None},
        "envNames": names,
        "envPaths": {v.name: render(v.path) for v in variables},
        "envNamesText": "\n".join(names),  # one per line, for `globs` params
        "unresolved": unresolved,
        "unresolvedText": "; ".join(unresolved),
    }


def _framework(framework: Framework) -> dict[str, Any]:
    facts: dict[str, Any] = {"name": framework.name}
    if framework.default_timeout is not None:
        facts["defaultTimeout"] = framework.default_timeout
        facts["defaultTimeoutText"] = durations.format_seconds(framework.default_timeout)
    return facts


def _collective_timeout(
    scratch: Scratch, template: PodTemplate, found: list[readings.Reading]
) -> dict[str, Any] | None:
    """The longest timeout set by a flag, a variable or a declaration."""
    timeouts = [
        (r.value, r.source, r.path) for r in found if r.setting == "collectiveTimeout" and r.value is not None
    ]
    declared = scratch.declared("collectiveTimeout", template)
    if declared:
        timeouts.append(declared)
    return longest(timeouts)

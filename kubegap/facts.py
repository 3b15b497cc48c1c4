"""Facts: everything the policies judge, resolved once per object before any CEL runs (RULES.md §1).

The CEL side sees plain maps and lists: counts are ints, durations are float seconds, and a value that is
absent is a missing key (tested with `has()`), never null — the common ground of both CEL runtimes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegap import argv, durations, env, jobs, mpi, nodes, purpose, raw, readings
from kubegap.fieldpath import FieldPath, render
from kubegap.knobs import Catalogue
from kubegap.quantities import count
from kubegap.workloads import Container, PodTemplate, Workload

_HIDDEN_FORWARD = "mpirun -x {} (launcher value not visible)"


@dataclass(frozen=True, slots=True)
class Unit:
    """One evaluation unit: the workload, a pod template, a container or a node."""

    scope: str
    bindings: Mapping[str, Any]  # CEL variables beside `object`, `facts` and `params`
    role: str | None = None
    container: str | None = None
    path: FieldPath | None = None  # where a finding points when the validation names no field
    # (path of the annotations map, the map): exemptions are looked up here, nearest first
    annotations: tuple[tuple[FieldPath, Mapping[str, Any]], ...] = ()


@dataclass(frozen=True, slots=True)
class InvalidDeclaration:
    annotation: str
    text: str
    reason: str
    path: FieldPath


@dataclass(frozen=True, slots=True)
class UnreadableCount:
    """An accelerator count kubegap cannot read (`${GPUS}`, `__SLOTS__`, empty): it counts 0, and says so."""

    resource: str
    text: str
    path: FieldPath


@dataclass(frozen=True, slots=True)
class ObjectFacts:
    facts: Mapping[str, Any]
    units: Mapping[str, tuple[Unit, ...]]
    invalid: tuple[InvalidDeclaration, ...] = ()
    unresolved: tuple[str, ...] = ()
    unsized: tuple[UnreadableCount, ...] = ()


@dataclass(slots=True)
class _Scratch:
    """Per-object state while facts are gathered."""

    catalogue: Catalogue
    namespace: str
    configmaps: env.ConfigMaps
    metadata: Mapping[str, Any]
    invalid: dict[FieldPath, InvalidDeclaration] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)

    def declared(self, setting: str, template: PodTemplate) -> tuple[float, str, FieldPath] | None:
        for knob in readings.declared(self.catalogue, setting):
            assert knob.annotation is not None
            found = readings.declaration(knob.annotation, template.metadata, template.path, self.metadata)
            if found is None:
                continue
            try:
                return readings.convert(knob, found.text), f"{knob.annotation}: {found.text}", found.path
            except ValueError as err:
                self.invalid[found.path] = InvalidDeclaration(
                    knob.annotation, found.text, str(err), found.path
                )
        return None


def resource_counts(container: Mapping[str, Any]) -> dict[str, int]:
    """Limit, else request, per resource name."""
    resources = raw.mapping(container.get("resources"))
    counts = {str(k): count(v) for k, v in raw.mapping(resources.get("requests")).items()}
    counts.update({str(k): count(v) for k, v in raw.mapping(resources.get("limits")).items()})
    return counts


def unreadable_counts(catalogue: Catalogue, container: Container) -> list[UnreadableCount]:
    """Accelerator requests and limits that are not whole numbers (RULES.md v2 `unresolved-count`)."""
    resources = raw.mapping(container.spec.get("resources"))
    found = []
    for section in ("limits", "requests"):
        for name, value in raw.mapping(resources.get(section)).items():
            if catalogue.is_accelerator(str(name)) and count(value) == 0 and not _zero(value):
                path = (*container.path, "resources", section, str(name))
                found.append(UnreadableCount(str(name), "" if value is None else str(value), path))
    return found


def _zero(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool) and value <= 0) or (
        isinstance(value, str) and value.strip() == "0"
    )


def _seconds(value: float, source: str, path: FieldPath) -> dict[str, Any]:
    return {"seconds": value, "text": durations.format_seconds(value), "source": source, "path": render(path)}


_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")


def _probe(spec: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The probe if it names a handler; a probe without one does nothing."""
    probe = spec.get(kind)
    return probe if isinstance(probe, Mapping) and any(k in probe for k in _PROBE_HANDLERS) else None


def _liveness(spec: Mapping[str, Any], base: FieldPath) -> dict[str, Any] | None:
    probe = _probe(spec, "livenessProbe")
    if probe is None:
        return None

    def number(key: str, default: int) -> int:
        value = probe.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default

    window = number("periodSeconds", 10) * number("failureThreshold", 3) + number("timeoutSeconds", 1)
    return {
        "windowSeconds": float(window),
        "windowText": durations.format_seconds(window),
        "path": render((*base, "livenessProbe")),
    }


def _container(
    scratch: _Scratch,
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
    resolved = [v for v in environment.variables.values() if v.value is not None]
    facts: dict[str, Any] = {
        "name": container.name,
        "path": render(container.path),
        "gpus": sum(n for r, n in counts.items() if scratch.catalogue.is_gpu(r)),
        "accelerators": sum(n for r, n in counts.items() if scratch.catalogue.is_accelerator(r)),
        "env": {v.name: v.value for v in resolved},
        "envNames": sorted(environment.variables),
        "envPaths": {v.name: render(v.path) for v in environment.variables.values()},
        "envNamesText": "\n".join(sorted(environment.variables)),  # one per line, for `globs` params
        "unresolved": unresolved,
        "unresolvedText": "; ".join(unresolved),
        "startupProbe": _probe(container.spec, "startupProbe") is not None,
    }
    framework = readings.framework(scratch.catalogue, cmd)
    if framework is not None:
        facts["framework"] = {"name": framework.name}
        if framework.default_timeout is not None:
            facts["framework"]["defaultTimeout"] = framework.default_timeout
            facts["framework"]["defaultTimeoutText"] = durations.format_seconds(framework.default_timeout)
    timeouts = [
        (r.value, r.source, r.path) for r in found if r.setting == "collectiveTimeout" and r.value is not None
    ]
    declared = scratch.declared("collectiveTimeout", template)
    if declared:
        timeouts.append(declared)
    if timeouts:
        facts["collectiveTimeout"] = _seconds(*max(timeouts, key=lambda t: t[0]))
    elif (
        framework is not None
        and framework.default_timeout is not None
        and not readings.hidden(scratch.catalogue, "collectiveTimeout", environment, unreadable, framework)
    ):
        # Nothing set: the recognised launcher's documented default applies (knobs.yaml cites each).
        source = f"default of {framework.name}"
        facts["collectiveTimeout"] = {
            **_seconds(framework.default_timeout, source, container.path),
            "default": True,
        }
    liveness = _liveness(container.spec, container.path)
    if liveness:
        facts["liveness"] = liveness
    return facts, found


_FABRIC_DEVICES = "/dev/infiniband"  # the RDMA character devices (uverbs, rdma_cm) of the host


def _fabric_devices(template: PodTemplate) -> bool:
    """A privileged container that mounts the host's /dev/infiniband reaches the fabric without an
    extended resource (a common pattern on clusters without an RDMA device plugin)."""
    volumes = {
        str(v.get("name")): str(raw.mapping(v.get("hostPath")).get("path", ""))
        for v in raw.items(template.spec.get("volumes"))
        if isinstance(v, Mapping)
    }
    for container in template.containers:
        if raw.mapping(container.spec.get("securityContext")).get("privileged") is not True:
            continue
        for mount in raw.items(container.spec.get("volumeMounts")):
            path = volumes.get(str(raw.mapping(mount).get("name")), "")
            if path.rstrip("/") == _FABRIC_DEVICES or path.startswith(_FABRIC_DEVICES + "/"):
                return True
    return False


def _template(
    template: PodTemplate, containers: list[dict[str, Any]], counts: Mapping[int, Mapping[str, int]]
) -> dict[str, Any]:
    spec, metadata = template.spec, template.metadata
    claims = spec.get("resourceClaims")
    names = sorted({r for c in template.containers for r in counts[id(c)]})
    return {
        "role": template.role,
        "path": render(template.path),
        "replicas": template.replicas,
        "podLevel": template.pod_level,
        "gpusPerPod": sum(c["gpus"] for c in containers),
        "acceleratorsPerPod": sum(c["accelerators"] for c in containers),
        "annotations": {str(k): str(v) for k, v in raw.mapping(metadata.get("annotations")).items()},
        "resourceNames": names,
        "resourceNamesText": "\n".join(names),  # one per line, for `globs` params
        "hostNetwork": spec.get("hostNetwork") is True,
        "fabricDevices": _fabric_devices(template),
        "resourceClaims": len(claims) if isinstance(claims, list) else 0,
    }


def _checkpoint(
    scratch: _Scratch,
    per_template: list[tuple[PodTemplate, list[readings.Reading]]],
    trainers: list[dict[str, Any]],
) -> dict[str, Any]:
    """Judged once per workload: the least safe (longest) interval of all accelerator containers counts."""
    out: dict[str, Any] = {}
    intervals: list[tuple[float, str, FieldPath]] = []
    steps: list[tuple[float, str, FieldPath]] = []
    for template, found in per_template:
        step_time = scratch.declared("stepTime", template)
        for reading in found:
            if reading.setting == "checkpointDisabled" and "disabled" not in out:
                out["disabled"] = {"source": reading.source, "path": render(reading.path)}
            elif reading.setting == "checkpointUnbounded" and "unbounded" not in out:
                out["unbounded"] = {"source": reading.source, "path": render(reading.path)}
            elif reading.setting == "checkpointInterval" and reading.value is not None:
                intervals.append((reading.value, reading.source, reading.path))
            elif reading.setting == "checkpointSteps" and reading.value is not None:
                if step_time is None:
                    steps.append((reading.value, reading.source, reading.path))
                else:
                    source = f"{reading.source} at step time {step_time[1].split(': ', 1)[1]}"
                    intervals.append((reading.value * step_time[0], source, reading.path))
        declared = scratch.declared("checkpointInterval", template)
        if declared:
            intervals.append(declared)
    if intervals:
        out["interval"] = _seconds(*max(intervals, key=lambda t: t[0]))
    save_time = _longest_declared(scratch, "checkpointSaveTime", [t for t, _ in per_template])
    if save_time:
        out["saveTime"] = save_time
    # Only what the accelerator containers could not see can hide a checkpoint knob; a sidecar's is noise.
    if trainers:  # where a missing interval would be written: the first training container
        out["trainerPath"] = trainers[0]["path"]
    unseen = (u for c in trainers for u in c["unresolved"])
    out["unresolvedText"] = "; ".join(dict.fromkeys(unseen))
    if steps:
        count, source, path = max(steps, key=lambda t: t[0])
        out["steps"] = {"steps": int(count), "source": source, "path": render(path)}
    return out


def _longest_declared(scratch: _Scratch, setting: str, templates: list[PodTemplate]) -> dict[str, Any] | None:
    found = [d for d in (scratch.declared(setting, t) for t in templates) if d is not None]
    return _seconds(*max(found, key=lambda d: d[0])) if found else None


def _purpose(
    workload: Workload, metadata: Mapping[str, Any], accelerators: int, seen: list[str | None]
) -> str:
    """RULES.md §1 "Training workload" and v2 "purpose": the declaration, else serving kinds and workloads
    without accelerators are not training work, else what the commands say."""
    declared = purpose.declared(metadata)
    if declared is not None:
        return declared
    if accelerators < 1 or workload.serving:
        return purpose.INFERENCE
    return purpose.of_workload(seen)


def gather(
    obj: Mapping[str, Any], workload: Workload, catalogue: Catalogue, configmaps: env.ConfigMaps
) -> ObjectFacts:
    metadata = raw.mapping(obj.get("metadata"))
    scratch = _Scratch(catalogue, str(metadata.get("namespace") or "default"), configmaps, metadata)
    every = [c for t in workload.templates for c in t.containers]
    parsed = {id(c): argv.tokenize(c.spec) for c in every}  # each container's command line and
    counts = {id(c): resource_counts(c.spec) for c in every}  # resources, read once
    launch = mpi.launch(workload, parsed, catalogue, scratch.namespace, configmaps)
    templates: list[Unit] = []
    containers: list[Unit] = []
    per_template: list[tuple[PodTemplate, list[readings.Reading]]] = []
    trainers: list[dict[str, Any]] = []
    purposes: list[str | None] = []
    totals = {"totalGpus": 0, "gpuPods": 0, "totalAccelerators": 0}
    for template in workload.templates:
        annotations = (
            ((*template.path, "metadata", "annotations"), raw.mapping(template.metadata.get("annotations"))),
            (("metadata", "annotations"), raw.mapping(metadata.get("annotations"))),
        )
        pod_gpus = sum(
            n for c in template.containers for r, n in counts[id(c)].items() if catalogue.is_gpu(r)
        )
        own: list[dict[str, Any]] = []
        found_here: list[readings.Reading] = []  # of accelerator containers: they run the training
        for container in template.containers:
            reach = launch if pod_gpus > 0 else None
            cmd, own_counts = parsed[id(container)], counts[id(container)]
            facts, found = _container(scratch, template, container, cmd, own_counts, reach)
            own.append(facts)
            if facts["accelerators"] > 0 or cmd.launches_mpi:  # where the work is, or what starts it
                purposes.append(purpose.of_container(cmd, "framework" in facts))
            if facts["accelerators"] > 0:
                found_here += found
                trainers.append(facts)
        tfacts = _template(template, own, counts)
        per_template.append((template, found_here))
        totals["totalGpus"] += template.replicas * tfacts["gpusPerPod"]
        totals["gpuPods"] += template.replicas if tfacts["gpusPerPod"] else 0
        totals["totalAccelerators"] += template.replicas * tfacts["acceleratorsPerPod"]
        templates.append(
            Unit("template", {"template": tfacts}, template.role, None, template.path, annotations)
        )
        containers += [
            Unit(
                "container",
                {"template": tfacts, "container": c},
                template.role,
                c["name"],
                container.path,
                annotations,
            )
            for c, container in zip(own, template.containers, strict=True)
        ]
    facts = _workload_facts(obj, workload, metadata, totals, purposes)
    facts["checkpoint"] = _checkpoint(scratch, per_template, trainers)
    runtime = _longest_declared(scratch, "expectedRuntime", list(workload.templates))
    if runtime:
        facts["expectedRuntime"] = runtime
    own_annotations = (
        (("metadata", "annotations"), raw.mapping(metadata.get("annotations"))),
        *(
            ((*t.path, "metadata", "annotations"), raw.mapping(t.metadata.get("annotations")))
            for t in workload.templates
        ),
    )
    workload_unit = Unit("workload", {}, None, None, None, own_annotations)
    return ObjectFacts(
        facts,
        {"workload": (workload_unit,), "template": tuple(templates), "container": tuple(containers)},
        tuple(scratch.invalid.values()),
        tuple(dict.fromkeys(scratch.unresolved)),
        tuple(u for c in every for u in unreadable_counts(catalogue, c)),
    )


def _workload_facts(
    obj: Mapping[str, Any],
    workload: Workload,
    metadata: Mapping[str, Any],
    totals: dict[str, int],
    purposes: list[str | None],
) -> dict[str, Any]:
    what = _purpose(workload, metadata, totals["totalAccelerators"], purposes)
    facts: dict[str, Any] = {
        "kind": workload.kind,
        "group": workload.group,
        **totals,
        "purpose": what,
        "training": what == purpose.TRAINING,
        # benchmarks and diagnostics need the fast network path as much as training does
        "gpuWork": what in (purpose.TRAINING, purpose.BENCHMARK, purpose.DIAGNOSTIC),
        "distributed": totals["totalGpus"] > 1,
        "multiNode": totals["gpuPods"] > 1,
    }
    deadline = jobs.deadline(workload.group, workload.kind, obj)
    if deadline is not None:
        facts["deadlineSeconds"] = deadline
    restart = jobs.restart(workload.group, workload.kind, obj)
    if restart is not None:
        facts["restart"] = {
            "enabled": restart.enabled,
            "detail": restart.detail,
            "path": render(restart.path),
        }
    return facts


def gather_node(obj: Mapping[str, Any], catalogue: Catalogue) -> ObjectFacts:
    node = nodes.node_facts(obj, catalogue)
    metadata = raw.mapping(obj.get("metadata"))
    annotations = ((("metadata", "annotations"), raw.mapping(metadata.get("annotations"))),)
    unit = Unit("node", {"node": node}, None, None, ("status",), annotations)
    return ObjectFacts({"kind": "Node", "group": ""}, {"node": (unit,)})

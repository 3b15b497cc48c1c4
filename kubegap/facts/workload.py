"""Workload facts and `gather`, the one entry point from an object to everything the policies judge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kubegap import raw
from kubegap.facts import (
    argv,
    checkpoint,
    container,
    env,
    lifecycle,
    mpi,
    persistence,
    purpose,
    readings,
    template,
    torchrun,
    twins,
)
from kubegap.facts.knobs import Catalogue
from kubegap.facts.model import InvalidDeclaration, ObjectFacts, Scratch, Unit, UnreadableCount
from kubegap.fieldpath import FieldPath, render
from kubegap.workloads import PodTemplate, Workload

_Annotations = tuple[tuple[FieldPath, Mapping[Any, Any]], ...]  # keys as the parser gave them


class _Pods:
    """What the templates add up to while they are read one by one. (A plain class: kubegap.records.)"""

    def __init__(self) -> None:
        self.templates: list[Unit] = []
        self.containers: list[Unit] = []
        self.readings: list[tuple[PodTemplate, list[readings.Reading]]] = []
        # Facts of the accelerator containers of templates that are no twin: a twin's equal its original's,
        # after them, and every fact read from them keeps the first of equals or is the same over
        # duplicates (kubegap.facts.checkpoint, persistence, torchrun; kubegap.pricing reads the originals'
        # units alike).
        self.trainers: list[dict[str, Any]] = []
        self.training: set[int] = set()  # id of each template, twins too, with a trainer
        self.unseen: list[str] = []  # what the accelerator containers could not see
        self.unsized: list[UnreadableCount] = []  # accelerator counts that cannot be read
        self.purposes: list[str | None] = []
        self.totals: dict[str, int] = {"totalGpus": 0, "gpuPods": 0, "totalAccelerators": 0}


def _annotations(own: PodTemplate | None, metadata: Mapping[str, Any]) -> _Annotations:
    """Where exemptions are looked up, nearest first: the pod template's annotations, then the object's."""
    top = (("metadata", "annotations"), raw.mapping(metadata.get("annotations")))
    if own is None:
        return (top,)
    return (((*own.path, "metadata", "annotations"), raw.mapping(own.metadata.get("annotations"))), top)


def gather(
    obj: Mapping[str, Any], workload: Workload, catalogue: Catalogue, configmaps: env.ConfigMaps
) -> ObjectFacts:
    metadata = raw.mapping(obj.get("metadata"))
    scratch = Scratch(catalogue, str(metadata.get("namespace") or "default"), configmaps, metadata)
    originals = twins.originals(workload.templates)
    parsed, counts = _commands(workload.templates, originals)
    launch = mpi.launch(workload, parsed, catalogue, scratch.namespace, configmaps)
    pods = _Pods()
    read: list[_Read] = []
    firsts: dict[int, twins.Original] = {}
    for each, first in zip(workload.templates, originals, strict=True):
        if first is None:
            read.append(_read_template(scratch, pods, each, parsed, counts, launch))
            continue
        if first not in firsts:
            firsts[first] = twins.Original(read[first].pod, read[first].facts)
        scratch.twins[id(each)] = (read[first].pod, firsts[first].moved)
        read.append(_read_twin(scratch, pods, each, read[first], firsts[first]))
    facts = _workload_facts(obj, workload, metadata, pods.totals, pods.purposes)
    facts["checkpoint"] = checkpoint.gather(scratch, pods.readings, pods.trainers, pods.unseen)
    facts["recovery"] = persistence.gather(workload.templates, pods.trainers, pods.training)
    if (run := torchrun.workload(obj, workload.kind, pods.trainers, facts["multiNode"])) is not None:
        facts["torchrun"] = run
    runtime = scratch.longest_declared("expectedRuntime", list(workload.templates))
    if runtime:
        facts["expectedRuntime"] = runtime
    own = _annotations(None, metadata) + tuple(_annotations(t, metadata)[0] for t in workload.templates)
    return ObjectFacts(
        facts,
        {
            "workload": (Unit("workload", {}, None, None, None, own),),
            "template": tuple(pods.templates),
            "container": tuple(pods.containers),
        },
        tuple(scratch.invalid.values()),
        tuple(dict.fromkeys(scratch.unresolved)),
        tuple(pods.unsized),
        bool(firsts),
    )


def _commands(
    templates: tuple[PodTemplate, ...], originals: list[int | None]
) -> tuple[dict[int, argv.CommandLine], dict[int, Mapping[str, int]]]:
    """Each container's command line and resource counts (keyed by `id`), read once: a twin template's
    containers share their original's."""
    parsed: dict[int, argv.CommandLine] = {}
    counts: dict[int, Mapping[str, int]] = {}
    for each, first in zip(templates, originals, strict=True):
        sources = each.containers if first is None else templates[first].containers
        for own, source in zip(each.containers, sources, strict=True):
            if first is None:
                parsed[id(own)] = argv.tokenize(own.spec)
                counts[id(own)] = container.resource_counts(own.spec)
            else:
                parsed[id(own)], counts[id(own)] = parsed[id(source)], counts[id(source)]
    return parsed, counts


class _Read:
    """What reading one template added, so that its twins add the same at their own paths. (A plain
    class: kubegap.records.)"""

    def __init__(
        self,
        pod: PodTemplate,
        facts: list[dict[str, Any]],
        bindings: Sequence[Mapping[str, Any]],
        found: list[readings.Reading],
        purposes: list[str | None],
        trainers: list[int],
        invalid: list[InvalidDeclaration],
        unsized: list[UnreadableCount],
        unresolved: list[list[str]],
    ) -> None:
        self.pod = pod
        self.facts = facts  # the template's, then its containers'; a twin's are its original's
        self.bindings = bindings  # each unit's: the template's, then its containers'
        # A twin's are left out: they equal its original's in value and source, after them, and the
        # checkpoint facts they feed keep the first of equals (kubegap.facts.checkpoint)
        self.readings = found
        self.purposes = purposes
        self.trainers = trainers  # indexes into the containers
        self.invalid = invalid  # declarations on the template found unreadable
        self.unsized = unsized
        self.unresolved = unresolved  # each container's `unresolved`, at this template's paths
        self.units: list[Unit] = []  # the template's unit, then its containers'


def _read_template(
    scratch: Scratch,
    pods: _Pods,
    pod: PodTemplate,
    parsed: Mapping[int, argv.CommandLine],
    counts: Mapping[int, Mapping[str, int]],
    launch: mpi.Launch | None,
) -> _Read:
    """One pod template's facts and units; accelerator containers run the training, so their readings
    count towards the workload's checkpoint, and they or an MPI launcher tell its purpose."""
    gpus = sum(n for c in pod.containers for r, n in counts[id(c)].items() if scratch.catalogue.is_gpu(r))
    reach = launch if gpus > 0 else None  # an MPI launcher reaches the GPU pods only
    invalid_before = set(scratch.invalid)
    own: list[dict[str, Any]] = []
    found_here: list[readings.Reading] = []
    purposes: list[str | None] = []
    trainers: list[int] = []
    for index, each in enumerate(pod.containers):
        cmd = parsed[id(each)]
        facts, found = container.gather(scratch, pod, each, cmd, counts[id(each)], reach)
        own.append(facts)
        if facts["accelerators"] > 0 or cmd.launches_mpi:
            purposes.append(purpose.of_container(cmd, "framework" in facts))
        if facts["accelerators"] > 0:
            found_here += found
            trainers.append(index)
    tfacts = template.gather(pod, own, counts)
    invalid = [
        v for k, v in scratch.invalid.items() if k not in invalid_before and k[: len(pod.path)] == pod.path
    ]
    unsized = [u for c in pod.containers for u in container.unreadable_counts(scratch.catalogue, c)]
    unresolved = [c["unresolved"] for c in own]  # container.gather has listed them for the object
    bindings = [{"template": tfacts}, *({"template": tfacts, "container": c} for c in own)]
    done = _Read(pod, [tfacts, *own], bindings, found_here, purposes, trainers, invalid, unsized, unresolved)
    _add(scratch, pods, done, None)
    return done


def _read_twin(
    scratch: Scratch, pods: _Pods, pod: PodTemplate, read: _Read, original: twins.Original
) -> _Read:
    """A twin's facts: its original's, moved to its own path when first read (kubegap.facts.twins)."""
    deferred = twins.Deferred(original, pod)
    bindings = [
        twins.Bindings(deferred, None),
        *(twins.Bindings(deferred, i) for i in range(len(pod.containers))),
    ]
    at = original.moved
    invalid = [replace(v, path=at(v.path, pod)) for v in read.invalid]
    unsized = [replace(u, path=at(u.path, pod)) for u in read.unsized]
    unresolved = [[original.text(u, pod) for u in texts] for texts in read.unresolved]
    done = _Read(pod, read.facts, bindings, [], read.purposes, read.trainers, invalid, unsized, unresolved)
    scratch.invalid.update((v.path, v) for v in invalid)
    scratch.unresolved.extend(u for texts in unresolved for u in texts)
    _add(scratch, pods, done, read)
    return done


def _add(scratch: Scratch, pods: _Pods, read: _Read, original: _Read | None) -> None:
    pod, per_pod = read.pod, read.facts[0]  # a twin's counts are its original's
    pods.purposes += read.purposes
    if original is None:
        pods.trainers += [read.facts[1 + i] for i in read.trainers]
    if read.trainers:
        pods.training.add(id(pod))
        pods.unseen += [u for i in read.trainers for u in read.unresolved[i]]
    pods.readings.append((pod, read.readings))
    pods.unsized += read.unsized
    pods.totals["totalGpus"] += pod.replicas * per_pod["gpusPerPod"]
    pods.totals["gpuPods"] += pod.replicas if per_pod["gpusPerPod"] else 0
    pods.totals["totalAccelerators"] += pod.replicas * per_pod["acceleratorsPerPod"]
    annotations = _annotations(pod, scratch.metadata)
    firsts: list[Unit | None] = list(original.units) if original else [None] * (1 + len(pod.containers))
    units = [Unit("template", read.bindings[0], pod.role, None, pod.path, annotations, firsts[0])]
    for bindings, each, first in zip(read.bindings[1:], pod.containers, firsts[1:], strict=True):
        units.append(Unit("container", bindings, pod.role, each.name, each.path, annotations, first))
    read.units.extend(units)
    pods.templates.append(read.units[0])
    pods.containers += read.units[1:]


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
    deadline = lifecycle.deadline(workload.deadline, obj)
    if deadline is not None:
        facts["deadlineSeconds"] = deadline
    restart = workload.restart(obj) if workload.restart else None
    if restart is not None:
        facts["restart"] = {
            "enabled": restart.enabled,
            "detail": restart.detail,
            "path": render(restart.path),
        }
    if workload.disruptions is not None:
        facts["disruptions"] = workload.disruptions(obj)
    return facts

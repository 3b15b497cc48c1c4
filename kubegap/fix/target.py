"""What a fix knows about one finding: the object, its text, the policy's parameters and the knobs, and
functions that find the container, template and knob the finding points at."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegap import durations, fieldpath, raw
from kubegap.facts import argv, readings
from kubegap.facts.knobs import Catalogue, Knob
from kubegap.findings import Finding
from kubegap.fix.edits import Edit
from kubegap.fix.nodes import Tree, Unsafe
from kubegap.kinds import workload_of
from kubegap.workloads import Container, PodTemplate

FieldPath = fieldpath.FieldPath


@dataclass(frozen=True, slots=True)
class Patch:
    edits: tuple[Edit, ...]
    summary: str  # what the patch does, for the report
    todo: FieldPath | None = None  # an annotation left with a TODO value for a person to fill in


@dataclass(frozen=True, slots=True)
class Target:
    finding: Finding
    obj: Mapping[str, Any]
    prefix: FieldPath  # ("items", i) for an item of a List, else ()
    tree: Tree
    params: Mapping[str, Any]  # the finding's policy parameters, overrides applied (durations in seconds)
    catalogue: Catalogue
    policies: frozenset[str] = frozenset()  # the ids of the policies the patch is checked against

    @property
    def path(self) -> FieldPath:
        """The finding's field path inside the object; Unsafe when it names none."""
        if self.finding.path is None:
            raise Unsafe("the finding names no field")
        try:
            return fieldpath.parse(self.finding.path)
        except ValueError:
            raise Unsafe(f"the finding's path {self.finding.path!r} cannot be read") from None

    def at(self, path: FieldPath) -> FieldPath:
        """A path of the object as a path of the document text."""
        return (*self.prefix, *path)

    def container(self) -> tuple[PodTemplate, Container]:
        """The container (and its template) that holds the finding's field."""
        workload = workload_of(self.obj)
        path = self.path
        for template in workload.templates if workload else ():
            for container in template.containers:
                if path[: len(container.path)] == container.path:
                    return template, container
        raise Unsafe("the finding is not inside a container")


def annotations_of(template: PodTemplate) -> FieldPath:
    """Where a declaration for the template's pods goes: its own metadata, or the workload's for a
    TrainJob (whose trainer has no metadata of its own)."""
    return (*(template.path if template.pod_level else ()), "metadata", "annotations")


def declared(target: Target, template: PodTemplate, annotation: str) -> bool:
    """Whether the template's pods see the annotation: on the template, else on the workload."""
    workload_metadata = raw.mapping(target.obj.get("metadata"))
    return readings.declaration(annotation, template.metadata, template.path, workload_metadata) is not None


@dataclass(frozen=True, slots=True)
class KnobUse:
    """A knob as written in a container's command line."""

    knob: Knob
    name: str  # the flag or override key as written
    element: FieldPath  # absolute path of the command/args element that holds it


def knob_at(target: Target, container: Container, settings: tuple[str, ...]) -> KnobUse:
    """The knob of one of `settings` that the finding's path points at (the last occurrence wins)."""
    cmd = argv.tokenize(container.spec)
    found: list[KnobUse] = []
    for knob in target.catalogue.knobs:
        if knob.setting not in settings:
            continue
        uses = [(flag, token) for flag, _, token in cmd.flag_values(knob.flags)]
        uses += [(key, token) for key, _, token in cmd.overrides if knob.matches_override(key)]
        found += [KnobUse(knob, n, (*container.path, *t.path)) for n, t in uses]
    matching = [u for u in found if u.element == target.path]
    if not matching:
        raise Unsafe("the setting is not written on the command line")
    return matching[-1]


def in_unit(seconds: float, unit: str | None) -> str:
    """A duration written in a knob's unit, rounded down so that it stays within the bound."""
    if unit == "min":
        if seconds < 60:
            raise Unsafe(f"{durations.format_seconds(seconds)} is less than the knob's unit, a minute")
        return str(int(seconds // 60))
    if unit in ("s", "duration-or-seconds"):
        return str(int(seconds))
    if unit == "hms":
        whole = int(seconds)
        return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
    if unit == "duration":
        return durations.format_seconds(int(seconds))
    raise Unsafe(f"a knob in unit {unit!r}")

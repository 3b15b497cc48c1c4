"""The shapes facts are gathered into: evaluation units, the object's facts, and what could not be read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubegap import durations
from kubegap.facts import env, readings
from kubegap.facts.knobs import Catalogue
from kubegap.fieldpath import FieldPath, render
from kubegap.workloads import PodTemplate

# A value that was found, where and from what: (seconds, source text, field path).
Found = tuple[float, str, FieldPath]


@dataclass(slots=True, unsafe_hash=True, init=False)
class Unit:
    """One evaluation unit: the workload, a pod template, a container or a node."""

    scope: str
    bindings: Mapping[str, Any]  # CEL variables beside `object`, `facts` and `params`
    role: str | None
    container: str | None
    path: FieldPath | None  # where a finding points when the validation names no field
    # (path of the annotations map, the map): exemptions are looked up here, nearest first
    annotations: tuple[tuple[FieldPath, Mapping[Any, Any]], ...]  # keys as the parser gave them
    # The same unit of an identical template (kubegap.facts.twins): its bindings differ from this one's only
    # in field paths and the role, so a verdict that reads neither is the same for both.
    original: Unit | None = field(compare=False, repr=False)

    def __init__(
        self,
        scope: str,
        bindings: Mapping[str, Any],
        role: str | None = None,
        container: str | None = None,
        path: FieldPath | None = None,
        annotations: tuple[tuple[FieldPath, Mapping[Any, Any]], ...] = (),
        original: Unit | None = None,
    ) -> None:  # written out, for mypyc to compile (kubegap.records)
        self.scope, self.bindings, self.role, self.container = scope, bindings, role, container
        self.path, self.annotations, self.original = path, annotations, original

    @property
    def default_path(self) -> str | None:
        """Where a finding about the unit points when its validation names no field."""
        return render(self.path) if self.path is not None else None


@dataclass(slots=True, unsafe_hash=True)
class InvalidDeclaration:
    annotation: str
    text: str
    reason: str
    path: FieldPath


@dataclass(slots=True, unsafe_hash=True)
class UnreadableCount:
    """An accelerator count kubegap cannot read (`${GPUS}`, `__SLOTS__`, empty): it counts 0, and says so."""

    resource: str
    text: str
    path: FieldPath


@dataclass(slots=True, unsafe_hash=True, init=False)
class ObjectFacts:
    # dicts, not Mappings: compiled code reads a dict directly and looks a Mapping's `get` up by name
    facts: dict[str, Any]
    units: dict[str, tuple[Unit, ...]]
    invalid: tuple[InvalidDeclaration, ...]
    unresolved: tuple[str, ...]
    unsized: tuple[UnreadableCount, ...]
    # some template is a twin of another (kubegap.facts.twins): else no result is told for twins
    twinned: bool = field(compare=False)

    def __init__(
        self,
        facts: dict[str, Any],
        units: dict[str, tuple[Unit, ...]],
        invalid: tuple[InvalidDeclaration, ...] = (),
        unresolved: tuple[str, ...] = (),
        unsized: tuple[UnreadableCount, ...] = (),
        twinned: bool = False,
    ) -> None:  # written out (kubegap.records)
        self.facts, self.units, self.invalid = facts, units, invalid
        self.unresolved, self.unsized, self.twinned = unresolved, unsized, twinned


class Scratch:
    """Per-object state while facts are gathered. (A plain class: kubegap.records.)"""

    def __init__(
        self, catalogue: Catalogue, namespace: str, configmaps: env.ConfigMaps, metadata: Mapping[str, Any]
    ) -> None:
        self.catalogue, self.namespace = catalogue, namespace
        self.configmaps, self.metadata = configmaps, metadata
        self.invalid: dict[FieldPath, InvalidDeclaration] = {}
        self.unresolved: list[str] = []
        # id of a twin template -> (its original, how a path moves from the original to a twin)
        self.twins: dict[int, tuple[PodTemplate, Callable[[FieldPath, PodTemplate], FieldPath]]] = {}
        # (setting, id of an original template) -> what `_declared` found there
        self.declarations: dict[tuple[str, int], tuple[Found | None, tuple[InvalidDeclaration, ...]]] = {}

    def declared(self, setting: str, template: PodTemplate) -> Found | None:
        """The value a `kubegap.dev/` annotation declares for `setting`; an unreadable one is recorded.
        A twin template's is its original's, moved to the twin's path (kubegap.facts.twins)."""
        twin = self.twins.get(id(template))
        if twin is None:
            found, invalid = self.declarations[(setting, id(template))] = self._declared(setting, template)
            return found
        first, move = twin
        found, invalid = self.declarations.get((setting, id(first))) or self._declared(setting, first)
        for bad in invalid:
            moved = replace(bad, path=move(bad.path, template))
            self.invalid[moved.path] = moved
        return None if found is None else (found[0], found[1], move(found[2], template))

    def _declared(
        self, setting: str, template: PodTemplate
    ) -> tuple[Found | None, tuple[InvalidDeclaration, ...]]:
        """The declared value, and the declarations on the way to it that could not be read (recorded)."""
        invalid: list[InvalidDeclaration] = []
        for knob in readings.declared(self.catalogue, setting):
            assert knob.annotation is not None
            found = readings.declaration(knob.annotation, template.metadata, template.path, self.metadata)
            if found is None:
                continue
            try:
                value = readings.convert(knob, found.text)
            except ValueError as err:
                bad = InvalidDeclaration(knob.annotation, found.text, str(err), found.path)
                self.invalid[found.path] = bad
                invalid.append(bad)
                continue
            return (value, f"{knob.annotation}: {found.text}", found.path), tuple(invalid)
        return None, tuple(invalid)

    def longest_declared(self, setting: str, templates: list[PodTemplate]) -> dict[str, Any] | None:
        return longest([d for d in (self.declared(setting, t) for t in templates) if d is not None])


def seconds(value: float, source: str, path: FieldPath) -> dict[str, Any]:
    """A duration fact: seconds for CEL, text for messages, and where it was read."""
    return {"seconds": value, "text": durations.format_seconds(value), "source": source, "path": render(path)}


def longest(found: list[Found]) -> dict[str, Any] | None:
    """The least safe (longest) of several values, as a duration fact."""
    return seconds(*max(found, key=lambda f: f[0])) if found else None

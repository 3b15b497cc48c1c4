"""Identical pod templates of one object, read once.

A JobSet's replicated jobs, a Volcano job's tasks and a PyTorchJob's replica types are often the same
pod template under other names: a 64-job JobSet is one template 64 times. A template's facts depend only
on its content and on the object around it, except for its own field path and role, so a twin's facts are
its first twin's facts with the path prefix and the role replaced, which costs a copy instead of a read,
and the copy is made only when something reads them (`Deferred`). Every string of the facts that spells the
first twin's path is moved, including text the user wrote that happens to spell it (a flag's value).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from kubegap.fieldpath import FieldPath, render
from kubegap.workloads import PodTemplate

# A pod template is compared with at most this many earlier distinct ones: an object of many different
# templates must not cost a comparison of every pair.
MAX_DISTINCT: Final = 8


def _same(a: PodTemplate, b: PodTemplate) -> bool:
    """Everything a template's facts are read from, but its path and role."""
    return (
        a.replicas == b.replicas
        and a.pod_level == b.pod_level
        and a.metadata == b.metadata
        and a.spec == b.spec
        # a template's containers are read from its spec (kubegap.workloads), so equal specs have equal
        # containers; but a TrainJob's trainer is read from outside its empty spec
        and (
            bool(a.spec)
            or [(c.spec, c.path[len(a.path) :]) for c in a.containers]
            == [(c.spec, c.path[len(b.path) :]) for c in b.containers]
        )
    )


# False: every template is read on its own, as if none had a twin. The tests compare the two ways; set
# here rather than by replacing `originals`, which compiled callers call directly (setup.py).
READ_ONCE = True


def originals(templates: Sequence[PodTemplate]) -> list[int | None]:
    """For each template, the index of the first earlier template it is a twin of; None for the first of
    its kind. A template without a path (a bare Pod) has no twins."""
    if not READ_ONCE:
        return [None] * len(templates)
    out: list[int | None] = []
    distinct: list[int] = []
    for index, template in enumerate(templates):
        first = next((d for d in distinct if _same(templates[d], template)), None) if template.path else None
        out.append(first)
        if first is None and len(distinct) < MAX_DISTINCT:
            distinct.append(index)
    return out


# A plan: a string's pieces around each place it names the path (the twin's path joins them), or
# {key or index: plan} for the parts of a dict or list to copy
_Plan = Any
_UNPLANNED: Final[_Plan] = object()  # most twins' facts are never read (Deferred): nor is the plan made


class Original:
    """The first of some twin templates, with its facts: moves them to each twin's path."""

    def __init__(self, template: PodTemplate, facts: Any) -> None:
        self.path, self._facts = template.path, facts
        self._text = render(template.path)
        self._compiled: re.Pattern[str] | None = None  # made when first needed: most twins are never read
        self._plan: _Plan | None = _UNPLANNED  # the strings that name the path, walked when first needed

    def _pattern(self) -> re.Pattern[str]:
        """The rendered path, not followed by more of a name (`template` is not `templates`)."""
        if self._compiled is None:
            self._compiled = re.compile(re.escape(self._text) + r"(?![\w$-])")
        return self._compiled

    def moved(self, path: FieldPath, twin: PodTemplate) -> FieldPath:
        """`path` moved to the twin where it lies under this template; as is elsewhere (an MPI launcher's
        reading seen by a worker lies under the launcher)."""
        if path[: len(self.path)] == self.path:
            return (*twin.path, *path[len(self.path) :])
        return path

    def facts(self, twin: PodTemplate) -> Any:
        """The twin's facts: a copy of this template's with every rendered path moved to the twin's, sharing
        every part that names no path (facts are never changed once gathered)."""
        if self._plan is _UNPLANNED:
            self._plan = _plan(self._facts, self._text, self._pattern)
        return self._facts if self._plan is None else _apply(self._facts, self._plan, render(twin.path))

    def text(self, value: str, twin: PodTemplate) -> str:
        """One string of this template's facts as the twin's facts hold it."""
        pieces = _pieces(value, self._text, self._pattern)
        return value if pieces is None else render(twin.path).join(pieces)


class Deferred:
    """A twin's facts (its template's, then its containers'), moved from its original's when first read.
    Most twins' results are told with their original's (kubegap.judge) and never read their own: a 64-job
    JobSet's 63 twins then cost no copy."""

    __slots__ = ("_facts", "_original", "_twin")

    def __init__(self, original: Original, twin: PodTemplate) -> None:
        self._original, self._twin = original, twin
        self._facts: list[dict[str, Any]] | None = None

    def part(self, index: int) -> dict[str, Any]:
        if self._facts is None:
            template, *containers = self._original.facts(self._twin)
            self._facts = [{**template, "role": self._twin.role}, *containers]
        return self._facts[index]


class Bindings(Mapping[str, Any]):
    """A twin unit's bindings, read from its Deferred facts: `template`, and `container` for a container."""

    __slots__ = ("_facts", "_names")

    def __init__(self, facts: Deferred, container: int | None) -> None:
        self._facts = facts
        self._names = {"template": 0} if container is None else {"template": 0, "container": 1 + container}

    def __getitem__(self, name: str) -> Any:
        return self._facts.part(self._names[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _pieces(value: str, text: str, pattern: Callable[[], re.Pattern[str]]) -> list[str] | None:
    """`value` split around each place it names the path (`text`, matched by `pattern()`, which is made
    only for a string that holds the text); None if none."""
    if text not in value or len(pieces := pattern().split(value)) == 1:
        return None
    return pieces


def _plan(value: Any, text: str, pattern: Callable[[], re.Pattern[str]]) -> _Plan | None:
    """The plan for a dict or list (the facts are a list of records)."""
    items: Any = value.items() if type(value) is dict else enumerate(value)
    plan: dict[Any, _Plan] = {}
    for key, part in items:
        kind = type(part)  # facts are built of plain dicts, lists and scalars: exact tests
        if kind is str:
            if (pieces := _pieces(part, text, pattern)) is not None:
                plan[key] = tuple(pieces)
        elif (kind is dict or kind is list) and (inner := _plan(part, text, pattern)) is not None:
            plan[key] = inner
    return plan or None


def _apply(value: Any, plan: _Plan, new: str) -> Any:
    """`value` (a dict or list: the facts are a list of records) with its planned parts moved."""
    out = dict(value) if type(value) is dict else list(value)
    for key, part in plan.items():  # a string is joined here: most parts are strings, and a call costs
        out[key] = new.join(part) if type(part) is tuple else _apply(value[key], part, new)
    return out

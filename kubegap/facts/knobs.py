"""The knob catalogue (`policies/knobs.yaml` plus users' files): data that says which flag, override,
environment variable or annotation sets a collective timeout, a checkpoint interval, and so on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any, Final

from kubegap import durations, globs, schema
from kubegap.errors import PolicyError

_KINDS_KEPT: Final = 4096  # resource names whose kind a catalogue remembers


@dataclass(slots=True, unsafe_hash=True)
class OnlyIf:
    flags: frozenset[str]
    values: frozenset[str]  # lower-cased: command-line values are compared case-insensitively
    or_unset: bool


@dataclass(slots=True, unsafe_hash=True)
class Knob:
    # collectiveTimeout, checkpointInterval, checkpointSteps, checkpointDisabled, checkpointUnbounded,
    # stepTime, checkpointSaveTime, expectedRuntime; and, read as text (unit path or switch, never
    # converted to seconds): checkpointDir, checkpointLoad, checkpointResume, checkpointAsync,
    # checkpointOnSignal (facts/persistence.py)
    setting: str
    framework: str | None
    flags: frozenset[str]
    overrides: tuple[str, ...]  # `*.a.b` matches `a.b` and any `x.a.b`
    env: frozenset[str]
    annotation: str | None
    unit: str | None
    disabled_by: frozenset[str]  # lower-cased values that switch checkpointing off
    only_if: OnlyIf | None
    # lower-cased values that keep checkpointing on, on a schedule no time bound follows from (per epoch)
    unbounded_by: frozenset[str] = frozenset()
    # flags without which the knob does nothing: a checkpoint interval with no directory saves nothing
    requires: frozenset[str] = frozenset()
    # checkpointDir: a relative directory lies under the value of these flags, else under the default
    under: tuple[frozenset[str], str] | None = None
    # checkpointDir: resume / async / onSignal, as the framework writing this directory does by default
    framework_defaults: Mapping[str, bool] = field(default_factory=dict)

    @property
    def textual(self) -> bool:
        """A knob read as text (a directory, a switch), not as a duration or a count."""
        return self.unit in ("path", "switch")

    def matches_override(self, key: str) -> bool:
        return any(
            key == p or (p.startswith("*.") and (key == p[2:] or key.endswith(p[1:]))) for p in self.overrides
        )


@dataclass(slots=True, unsafe_hash=True)
class Framework:
    name: str
    default_timeout: float | None  # seconds
    tokens: frozenset[str]
    flags: frozenset[str]


@dataclass(slots=True, unsafe_hash=True)
class Catalogue:
    gpu_resources: tuple[str, ...]
    accelerator_resources: tuple[str, ...]  # GPU resources included
    frameworks: tuple[Framework, ...]
    knobs: tuple[Knob, ...]
    # setting -> its knobs in catalogue order: every container asks for several settings
    _by_setting: dict[str, tuple[Knob, ...]] = field(init=False, repr=False, compare=False)
    # The knobs read as values (neither a declaration nor text), by each flag and variable that sets one,
    # and those with overrides: every container looks for them, and most carry few or none.
    _by_name: Mapping[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _by_flag: Mapping[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _overridden: tuple[int, ...] = field(init=False, repr=False, compare=False)
    # resource name -> (a GPU, an accelerator): every container asks of each of its resources, by globs,
    # and a cluster names few resources (bounded all the same: names come from the objects read)
    _kinds: dict[str, tuple[bool, bool]] = field(init=False, repr=False, compare=False)
    # word (a token or its base name) and flag -> the first framework, in catalogue order, that names it
    _framework_words: dict[str, int] = field(init=False, repr=False, compare=False)
    _framework_flags: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        grouped: dict[str, list[Knob]] = {}
        for knob in self.knobs:
            grouped.setdefault(knob.setting, []).append(knob)
        object.__setattr__(self, "_by_setting", {k: tuple(v) for k, v in grouped.items()})
        by_flag: dict[str, list[int]] = {}
        by_name: dict[str, list[int]] = {}
        valued = [(i, k) for i, k in enumerate(self.knobs) if not k.annotation and not k.textual]
        for index, knob in valued:
            for flag in knob.flags:
                by_flag.setdefault(flag, []).append(index)
            for name in knob.env:
                by_name.setdefault(name, []).append(index)
        object.__setattr__(self, "_by_flag", {k: tuple(v) for k, v in by_flag.items()})
        object.__setattr__(self, "_by_name", {k: tuple(v) for k, v in by_name.items()})
        object.__setattr__(self, "_overridden", tuple(i for i, k in valued if k.overrides))
        object.__setattr__(self, "_kinds", {})
        words: dict[str, int] = {}
        flags: dict[str, int] = {}
        for index, each in enumerate(self.frameworks):
            for word in each.tokens:
                words.setdefault(word, index)
            for flag in each.flags:
                flags.setdefault(flag, index)
        object.__setattr__(self, "_framework_words", words)
        object.__setattr__(self, "_framework_flags", flags)

    def by_setting(self, setting: str) -> tuple[Knob, ...]:
        return self._by_setting.get(setting, ())

    def valued(self, flags: Iterable[str], names: Iterable[str], overrides: bool) -> list[Knob]:
        """The knobs read as values that some form among `flags`, variable `names` or, with `overrides`,
        an override may set; in catalogue order."""
        found: set[int] = set()
        for flag in self._by_flag.keys() & flags:
            found.update(self._by_flag[flag])
        for name in self._by_name.keys() & names:
            found.update(self._by_name[name])
        if overrides:
            found.update(self._overridden)
        return [self.knobs[i] for i in sorted(found)]

    def framework_of(self, words: Sequence[str]) -> Framework | None:
        """The first framework, in catalogue order, that one of a command line's words names: the word or
        its base name (`/usr/bin/torchrun`) among its tokens, or, for a flag, its name among its flags."""
        frameworks, by_word, by_flag = self.frameworks, self._framework_words, self._framework_flags
        none = first = len(frameworks)
        for text in words:
            found = by_word.get(text, none)
            if found < first:
                first = found
            slash = text.rfind("/")
            if slash >= 0:
                found = by_word.get(text[slash + 1 :], none)
                if found < first:
                    first = found
            if text.startswith("-"):
                found = by_flag.get(text.partition("=")[0], none)
                if found < first:
                    first = found
        return frameworks[first] if first < none else None

    def is_gpu(self, resource: str) -> bool:
        return self._kind(resource)[0]

    def is_accelerator(self, resource: str) -> bool:
        return self._kind(resource)[1]

    def _kind(self, resource: str) -> tuple[bool, bool]:
        found = self._kinds.get(resource)
        if found is None:
            gpu, accelerator = self.gpu_resources, self.accelerator_resources
            found = (globs.matches(resource, gpu), globs.matches(resource, accelerator))
            if len(self._kinds) < _KINDS_KEPT:
                self._kinds[resource] = found
        return found


def _knob(raw: Mapping[str, Any]) -> Knob:
    only = raw.get("onlyIf")
    return Knob(
        setting=raw["setting"],
        framework=raw.get("framework"),
        flags=frozenset(raw.get("flags", ())),
        overrides=tuple(raw.get("overrides", ())),
        env=frozenset(raw.get("env", ())),
        annotation=raw.get("annotation"),
        unit=raw.get("unit"),
        disabled_by=frozenset(v.lower() for v in raw.get("disabledBy", ())),
        unbounded_by=frozenset(v.lower() for v in raw.get("unboundedBy", ())),
        requires=frozenset(raw.get("requires", ())),
        under=(frozenset(raw["under"]["flags"]), raw["under"]["default"]) if "under" in raw else None,
        framework_defaults=dict(raw.get("frameworkDefaults", {})),
        only_if=OnlyIf(
            frozenset(only["flags"]), frozenset(v.lower() for v in only["values"]), bool(only.get("orUnset"))
        )
        if only
        else None,
    )


def _framework(raw: Mapping[str, Any], source: str) -> Framework:
    timeout = raw.get("defaultTimeout")
    try:
        seconds = durations.parse_go(timeout) if timeout else None
    except ValueError as err:
        raise PolicyError(f"{source}: framework {raw['name']!r}: {err}") from err
    return Framework(raw["name"], seconds, frozenset(raw.get("tokens", ())), frozenset(raw.get("flags", ())))


def merge(documents: Iterable[tuple[str, Mapping[str, Any]]]) -> Catalogue:
    """Later files add resources, knobs and frameworks; a later framework of the same name replaces one."""
    gpu: list[str] = []
    accel: list[str] = []
    frameworks: dict[str, Framework] = {}
    knobs: list[Knob] = []
    for source, doc in documents:
        resources = doc.get("resources", {})
        gpu += [r for r in resources.get("gpu", ()) if r not in gpu]
        accel += [r for r in resources.get("accelerator", ()) if r not in accel]
        for raw in doc.get("frameworks", ()):
            frameworks[raw["name"]] = _framework(raw, source)
        knobs += [_knob(raw) for raw in doc.get("knobs", ())]
    return Catalogue(
        tuple(gpu), tuple(gpu + [a for a in accel if a not in gpu]), tuple(frameworks.values()), tuple(knobs)
    )


def load(extra_files: Sequence[str] = ()) -> Catalogue:
    """The bundled catalogue plus users' files, each checked against the knob catalogue schema (the bundled
    one by the test suite, tests/test_schema.py)."""
    bundled = files("kubegap.policies").joinpath("knobs.yaml").read_text("utf-8")
    documents = [("policies/knobs.yaml", schema.parse(bundled, "knobs", "policies/knobs.yaml", False))]
    documents += [(path, schema.load(path, "knobs")) for path in extra_files]
    return merge(documents)

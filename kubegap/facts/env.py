"""A container's environment as its processes see it, with every value that cannot be seen marked.

Order of precedence, lowest first: `envFrom` sources in order, `env` entries, then what the command line
sets (`export NAME=VALUE` and `NAME=VALUE cmd` in a shell script), then `mpirun -x` forwarded by any
container of the workload (mpirun starts the ranks on the workers, RULES.md §1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubegap import raw
from kubegap.facts.argv import Assignment
from kubegap.fieldpath import FieldPath

ConfigMaps = Mapping[tuple[str, str], Mapping[str, str]]


@dataclass(slots=True, unsafe_hash=True, init=False)
class Variable:
    name: str
    value: str | None  # None when the value cannot be seen
    path: FieldPath  # absolute path of the field that sets it
    source: str  # "env", "ConfigMap ns/name", "Secret name", "export", "mpirun -x", …

    # written out, for mypyc to compile (kubegap.records)
    def __init__(self, name: str, value: str | None, path: FieldPath, source: str) -> None:
        self.name, self.value, self.path, self.source = name, value, path, source


@dataclass(slots=True, unsafe_hash=True, init=False)
class Environment:
    variables: dict[str, Variable]  # the effective entry per name (a dict: compiled code reads it directly)
    unresolved: tuple[str, ...]  # human descriptions of sources whose contents are unknown

    def __init__(self, variables: dict[str, Variable], unresolved: tuple[str, ...]) -> None:
        self.variables, self.unresolved = variables, unresolved  # written out (kubegap.records)

    def value(self, name: str) -> str | None:
        var = self.variables.get(name)
        return var.value if var else None


SOURCED: Final = "script sources"
# Where a source's entries go: the variables by name (a later one of a name replaces it), and the
# descriptions of what cannot be seen, in order.
_Found = tuple[dict[str, Variable], list[str]]


def _ref(source: Any) -> tuple[str, str]:
    source = raw.mapping(source)
    return str(source.get("name", "")), str(source.get("key", ""))


def _from_env_from(
    entries: Sequence[Any], base: FieldPath, namespace: str, configmaps: ConfigMaps, out: _Found
) -> None:
    variables, unresolved = out
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            continue
        path = (*base, "envFrom", index)
        prefix = str(entry.get("prefix") or "")
        if isinstance(entry.get("configMapRef"), Mapping):
            name, _ = _ref(entry["configMapRef"])
            data = configmaps.get((namespace, name))
            if data is None:
                unresolved.append(f"envFrom ConfigMap {namespace}/{name} (not available)")
                continue
            for key, value in data.items():
                variables[prefix + key] = Variable(
                    prefix + key, str(value).strip(), path, f"ConfigMap {namespace}/{name}"
                )
        elif isinstance(entry.get("secretRef"), Mapping):
            unresolved.append(f"envFrom Secret {_ref(entry['secretRef'])[0]} (never read)")


def _from_env(
    entries: Sequence[Any], base: FieldPath, namespace: str, configmaps: ConfigMaps, out: _Found
) -> None:
    variables, unresolved = out
    for index, each in enumerate(entries):
        entry = raw.mapping(each)  # a dict, read without looking `get` up by name (compiled)
        if not isinstance(entry.get("name"), str):
            continue
        name, path = entry["name"], (*base, "env", index)
        if "valueFrom" not in entry:
            value = entry.get("value", "")
            variables[name] = Variable(name, "" if value is None else str(value).strip(), path, "env")
            continue
        source = raw.mapping(entry["valueFrom"])
        if isinstance(source.get("configMapKeyRef"), Mapping):
            cm, key = _ref(source["configMapKeyRef"])
            data = configmaps.get((namespace, cm))
            if data is not None and key in data:
                variables[name] = Variable(name, str(data[key]).strip(), path, f"ConfigMap {namespace}/{cm}")
                continue
            variables[name] = Variable(name, None, path, f"ConfigMap {namespace}/{cm}")
            unresolved.append(f"env {name} from ConfigMap {namespace}/{cm} key {key} (not available)")
        else:
            kind = next(iter(source), "valueFrom")
            label = {"secretKeyRef": "Secret", "fieldRef": "field", "resourceFieldRef": "resource"}.get(
                kind, kind
            )
            detail = _ref(source.get(kind))[0] if kind == "secretKeyRef" else ""
            variables[name] = Variable(name, None, path, f"{label} {detail}".strip())
            unresolved.append(
                f"env {name} from {label} {detail}".rstrip() + (" (never read)" if label == "Secret" else "")
            )


def resolve(
    container: Mapping[str, Any],
    path: FieldPath,
    namespace: str,
    configmaps: ConfigMaps,
    script: Sequence[Assignment] = (),
    forwarded: Sequence[Variable] = (),
    sourced: Sequence[str] = (),
) -> Environment:
    variables: dict[str, Variable] = {}
    # a file the script sources may set any variable: like an unreadable envFrom, its names are unknown
    unresolved: list[str] = [f"{SOURCED} {name} (its variables cannot be seen)" for name in sourced]
    # envFrom first, then env: a later entry of a name replaces an earlier one, as in the kubelet
    _from_env_from(raw.items(container.get("envFrom")), path, namespace, configmaps, (variables, unresolved))
    _from_env(raw.items(container.get("env")), path, namespace, configmaps, (variables, unresolved))
    for assignment in script:
        variables[assignment.name] = Variable(
            assignment.name, (assignment.value or "").strip(), (*path, *assignment.path), assignment.how
        )
    for variable in forwarded:
        variables[variable.name] = variable
    return Environment(variables, tuple(unresolved))

"""The policy model (frozen dataclasses) and loading: JSON Schema first, then every CEL expression is
compiled once, so a broken policy stops the run at start-up with the file, validation and expression named."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final

from kubegap import durations, globs, schema
from kubegap.enginerules import POLICY_RULES
from kubegap.errors import PolicyError
from kubegap.facts import reads
from kubegap.findings import Severity

# Rules the engine itself reports under a policy (RULES.md §1 and §3).
EXEMPTION_PREFIX: Final = "ignore.kubegap.dev/"


@dataclass(frozen=True, slots=True)
class Param:
    """A policy parameter: its type, default and description (`--set POLICY.NAME=VALUE`)."""

    name: str
    type: str  # duration | int | number | string | list | globs | bool | intMap
    default: Any  # already converted, as CEL sees it
    description: str = ""


@dataclass(frozen=True, slots=True)
class Reference:
    """What a policy cites: an incident, a document, an upstream issue."""

    kind: str
    title: str
    id: str | None = None
    url: str | None = None

    def label(self) -> str:
        return f"{self.id}: {self.title}" if self.id else self.title

    def markdown(self) -> str:
        return f"[{self.label()}]({self.url})" if self.url else self.label()


@dataclass(frozen=True, slots=True)
class Variable:
    """A named CEL value a policy's validations of one scope share, evaluated once per unit."""

    name: str
    expression: str
    scope: str


@dataclass(frozen=True, slots=True)
class Validation:
    """One rule of a policy: its verdict, where it applies, its message and fix."""

    name: str
    expression: str
    severity: Severity
    scope: str
    description: str = ""
    message: str | None = None
    message_expression: str | None = None
    field_path_expression: str | None = None
    applies_to: str | None = None
    remediation: str | None = None
    impact_term: str | None = None  # the cost-model term its fix changes (docs/cost-model.md)
    impact_param: str | None = None  # the duration parameter that holds the compliant value
    impact_unpriced: str | None = None  # why the model cannot price the rule, said in its findings


@dataclass(frozen=True, slots=True)
class Policy:
    """A policy file as loaded and checked against its schema."""

    id: str
    title: str
    description: str
    severity: Severity
    scope: str
    applies_to: str | None
    params: tuple[Param, ...]
    variables: tuple[Variable, ...]
    validations: tuple[Validation, ...]
    remediation: str
    references: tuple[Reference, ...]
    declarations: tuple[str, ...]
    source: str  # the file it was read from
    severity_from_impact: bool = False  # priced failing findings take the severity their fix is worth

    def param(self, name: str) -> Param:
        for param in self.params:
            if param.name == name:
                return param
        known = ", ".join(p.name for p in self.params) or "none"
        raise PolicyError(f"policy {self.id} has no parameter {name!r} (parameters: {known})")


def param_text(param: Param, value: Any) -> str:
    """A parameter value as people write it: `30m`, `rdma/*, vpc.amazonaws.com/efa`, `true`."""
    if param.type == "duration":
        return durations.format_seconds(float(value))
    if param.type in ("list", "globs"):
        return ", ".join(str(v) for v in value)
    if param.type == "intMap":
        return ", ".join(f"{k}:{v}" for k, v in value.items()) or "{}"
    return str(value).lower() if isinstance(value, bool) else str(value)


_PLACEHOLDER = re.compile(r"\{params\.([A-Za-z_][A-Za-z0-9_]*)\}")


def fill(text: str, policy: Policy, values: Mapping[str, Any]) -> str:
    """A fix text with its `{params.NAME}` placeholders replaced by the values in force (durations in
    words: `at most {params.maxCollectiveTimeout}` -> `at most 20 minutes` under `--set ...=20m`)."""

    def value(match: re.Match[str]) -> str:
        param = policy.param(match[1])
        if param.type == "duration":
            return durations.words(float(values[param.name]))
        return param_text(param, values[param.name])

    return _PLACEHOLDER.sub(value, text)


def _check_placeholders(policy: Policy) -> None:
    texts = [policy.remediation, *(v.remediation for v in policy.validations if v.remediation)]
    for text in texts:
        for name in _PLACEHOLDER.findall(text):
            try:
                policy.param(name)
            except PolicyError as err:
                raise PolicyError(f"{policy.source}: remediation {{params.{name}}}: {err}") from None


def cel_value(param_type: str, value: Any) -> Any:
    """What CEL sees: globs become one RE2 pattern anchored per line, tested with `name.matches(params.x)`
    or, for many names at once, against a text of one name per line (the `...Text` facts): one regular
    expression run instead of one per name, and no Python callback (cel-expr leaks memory on each)."""
    if param_type != "globs":
        return value
    return globs.pattern(value)


def convert_param(param_type: str, value: Any) -> Any:
    """A parameter value as CEL sees it; accepts YAML values and `--set` text. Raises ValueError."""
    text = value if isinstance(value, str) else None
    if isinstance(value, bool) and param_type in ("duration", "number"):  # YAML `true` is not 1 second
        raise ValueError(f"{value!r} is not a {param_type}")
    if param_type == "duration":
        return durations.parse_go(text) if text is not None else float(value)
    if param_type == "int":
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError(f"{value!r} is not an integer")
        return int(value)
    if param_type == "number":
        return float(value)
    if param_type == "bool":
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ValueError(f"{value!r} is not true or false")
    if param_type in ("list", "globs"):
        items = value if isinstance(value, list) else [s.strip() for s in str(value).split(",") if s.strip()]
        return [str(i) for i in items]
    if param_type == "intMap":
        return _int_map(value)
    return str(value)


def _int_map(value: Any) -> dict[str, int]:
    """A map of names to counts of at least 1: a YAML mapping, or `--set` text `p5.48xlarge:32,8:8`
    (keys may be numbers: a GPU count `8` is the key "8"). Raises ValueError."""
    if isinstance(value, str):
        pairs = [item.rpartition(":") for item in value.split(",") if item.strip() not in ("", "{}")]
        if any(not sep for _, sep, _ in pairs):
            raise ValueError(f"{value!r} is not a list of NAME:COUNT pairs (p5.48xlarge:32,8:8)")
        value = {key.strip(): count.strip() for key, _, count in pairs}
    if not isinstance(value, Mapping):
        raise ValueError(f"{value!r} is not a map of names to counts")
    out: dict[str, int] = {}
    for key, count in value.items():
        name = str(key).strip() if isinstance(key, str | int) and not isinstance(key, bool) else ""
        if not name:
            raise ValueError(f"key {key!r} is not a name or a count")
        try:
            number = convert_param("int", count.strip() if isinstance(count, str) else count)
        except ValueError:
            number = 0
        if number < 1:
            raise ValueError(f"{name}: {count!r} is not a whole count of at least 1")
        out[name] = number
    return out


def _params(raw: Mapping[str, Any], source: str, policy_id: str) -> tuple[Param, ...]:
    out = []
    for name, spec in raw.items():
        try:
            default = convert_param(spec["type"], spec["default"])
        except (ValueError, TypeError) as err:
            raise PolicyError(f"{source}: policy {policy_id}: parameter {name}: bad default: {err}") from None
        out.append(Param(name, spec["type"], default, spec.get("description", "")))
    return tuple(out)


def _policy(doc: Mapping[str, Any], source: str, checked: bool = True) -> Policy:
    spec, pid = doc["spec"], doc["metadata"]["name"]
    severity, scope = Severity(spec["severity"]), spec["scope"]
    validations = tuple(
        Validation(
            name=v["name"],
            expression=v["expression"],
            severity=Severity(v.get("severity", severity.value)),
            scope=v.get("scope", scope),
            description=v.get("description", ""),
            message=v.get("message"),
            message_expression=v.get("messageExpression"),
            field_path_expression=v.get("fieldPathExpression"),
            applies_to=v.get("appliesTo"),
            remediation=v.get("remediation"),
            impact_term=v.get("impact", {}).get("term"),
            impact_param=v.get("impact", {}).get("param"),
            impact_unpriced=v.get("impact", {}).get("unpriced"),
        )
        for v in spec["validations"]
    )
    names = [v.name for v in validations]
    duplicates = sorted({n for n in names if names.count(n) > 1} | {n for n in names if n in POLICY_RULES})
    if duplicates:
        raise PolicyError(
            f"{source}: policy {pid}: validation names repeated or reserved: {', '.join(duplicates)}"
        )
    policy = Policy(
        id=pid,
        title=spec["title"],
        description=spec.get("description", "").strip(),
        severity=severity,
        scope=scope,
        applies_to=spec.get("appliesTo"),
        params=_params(spec.get("params", {}), source, pid),
        variables=tuple(
            Variable(v["name"], v["expression"], v.get("scope", scope)) for v in spec.get("variables", ())
        ),
        validations=validations,
        remediation=spec["remediation"].strip(),
        references=tuple(
            Reference(r["kind"], r["title"], r.get("id"), r.get("url")) for r in spec.get("references", ())
        ),
        declarations=tuple(spec.get("declarations", ())),
        source=source,
        severity_from_impact=bool(spec.get("severityFromImpact", False)),
    )
    _check_impact(policy)
    _check_placeholders(policy)
    if checked:
        reads.check(policy)  # every fact, parameter and variable an expression reads exists
    return policy


def _check_impact(policy: Policy) -> None:
    """An impact parameter must exist and be a duration: the fix sets the model term to its value."""
    for v in policy.validations:
        if v.impact_param is None:
            continue
        param = next((p for p in policy.params if p.name == v.impact_param), None)
        if param is None or param.type != "duration":
            raise PolicyError(
                f"{policy.source}: policy {policy.id}, validation {v.name}: impact.param "
                f"{v.impact_param!r} is not a duration parameter of the policy"
            )


def _policy_files(root: Traversable | Path) -> Iterator[tuple[str, Traversable | Path]]:
    """(name, file): `<policy-id>/policy.yaml` folders, or loose `*.yaml` policy files in the folder."""
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.is_dir() and entry.joinpath("policy.yaml").is_file():
            yield f"{entry.name}/policy.yaml", entry.joinpath("policy.yaml")
        elif entry.is_file() and entry.name.endswith((".yaml", ".yml")) and entry.name != "knobs.yaml":
            yield entry.name, entry


def load_dir(root: Traversable | Path, label: str, checked: bool = True) -> list[Policy]:
    policies = []
    for name, path in _policy_files(root):
        source = f"{label}/{name}"
        document = schema.parse(path.read_text("utf-8"), "policy", source, checked)
        policies.append(_policy(document, source, checked))
    return policies


def load(extra_dirs: Sequence[str] = ()) -> list[Policy]:
    """Bundled policies, then users' folders; a user policy with a bundled id replaces it. The bundled
    policies are checked against their schema (tests/test_schema.py) and their reads against the facts
    contract (tests/test_contract.py) by the test suite, not at every start: the second builds a CEL parser
    and parses every expression, half a second."""
    bundled = load_dir(files("kubegap.policies"), "policies", checked=False)
    by_id: dict[str, Policy] = {p.id: p for p in bundled}
    for directory in extra_dirs:
        root = Path(directory)
        if not root.is_dir():
            raise PolicyError(f"{directory}: not a folder of policies")
        for policy in load_dir(root, directory.rstrip("/")):
            by_id[policy.id] = policy
    return list(by_id.values())

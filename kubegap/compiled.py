"""Policies ready to run: selected, parameters resolved, every CEL expression proven to compile at start-up.

Each scope's validations of a policy compile as one expression (`Batch`), and that proves each part that
stands on its own in it: such a part is compiled alone only when it first runs alone (`cel.Deferred`),
which most never do, since the scope's one program answers for them (kubegap.batch). Any other part is
compiled at once, so a policy whose CEL does not compile still fails to load, naming the expression.
An expression cel-expr compiled when kubegap/fastahead.py was written (the bundled policies', as the
default settings load them) is proven already: it too waits until it first runs.

Compiled with the per-object path (setup.py): judging reads these records' fields for every validation of
every unit, which from compiled code costs a generic attribute lookup on a Python class (2-3% of a typical
object's time, measured). So they take the form mypyc compiles as a dataclass, not frozen
(kubegap.records); nothing assigns to one once built."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from kubegap import celcost, celparse, fastahead, fastcel
from kubegap.cel import Backend, CelError, Deferred, Program
from kubegap.config import Settings
from kubegap.errors import PolicyError, UsageError
from kubegap.facts import reads
from kubegap.findings import Check, Severity
from kubegap.policy import (
    EXEMPTION_PREFIX,
    Policy,
    Validation,
    Variable,
    cel_value,
    convert_param,
    fill,
    param_text,
)


@dataclass(slots=True, unsafe_hash=True)
class CompiledValidation:
    validation: Validation
    expression: Program
    applies_to: Program | None
    message_expression: Program | None
    field_path: Program | None
    check: Check  # what each of its results reports (policy, rule, severity, fix), built once
    # `validation.scope`, read for every policy of every object: an attribute compiled code reads directly
    # (a Validation is a plain Python object); its name is `check.rule`
    scope: str
    # whether a value kubegap cannot see could change its verdict: only then are unseen sources listed
    reads_values: bool = True
    # whether its message or field path may read a unit's role or a path (kubegap.facts.reads.names_place):
    # only then does a twin template's failure compose its own rather than take its first twin's
    text_placed: bool = True

    @property
    def severity(self) -> Severity:
        return self.validation.severity

    @property
    def remediation(self) -> str:
        """The fix, with the parameters in force filled in."""
        return self.check.remediation


@dataclass(slots=True, unsafe_hash=True)
class CompiledPolicy:
    policy: Policy
    params: Mapping[str, Any]  # resolved values, as the catalogue shows them
    cel_params: Mapping[str, Any]  # what CEL sees as `params`
    params_text: Mapping[str, str]  # `paramsText`: each value as people write it, for messages
    applies_to: Program | None
    variables: tuple[tuple[Variable, Program], ...]
    validations: tuple[CompiledValidation, ...]
    # the annotation that exempts a unit, looked up in every unit's annotations: one text, its hash kept
    exemption_key: str
    # ids of the programs that read `variables`: only they need the activation that carries them
    variable_users: frozenset[int] = frozenset()
    remediation: str = ""  # the policy's fix text, parameters filled in
    batches: Mapping[str, Batch] = field(default_factory=dict)  # scope -> its validations in one program
    # workload facts the policy's appliesTo requires, each a term of its top-level `&&` (`gates`)
    gates: tuple[str, ...] = ()


@dataclass(slots=True, unsafe_hash=True)
class Batch:
    """A policy's validations of one scope as one CEL expression over one unit (kubegap.batch runs it over
    every unit of the scope at once). It gives `[]` where the policy's appliesTo does not hold, else one list
    per validation: `[]` where its appliesTo does not hold, `[verdict]` where it holds, and for a failure
    `[false, message, field path]` (each `false` where the validation has none: never null, which
    cel-expr-python 0.1.3 hands back with one reference to Python's None too few, so that a process that
    returns enough nulls crashes), so messages and paths are evaluated only for failures."""

    source: str
    costs: tuple[celcost.Cost, ...]  # of its parts that iterate, each checked against the budget alone
    texts_placed: frozenset[str] = frozenset()  # validations whose message or path reads a unit's place
    names: tuple[str, ...] = ()  # the validations' names, in order


@dataclass(slots=True, unsafe_hash=True)
class Guarded:
    """A compiled expression with its cost estimate, checked against the budget before each evaluation."""

    program: Program
    cost: celcost.Cost

    def __call__(self, activation: Any) -> Any:
        return self.program(activation)


def _compile(
    backend: Backend, policy: Policy, where: str, source: str | None, proven: Set[str]
) -> Program | None:
    """`source`'s program; compiled when first run where `proven` holds it (it compiled in a batch), else
    now, so that an expression that does not compile fails the load."""
    if source is None:
        return None
    program: Program
    if source in proven or _compiled_ahead(backend, source):
        program = Deferred(backend, source)
    else:
        try:
            program = backend.compile(source)
        except CelError as err:
            raise PolicyError(
                f"{policy.source}: policy {policy.id}, {where}: CEL does not compile ({backend.name}):\n"
                f"  expression: {source}\n  error: {err}"
            ) from None
    cost = celcost.estimate(source)
    if cost.at(celcost.ASSUMED_ITEMS) > celcost.ESTIMATE_LIMIT:
        raise PolicyError(
            f"{policy.source}: policy {policy.id}, {where}: CEL expression is too expensive: "
            f"{cost.describe(celcost.ASSUMED_ITEMS)}, over the limit of {celcost.ESTIMATE_LIMIT:,} "
            f"(each nested comprehension multiplies the cost by the list size)\n  expression: {source}"
        )
    return Guarded(program, cost) if cost.degree > 0 else program


def resolve_params(policy: Policy, overrides: Mapping[str, Any]) -> dict[str, Any]:
    params = {p.name: p.default for p in policy.params}
    for name, value in overrides.items():
        try:
            param = policy.param(name)
        except PolicyError as err:  # the policy is fine; the user's --set or config names a wrong param
            raise UsageError(str(err)) from None
        try:
            params[name] = convert_param(param.type, value)
        except (ValueError, TypeError) as err:
            raise UsageError(f"parameter {policy.id}.{name} ({param.type}): {err}") from None
    return params


def select(policies: Sequence[Policy], settings: Settings) -> list[Policy]:
    """The policies to run: `--policy`/`--skip` name a policy (`nccl-timeout`) or one of its rules
    (`nccl-timeout/timeout-bounded`); a rule named in `--policy` brings its policy, with only the rules
    named for it. Unknown ids and rules are usage errors."""
    by_id = {p.id: p for p in policies}
    for entry in (*settings.select, *settings.skip, *settings.params):
        pid, _, rule = entry.partition("/")
        if pid not in by_id:
            raise UsageError(f"unknown policy {pid!r}; known policies: {', '.join(sorted(by_id))}")
        rules = [v.name for v in by_id[pid].validations]
        if rule and rule not in rules:
            raise UsageError(f"policy {pid} has no rule {rule!r}; its rules: {', '.join(rules)}")
    chosen = {entry.partition("/")[0] for entry in settings.select}
    return [p for p in policies if (not settings.select or p.id in chosen) and p.id not in settings.skip]


def selected_rules(policy: Policy, settings: Settings) -> list[Validation]:
    """The policy's validations left after rule-level `--policy` and `--skip` entries."""
    named = {e.partition("/")[2] for e in settings.select if e.startswith(f"{policy.id}/")}
    whole = policy.id in settings.select or not named
    skipped = {e.partition("/")[2] for e in settings.skip if e.startswith(f"{policy.id}/")}
    return [v for v in policy.validations if (whole or v.name in named) and v.name not in skipped]


def _validation(
    backend: Backend, policy: Policy, params: Mapping[str, Any], v: Validation, proven: Set[str]
) -> CompiledValidation:
    return CompiledValidation(
        validation=v,
        expression=_must(_compile(backend, policy, f"validation {v.name}", v.expression, proven)),
        applies_to=_compile(backend, policy, f"validation {v.name} appliesTo", v.applies_to, proven),
        message_expression=_compile(
            backend, policy, f"validation {v.name} messageExpression", v.message_expression, proven
        ),
        field_path=_compile(
            backend, policy, f"validation {v.name} fieldPathExpression", v.field_path_expression, proven
        ),
        check=Check(policy.id, v.name, v.severity, fill(v.remediation or policy.remediation, policy, params)),
        scope=v.scope,
        reads_values=_reads_values(policy, v),
        text_placed=_text_placed(v),
    )


def compile_policies(
    policies: Sequence[Policy], settings: Settings, backend: Backend
) -> list[CompiledPolicy]:
    out = []
    for policy in select(policies, settings):
        params = resolve_params(policy, settings.params.get(policy.id, {}))
        rules = selected_rules(policy, settings)
        batches, proven = _batches(backend, policy, rules)
        validations = tuple(_validation(backend, policy, params, v, proven) for v in rules)
        variables = tuple(
            (v, _must(_compile(backend, policy, f"variable {v.name}", v.expression, proven)))
            for v in policy.variables
        )
        out.append(
            CompiledPolicy(
                policy=policy,
                params=params,
                cel_params={p.name: cel_value(p.type, params[p.name]) for p in policy.params},
                params_text={p.name: param_text(p, params[p.name]) for p in policy.params},
                applies_to=_compile(backend, policy, "appliesTo", policy.applies_to, proven),
                variables=variables,
                validations=validations,
                exemption_key=EXEMPTION_PREFIX + policy.id,
                variable_users=_variable_users(validations),
                remediation=fill(policy.remediation, policy, params),
                batches=batches,
                gates=gates(policy.applies_to),
            )
        )
    return out


def gates(applies_to: str | None) -> tuple[str, ...]:
    """The names of the `facts.<name>` terms of the appliesTo's top-level `&&`. Where one of those facts is
    `false`, CEL's `&&` is `false` whatever its other terms give, errors included (github.com/google/
    cel-spec, doc/langdef.md, "Logical Operators"): the policy does not apply, and nothing of it need run
    (kubegap.judge). Most bundled policies start `facts.training &&`, so a Deployment or a single-GPU
    job skips most of them."""
    if applies_to is None:
        return ()
    try:
        tree = celparse.parse(applies_to)
    except (celparse.Unsupported, RecursionError):  # CEL the fast path's parser does not know: no gate
        return ()
    terms, found = [tree], []
    while terms:
        term = terms.pop()
        if term[0] == "and":
            terms += [term[2], term[1]]
        elif term[0] == "sel" and term[1] == ("id", "facts"):
            found.append(term[2])
    return tuple(found)


def _batches(
    backend: Backend, policy: Policy, validations: Sequence[Validation]
) -> tuple[dict[str, Batch], set[str]]:
    """Scope -> its batch, for the scopes whose validations compile as one; and every expression those
    batches hold that they prove compiles: one that stands on its own within its brackets
    (`celcost.self_contained`). The estimates below may read an expression that does not
    compile (its batch then fails, and the expression is compiled alone): they are never wrong about one
    that does, and raise on none (tests/test_celcost.py)."""
    out = {}
    proven: set[str] = set()
    for scope in dict.fromkeys(v.scope for v in validations):
        members = tuple(v for v in validations if v.scope == scope)
        variables = [v for v in policy.variables if v.scope == scope]
        sources = [s for s in (policy.applies_to, *(v.expression for v in variables)) if s]
        parts = []
        for spec in members:
            own = [s for s in (spec.expression, spec.applies_to) if s]
            if any(_VARIABLES.search(s) and celcost.estimate(s).degree > 0 for s in own):
                break  # its budget depends on the variables' sizes: each validation runs alone
            sources += own
            verdict = _verdict(spec, sources)
            # `== true`: an appliesTo that gives a non-bool does not apply, as when it runs alone
            applies = spec.applies_to
            parts.append(verdict if applies is None else f"({_grouped(applies)} == true ? {verdict} : [])")
        else:
            source = _batch_source(policy.applies_to, variables, parts)
            if not _compiled_ahead(backend, source):
                try:
                    backend.compile(source)
                except CelError:  # each validation is then compiled alone, and runs alone
                    continue
            proven.update(filter(celcost.self_contained, sources))
            costs = tuple(c for c in map(celcost.estimate, sources) if c.degree > 0)
            placed = frozenset(v.name for v in members if _text_placed(v))
            out[scope] = Batch(source, costs, placed, tuple(v.name for v in members))
    return out, proven


def _compiled_ahead(backend: Backend, source: str) -> bool:
    """Whether cel-expr compiled `source` when kubegap/fastahead.py was written: proving it again took 18 ms
    of every start, a tenth of linting one file. tests/test_fastcel.py compiles each again."""
    return backend.name == "cel-expr" and fastcel.digest(source) in fastahead.COMPILED


def _text_placed(v: Validation) -> bool:
    return reads.names_place(v.message_expression) or reads.names_place(v.field_path_expression)


def _verdict(spec: Validation, sources: list[str]) -> str:
    """`[verdict]`, or `[false, message, path]` for a failure: messages and paths are evaluated only where
    the validation fails, in the same call. A message or path whose budget depends on the variables' sizes
    is left out (`[false]`): it is then evaluated alone, as before."""
    texts = (spec.message_expression, spec.field_path_expression)
    if any(t and _VARIABLES.search(t) and celcost.estimate(t).degree > 0 for t in texts):
        failed = "[false]"
    else:
        sources += [t for t in texts if t]
        message, path = (_grouped(t) if t else "false" for t in texts)  # not null: see Batch
        failed = f"[false, {message}, {path}]"
    # bound once; a non-bool stays itself, and the engine reports it as an error
    bound = "kubegapVerdict"
    return f"[{_grouped(spec.expression)}].map({bound}, {bound} == false ? {failed} : [{bound}])[0]"


def _batch_source(applies_to: str | None, variables: Sequence[Variable], parts: Sequence[str]) -> str:
    body = f"[{', '.join(parts)}]"
    if variables:  # each variable once per unit, as a map bound to `variables`
        values = ", ".join(f"{v.name!r}: {_grouped(v.expression)}" for v in variables)
        body = f"[{{{values}}}].map(variables, {body})[0]"
    return body if applies_to is None else f"({_grouped(applies_to)} == true ? {body} : [])"


def _grouped(source: str) -> str:
    return f"(\n{source}\n)"  # own lines: a trailing `//` comment must not swallow what follows


def _variable_users(validations: Sequence[CompiledValidation]) -> frozenset[int]:
    users = set()
    for v in validations:
        spec = v.validation
        for program, source in (
            (v.expression, spec.expression),
            (v.applies_to, spec.applies_to),
            (v.message_expression, spec.message_expression),
            (v.field_path, spec.field_path_expression),
        ):
            if program is not None and source is not None and _VARIABLES.search(source):
                users.add(id(program))
    return frozenset(users)


_VARIABLES = re.compile(r"\bvariables\b")
# Facts that come from env, flags or declarations, which a Secret or an absent ConfigMap can hide.
_VALUE_FACTS = re.compile(
    r"\b(?:container\.(?:env\w*|unresolved\w*|collectiveTimeout|framework)|facts\.checkpoint|object|variables)\b"
)


def _reads_values(policy: Policy, validation: Validation) -> bool:
    """A liveness-probe finding does not depend on an HF_TOKEN from a Secret: list unseen sources only
    where the validation reads a fact they could have set."""
    texts = (policy.applies_to, validation.expression, validation.applies_to, validation.message_expression)
    return any(t is not None and _VALUE_FACTS.search(t) for t in texts)


def _must(program: Program | None) -> Program:
    assert program is not None  # a required expression always compiles to a program or raises
    return program

"""One object's evaluation state: the CEL activations its units share, and each policy's view of a unit.

cel-expr converts an activation's values on first use, and that conversion is most of the time CEL
takes: policies whose parameter names do not clash share one activation per unit, so a container's facts
are converted once, not once per policy.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubegap import batch, celcost, exemptions
from kubegap.cel import Backend, CelError
from kubegap.compiled import CompiledPolicy, CompiledValidation, Guarded
from kubegap.facts import ObjectFacts, Unit
from kubegap.fieldpath import render
from kubegap.findings import Finding, ObjectRef, Place, Where, passed
from kubegap.globbed import Globber
from kubegap.policy import Policy


def expressions(policy: Policy) -> Iterator[str]:
    yield from (e for e in (policy.applies_to,) if e)
    yield from (v.expression for v in policy.variables)
    for v in policy.validations:
        yield from (
            e for e in (v.expression, v.applies_to, v.message_expression, v.field_path_expression) if e
        )


@dataclass(slots=True, unsafe_hash=True)
class Group:
    """Policies whose parameter names do not clash, so one activation can carry all their parameters."""

    params: Mapping[str, Any]
    text: Mapping[str, str]
    reads_object: bool
    items: int = 0  # the longest list or map in params and paramsText, measured once
    globber: Globber | None = None  # its `globs` parameters, matched in Python (kubegap.globbed)
    twins: bool = False  # no verdict reads a unit's place: a twin template's units take their first's


def groups(
    policies: Sequence[CompiledPolicy], readers: frozenset[str], placed: frozenset[str] = frozenset()
) -> dict[int, Group]:
    """Each compiled policy's group (keyed by id): the first group whose parameters it does not clash with.
    `readers` name `object`; `placed` may read where a unit is (kubegap.facts.reads.reads_place)."""
    members: list[list[CompiledPolicy]] = []
    for policy in policies:
        home = next(
            (g for g in members if not any(set(policy.cel_params) & set(o.cel_params) for o in g)), None
        )
        if home is None:
            members.append([policy])
        else:
            home.append(policy)
    out: dict[int, Group] = {}
    for group in members:
        params = {k: v for p in group for k, v in p.cel_params.items()}
        text = {k: v for p in group for k, v in p.params_text.items()}
        reads = any(p.policy.id in readers for p in group)
        globbed = {
            q.name: (p.params[q.name], {v.scope for v in p.policy.validations})
            for p in group
            for q in p.policy.params
            if q.type == "globs"
        }
        items = max(celcost.longest(params), celcost.longest(text))
        twins = not any(p.policy.id in placed for p in group)
        shared = Group(params, text, reads, items, Globber(globbed) if globbed else None, twins)
        out.update({id(p): shared for p in group})
    return out


class Run:
    """One object under evaluation: caches shared by every policy. (A plain class: kubegap.records.)"""

    def __init__(
        self,
        backend: Backend,
        group_of: dict[int, Group],  # compiled policy id -> its group (dicts: read directly when compiled)
        obj: Mapping[str, Any],
        ref: ObjectRef,
        facts: ObjectFacts,
        deadline: float | None,
        scope_programs: dict[tuple[int, str], batch.ScopeProgram],
    ) -> None:
        self.backend, self.group_of, self.obj, self.ref, self.facts = backend, group_of, obj, ref, facts
        self.deadline, self.scope_programs = deadline, scope_programs
        self.converted: dict[int, Any] = {}
        self.outcomes: dict[tuple[int, str], batch.Outcomes | None] = {}  # (group, scope)
        self.batch_activations: dict[int, Any] = {}  # group -> its scope programs' activation
        self.batch_bindings: dict[int, dict[str, Any]] = {}  # group -> the same, plain
        self.batch_fits: dict[int, bool] = {}  # group -> whether CEL takes those as they are
        self.activations: dict[tuple[int, int], tuple[dict[str, Any], Any]] = {}
        # id of a binding -> its longest list or map, and whether CEL takes it as it is (celcost.survey)
        self.sizes: dict[int, tuple[int, bool]] = {}
        self.places: dict[int, tuple[tuple[str, ...], str]] = {}  # id(unit) -> where parts
        # where a pass on a unit is, by whether unseen values are listed and whether it is told for the
        # unit's twins (their roles are the unit's whichever policy tells them): most policies pass
        self.passes: dict[tuple[int, bool, bool], Place] = {}
        self.matched: dict[tuple[int, int], dict[str, list[str]]] = {}  # (group, unit)
        # id of an original unit -> the roles its results are told for (its own, its twins'), on first use
        self.twins: dict[int, tuple[str, ...]] | None = None

    def items(self, value: Any) -> int:
        """The size of the longest list or map in `value` (a binding), measured once per object."""
        return self._survey(value)[0]

    def fits(self, value: Any) -> bool:
        """Whether CEL takes `value` (a binding) as it is, for the fast path (kubegap.fastcel)."""
        return self._survey(value)[1]

    def _survey(self, value: Any) -> tuple[int, bool]:
        key = id(value)
        found = self.sizes.get(key)
        if found is None:
            found = self.sizes[key] = celcost.survey(value)
        return found

    def told_roles(self, unit: Unit) -> tuple[str, ...]:
        """The roles a result of the unit is told for when its twins' are told with it (kubegap.facts.twins,
        RULES.md §4): its own, then its twins' in template order; empty where it has no twin."""
        if self.twins is None:  # asked for about every pass and failure: each unit's answer made once
            told: dict[int, list[str]] = {}
            for units in self.facts.units.values():
                for each in units:
                    original = each.original
                    if original is not None and each.role is not None:
                        told.setdefault(id(original), [original.role or ""]).append(each.role)
            self.twins = {key: tuple(roles) for key, roles in told.items()}
        return self.twins.get(id(unit), ())

    def outcome(self, policy: CompiledPolicy, unit: Unit) -> dict[str, tuple[Any, ...]] | None:
        """The policy's outcomes for the unit from its scope's one program (kubegap.batch), run once per
        object; None where that program cannot answer."""
        group = self.group_of[id(policy)]
        key = (id(group), unit.scope)
        if key not in self.outcomes:
            self.outcomes[key] = batch.evaluate(self, group, unit.scope)
        found = self.outcomes[key]
        if found is None:
            return None
        own = found.get((id(policy), id(unit)))
        if own is None and unit.original is not None and group.twins:
            own = batch.twin_outcome(found, policy, unit)
            if own is not None:
                found[(id(policy), id(unit))] = own
        return own

    def globbed(self, group: Group, unit: Unit) -> dict[str, list[str]] | None:
        """The unit's `globbed` binding for the group; None where the group has no `globs` parameter."""
        if group.globber is None:
            return None
        key = (id(group), id(unit))
        if key not in self.matched:
            self.matched[key] = group.globber.names(unit.scope, {"facts": self.facts.facts, **unit.bindings})
        return self.matched[key]

    def convert(self, value: Any) -> Any:
        key = id(value)
        if key not in self.converted:
            self.converted[key] = self.backend.convert(value)
        return self.converted[key]

    def activation(self, group: Group, unit: Unit) -> tuple[dict[str, Any], Any]:
        """The unit's bindings and CEL activation, shared by the policies of one group: cel-expr converts
        an activation's values on first use, so sharing it converts a container's facts once, not once
        per policy (the bulk of evaluation time)."""
        key = (id(group), id(unit))
        if key not in self.activations:
            bindings = {
                "facts": self.facts.facts,
                "params": group.params,
                "paramsText": group.text,
                **unit.bindings,
            }
            if group.reads_object:  # unread, a deep object need not be converted
                bindings["object"] = self.obj
            globbed = self.globbed(group, unit)
            if globbed is not None:
                bindings["globbed"] = globbed
            converted = {name: self.convert(value) for name, value in bindings.items()}
            self.activations[key] = (converted, self.backend.activation(converted))
        return self.activations[key]

    def where(
        self, unit: Unit | None, path: str | None, lists_unresolved: bool = True, roles: tuple[str, ...] = ()
    ) -> Where:
        """A result's place in this object: the unit's role and container, the path, and what the unit
        could not see (`lists_unresolved=False`: no unseen value could change this result); and the roles
        it is told for (`told_roles`)."""
        key = id(unit)
        if key not in self.places:
            self.places[key] = (tuple(_unresolved(unit, self.facts)), _scope(unit, self.ref, self.facts))
        unresolved, scope = self.places[key]
        return {
            "role": unit.role if unit else None,
            "container": unit.container if unit else None,
            "path": path,
            "unresolved": unresolved if lists_unresolved else (),
            "scope": scope,
            "roles": roles,
        }

    def pass_place(self, unit: Unit, lists_unresolved: bool, roles: tuple[str, ...]) -> Place:
        """`where` a pass on the unit is, at the unit's own path (kubegap.findings.passed)."""
        key = (id(unit), lists_unresolved, bool(roles))
        place = self.passes.get(key)
        if place is None:
            where = self.where(unit, unit.default_path or None, lists_unresolved)
            role, container, path = where["role"], where["container"], where["path"]
            place = self.passes[key] = (role, container, path, where["unresolved"], where["scope"], roles)
        return place


_SCOPES: Final = {"node": "node", "cluster-node": "cluster", "pool": "cluster"}


def _scope(unit: Unit | None, ref: ObjectRef, facts: ObjectFacts) -> str:
    """The finding's scope (RULES.md §4); an engine rule without a unit is the object's, or the cluster's
    where the facts are a cluster unit's (facts/cluster.py: a GPU node with its pods, a pool)."""
    if unit is not None:
        return _SCOPES.get(unit.scope, "workload")
    if any(_SCOPES.get(scope) == "cluster" for scope in facts.units):
        return "cluster"
    return "node" if ref.kind == "Node" and ref.api_version == "v1" else "workload"


def _unresolved(unit: Unit | None, facts: ObjectFacts) -> list[str]:
    if unit is not None and "container" in unit.bindings:
        return list(unit.bindings["container"]["unresolved"])
    return list(facts.unresolved) if unit is not None and unit.scope == "workload" else []


class UnitState:
    """A policy's view of one unit: its CEL activation, applicability, exemption and variables."""

    def __init__(self, run: Run, policy: CompiledPolicy, unit: Unit) -> None:
        self.run, self.policy, self.unit = run, policy, unit
        # built on first use: where the scope's one program answers, the unit needs no activation of its own
        self._bindings: Mapping[str, Any] | None = None
        self._base: Any = None
        self._own: Any = None  # the activation with this policy's variables, once they are evaluated
        self.variable_error: str | None = None
        self._variables_done = False
        self._policy_applies: bool | None = None
        self._items: int | None = None  # the longest list or map the unit's expressions can see
        self._outcomes: dict[str, tuple[Any, ...]] | None = None
        self._batched = False
        self._exemptions: tuple[list[exemptions.Exemption], dict[str, tuple[str, str]]] | None = None

    def _share(self) -> None:
        if self._bindings is None:
            self._bindings, self._base = self.run.activation(self.run.group_of[id(self.policy)], self.unit)

    @property
    def bindings(self) -> Mapping[str, Any]:
        self._share()
        assert self._bindings is not None
        return self._bindings

    @property
    def base(self) -> Any:
        self._share()
        return self._base

    @property
    def activation(self) -> Any:
        return self._own if self._own is not None else self.base

    def policy_applies(self) -> bool:
        """The policy's own appliesTo, once per unit (every validation of the unit asks)."""
        if self._policy_applies is None:
            self._policy_applies = self.applies(self.policy.applies_to)
        return self._policy_applies

    def outcomes(self) -> dict[str, tuple[Any, ...]] | None:
        """Rule -> `()` where its appliesTo does not hold, `(verdict,)` otherwise; `{}` where the policy does
        not apply. None where the scope's one program cannot answer: then each validation runs alone and
        reports its own error."""
        if not self._batched:
            self._batched = True
            self._outcomes = self.run.outcome(self.policy, self.unit)
            if self._outcomes is not None:
                self._policy_applies = bool(self._outcomes)
        return self._outcomes

    def applies(self, program: Any) -> bool:
        return program is None or self.check(program) is True

    def check(self, program: Any) -> Any:
        if id(program) not in self.policy.variable_users:
            return self._run(program, self.base)  # the activation shared with the group's policies
        self.ensure_variables()
        if self.variable_error:
            raise CelError(self.variable_error)
        return self._run(program, self.activation)

    def _run(self, program: Any, activation: Any) -> Any:
        """Evaluate within the budgets: neither runtime can stop an expression once it runs, so one whose
        estimate for the lists at hand is over budget, or one reached after the deadline, is not started."""
        if isinstance(program, Guarded):
            if self._items is None:  # measured once per unit (again once variables join the bindings)
                self._items = max((self.run.items(value) for value in self.bindings.values()), default=0)
            items = self._items
            budget = self.run.backend.cost_budget
            if program.cost.at(items) > budget:
                raise CelError(
                    f"over the CEL cost budget: {program.cost.describe(items)}, more than the "
                    f"{budget:,} per expression {self.run.backend.name} allows"
                )
        if self.run.deadline is not None and time.monotonic() > self.run.deadline:
            raise CelError("not evaluated: the evaluation of the object ran past its deadline")
        return program(activation)

    def ensure_variables(self) -> None:
        if self._variables_done:
            return
        self._variables_done = True
        values: dict[str, Any] = {}
        for variable, program in self.policy.variables:
            if variable.scope != self.unit.scope:
                continue
            try:
                values[variable.name] = self._run(program, self.base)
            except CelError as err:
                self.variable_error = f"variable {variable.name}: {err}"
                return
        if values:  # this policy's own activation from here on: its variables are its own
            self._bindings = {**self.bindings, "variables": self.run.backend.convert(values)}
            self._items = None
            self._own = self.run.backend.activation(self._bindings)

    def unexempted(self) -> bool:
        """Whether no exemption on the unit names the policy (valid or not): most units, most policies."""
        if self._exemptions is None:
            self._exemptions = self._read_exemptions()
        return not (self._exemptions[0] or self._exemptions[1])

    def passed(self, validation: CompiledValidation, roles: tuple[str, ...] = ()) -> Finding:
        """The validation's pass on this unit, at the unit's own path; told for `roles` (Run.told_roles)."""
        return passed(
            validation.check, self.run.ref, self.run.pass_place(self.unit, validation.reads_values, roles)
        )

    def exemption(self, rule: str) -> tuple[str | None, dict[str, tuple[str, str]]]:
        """(the nearest reason that covers `rule`, {path: (problem, fix)} of exemptions that exempt
        nothing: blank, expired, naming an unknown rule; RULES.md §3). Those do not hide a valid
        exemption further out."""
        if self._exemptions is None:
            self._exemptions = self._read_exemptions()
        valid, problems = self._exemptions
        reason = next((parsed.reason for parsed in valid if parsed.covers(rule)), None)
        return reason, problems

    def _read_exemptions(self) -> tuple[list[exemptions.Exemption], dict[str, tuple[str, str]]]:
        """The policy's exemptions on the unit, nearest first, read once per unit (every rule asks)."""
        key = self.policy.exemption_key
        valid: list[exemptions.Exemption] = []
        problems: dict[str, tuple[str, str]] = {}
        if not any(key in notes for _, notes in self.unit.annotations):
            return valid, problems
        rules = [v.name for v in self.policy.policy.validations]
        today = datetime.datetime.now(datetime.UTC).date()
        for path, notes in self.unit.annotations:
            if key in notes:
                parsed = exemptions.parse(key, notes[key], rules, today)
                if parsed.problem is not None:
                    problems[render((*path, key))] = (parsed.problem, parsed.fix or "")
                else:
                    valid.append(parsed)
        return valid, problems

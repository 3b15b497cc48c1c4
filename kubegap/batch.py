"""Each scope's validations, for every policy of an activation group, as one CEL program over every unit of
the scope: an object costs one CEL call per scope instead of one or two per validation and unit.

Most of a CEL call's time is converting the activation's values (cel-expr converts a value on first use),
and a unit's activation carries the object's facts and every parameter as well as its own bindings. One
call per scope converts the facts and parameters once per object, not once per unit. Neither runtime can
stop a program once it runs, so the one program is held to the cost budget of one expression (the sum of
its parts' estimates): a set of expensive policies still runs one expression at a time, each checked
against the deadline before it starts.

The program binds each unit's values with one-item comprehensions (`[u.container].map(container, ...)`),
which both runtimes support. Where it cannot answer (an error anywhere, a part over the cost budget, a
unit of an unexpected shape), each unit and validation is evaluated alone (kubegap.evaluate), so an error
is reported for the validation it belongs to and never hides a sibling's verdict.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kubegap import celcost, celops, fastcel
from kubegap.cel import Backend, CelError, Deferred, Program
from kubegap.compiled import CompiledPolicy

if TYPE_CHECKING:
    from kubegap.activation import Group, Run
    from kubegap.facts import Unit

UNITS: Final = (
    "kubegapUnits"  # each scope's units are the CEL variable kubegapUnits_<scope> (declared in kubegap.cel)
)
_UNIT: Final = "kubegapUnit"
# What each scope's units bind beside facts and params (kubegap.facts builds them).
SCOPE_BINDINGS: Final[dict[str, tuple[str, ...]]] = {
    "workload": (),
    "template": ("template",),
    "container": ("template", "container"),
    "node": ("node",),
    "cluster-node": ("node",),
    "pool": ("pool",),
    "claim": ("claim",),
}

# (id(policy), id(unit)) -> rule -> () where its appliesTo does not hold, (verdict,) otherwise, or
# (False, message, path) for a failure; an empty mapping where the policy does not apply to the unit
Outcomes = dict[tuple[int, int], dict[str, tuple[Any, ...]]]


@dataclass(slots=True, unsafe_hash=True)
class ScopeProgram:
    program: Program
    policies: tuple[CompiledPolicy, ...]  # in the order of the program's per-unit list
    cost: celcost.Cost | None  # of its parts that iterate, summed; None where none does
    fast: fastcel.FastProgram | None = None  # the same program in Python, where it compiles (kubegap.fastcel)
    source: str = ""  # the program's CEL text


def build(
    policies: Sequence[CompiledPolicy], group_of: Mapping[int, Group], backend: Backend
) -> dict[tuple[int, str], ScopeProgram]:
    """(id(group), scope) -> the program over every unit of that scope, for the group's policies."""
    out = {}
    for scope, names in SCOPE_BINDINGS.items():
        members: dict[int, list[CompiledPolicy]] = {}
        for policy in policies:
            if scope in policy.batches:
                members.setdefault(id(group_of[id(policy)]), []).append(policy)
        for group, chosen in members.items():
            body = f"[{', '.join(p.batches[scope].source for p in chosen)}]"
            # each unit's values, bound innermost first (a list: mypyc cannot reverse this tuple's type)
            bound = [*names, "globbed"] if group_of[id(chosen[0])].globber is not None else [*names]
            for name in reversed(bound):
                body = f"[{_UNIT}.{name}].map({name}, {body})[0]"
            source = f"{units_variable(scope)}.map({_UNIT}, {body})"
            # Compiled when the runtime must first answer (the fast path cannot, or is off; most runs never
            # ask): every part compiled in its policy's batch. Should the whole not compile, the call
            # raises and each validation runs alone, as for any error (`evaluate`).
            program = Deferred(backend, source)
            costs = [c for p in chosen for c in p.batches[scope].costs]
            shared = group_of[id(chosen[0])]
            # parameters are the same for every object: ones CEL could not take keep the runtime
            fits = celcost.survey(shared.params)[1] and celcost.survey(shared.text)[1]
            fast = fastcel.compile_fast(source) if fits and fastcel.enabled() else None
            cost = celcost.total(costs) if costs else None
            out[(group, scope)] = ScopeProgram(program, tuple(chosen), cost, fast, source)
    return out


def evaluate(run: Run, group: Group, scope: str) -> Outcomes | None:
    """Every unit's outcomes for the group's policies in `scope`; None where the program cannot answer."""
    found = run.scope_programs.get((id(group), scope))
    units = run.facts.units.get(scope, ())
    names = set(SCOPE_BINDINGS.get(scope, ()))
    judged = _judged(group, units)  # a twin's bindings have its original's names
    if found is None or not units or any(set(u.bindings) != names for u in judged):
        return None
    if found.cost:  # held to one expression's budget, at the longest list any unit's expressions see
        seen = (run.facts.facts, *(v for u in judged for v in u.bindings.values()))
        items = max(group.items, *(run.items(v) for v in seen))
        if group.reads_object:
            items = max(items, run.items(run.obj))
        if found.cost.at(items) > run.backend.cost_budget:
            return None  # each validation then runs alone, within the budget and the deadline
    if run.deadline is not None and time.monotonic() > run.deadline:
        return None  # each validation then reports that it was not evaluated
    values = _fast(run, group, found)
    if values is None:
        try:
            values = found.program(_activation(run, group))
        except CelError:
            return None
    return _outcomes(values, found.policies, scope, judged)


def twin_outcome(out: Outcomes, policy: CompiledPolicy, unit: Unit) -> dict[str, tuple[Any, ...]] | None:
    """A twin's outcomes where the scope's program saw only its original (`_judged`), taken when first
    asked for: most twins' results are told with their original's (kubegap.judge) and never ask."""
    first = out.get((id(policy), id(unit.original)))
    if first is None:
        return None
    placed = policy.batches[unit.scope].texts_placed
    # outcomes are only read: a twin shares its original's unless it composes its own text
    return {n: r[:1] if n in placed else r for n, r in first.items()} if placed else first


def units_variable(scope: str) -> str:
    return f"{UNITS}_{scope.replace('-', '_')}"


def _judged(group: Group, units: Sequence[Unit]) -> Sequence[Unit]:
    """The units a scope's program sees: a twin template's units are judged as their first twin's
    (kubegap.facts.twins) where no verdict of the group reads a unit's place; so is a failure's message
    and path, unless they read it."""
    return [u for u in units if u.original is None] if group.twins else units


def _bindings(run: Run, group: Group) -> dict[str, Any]:
    """What every scope program of the group reads, as plain values, once per object and group."""
    found = run.batch_bindings.get(id(group))
    if found is None:
        found = {"facts": run.facts.facts, "params": group.params, "paramsText": group.text}
        if group.reads_object:
            found["object"] = run.obj
        for scope, units in run.facts.units.items():
            if (id(group), scope) in run.scope_programs:
                found[units_variable(scope)] = [_unit(run, group, u) for u in _judged(group, units)]
        run.batch_bindings[id(group)] = found
    return found


def _fast(run: Run, group: Group, found: ScopeProgram) -> Any:
    """The program's value from Python (kubegap.fastcel); None where the runtime must answer."""
    if found.fast is None:
        return None
    bindings = _bindings(run, group)
    fits = run.batch_fits.get(id(group))
    if fits is None:  # the bindings hold every scope's units: checked once, not once per scope
        fits = run.batch_fits[id(group)] = _fits(run, bindings)
    if not fits:
        return None
    try:
        return fastcel.run(found.fast, bindings)
    except celops.Unsure:
        return None


def _fits(run: Run, bindings: Mapping[str, Any]) -> bool:
    """Whether CEL takes every binding as it is (kubegap.celcost.survey); parameters are checked at build."""
    for name, value in bindings.items():
        if name.startswith(UNITS):
            if not all(run.fits(v) for unit in value for v in unit.values()):
                return False
        elif name not in ("params", "paramsText") and not run.fits(value):
            return False
    return True


def _activation(run: Run, group: Group) -> Any:
    """One activation per object and group for every scope's program. cel-expr converts a value on its
    first use and keeps it in the activation, so the facts and the parameters are converted once per
    object (one activation per program converted them once per scope: about 30 µs each time)."""
    found = run.batch_activations.get(id(group))
    if found is None:
        converted = {name: run.convert(value) for name, value in _bindings(run, group).items()}
        found = run.batch_activations[id(group)] = run.backend.activation(converted)
    return found


def _unit(run: Run, group: Group, unit: Unit) -> dict[str, Any]:
    globbed = run.globbed(group, unit)
    return dict(unit.bindings) if globbed is None else {**unit.bindings, "globbed": globbed}


def _outcomes(
    values: Any, policies: tuple[CompiledPolicy, ...], scope: str, units: Sequence[Unit]
) -> Outcomes | None:
    if not isinstance(values, list) or len(values) != len(units):
        return None
    rows: list[Any] = values
    out: Outcomes = {}
    names = [policy.batches[scope].names for policy in policies]
    count = len(policies)
    # Indexes into typed names, not `zip`: compiled, zip is the generic iterator, with a tuple per step
    # (3.5% of a typical object before).
    for u in range(len(rows)):
        row = rows[u]
        if type(row) is not list or len(row) != count:
            return None
        per_policy: list[Any] = row
        unit = id(units[u])
        for p in range(count):
            own, cell = names[p], per_policy[p]
            if type(cell) is not list or (cell and len(cell) != len(own)):
                return None
            results: list[Any] = cell
            outcome = {}
            for v in range(len(results)):
                result = results[v]
                if type(result) is not list or len(result) not in (0, 1, 3):
                    return None
                outcome[own[v]] = tuple(result)
            out[(id(policies[p]), unit)] = outcome
    return out

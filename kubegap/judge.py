"""One policy's results on one object: each validation on each unit of its scope, read from the scope's
one program (kubegap.batch) where it answered, else evaluated alone; exemptions, messages and paths, and
the rules every policy carries. A CEL error or a non-boolean verdict is an `error`, never a pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubegap.activation import Run, UnitState
from kubegap.cel import CelError
from kubegap.compiled import CompiledPolicy, CompiledValidation
from kubegap.enginerules import EXEMPTION_REASON, INVALID_DECLARATION
from kubegap.facts import Unit
from kubegap.fieldpath import render
from kubegap.findings import Check, Finding, Severity, error, fail, skip


def results(run: Run, policy: CompiledPolicy, out: list[Finding]) -> None:
    """Append the policy's results on every unit it applies to, then its engine rules where it applied
    (appended, not yielded: a compiled generator costs more than the list it fills, measured)."""
    facts = run.facts.facts
    for name in policy.gates:  # a fact its appliesTo requires is false: it does not apply (compiled.gates)
        if facts.get(name) is False:
            return
    # id(unit) -> (its state, its outcomes where the scope's program answered and no exemption names the
    # policy: the common case, asked once per unit rather than once per validation; else None)
    states: dict[int, tuple[UnitState, dict[str, tuple[Any, ...]] | None]] = {}
    applied = False
    void_exemptions: dict[str, tuple[str, str]] = {}  # path -> (why it exempts nothing, fix)
    twins = run.facts.twinned and run.group_of[id(policy)].twins
    for validation in policy.validations:
        # A twin template's result here is its original's, at its own role and path: told once, with the
        # original's, for all of them (RULES.md §4); but a failure whose message or path may name the
        # place is composed for each twin (kubegap.collapse merges those that come out the same).
        placed = validation.text_placed
        told: set[int] = set()  # units whose result here was told for their twins too
        for unit in run.facts.units.get(validation.scope, ()):
            if unit.original is not None and id(unit.original) in told:
                continue
            known = states.get(id(unit))
            if known is None:
                state = UnitState(run, policy, unit)
                outcomes = state.outcomes()
                fast = outcomes if outcomes is not None and state.unexempted() else None
                known = states[id(unit)] = (state, fast)
            state, outcomes = known
            if outcomes is not None:  # the common case, kept short
                applied = applied or bool(outcomes)
                if not outcomes or not (outcome := outcomes[validation.check.rule]):
                    # the policy or the validation does not apply: nor, then, to the unit's twins, whose
                    # outcomes and annotations are its own (kubegap.batch.twin_outcome)
                    if twins:
                        told.add(id(unit))
                    continue
                passing = outcome[0] is True
                roles = run.told_roles(unit) if twins and (passing or not placed) else ()
                if roles:
                    told.add(id(unit))
                if passing:
                    out.append(state.passed(validation, roles))
                    continue
                out.append(_judge(run, validation, state, outcome, roles))
                continue
            applies, found = _judge_alone(run, validation, state, state.outcomes(), void_exemptions)
            applied = applied or applies
            if found is not None:
                out.append(found)
    if applied and (void_exemptions or run.facts.invalid):  # most objects: neither
        _engine_rules(run, policy, void_exemptions, out)


def _judge_alone(
    run: Run,
    validation: CompiledValidation,
    state: UnitState,
    outcomes: dict[str, tuple[Any, ...]] | None,
    void_exemptions: dict[str, tuple[str, str]],
) -> tuple[bool, Finding | None]:
    """(whether the policy applies to the unit, the result) where exemptions name the policy or the scope's
    program could not answer."""
    name, unit = validation.check.rule, state.unit
    applies = False
    try:
        if not (state.policy_applies() if outcomes is None else outcomes):
            return False, None
        applies = True
        # A void exemption (blank, expired) is reported wherever the policy applies, even where no
        # validation does (a cordoned node): it exempts nothing and would mislead the next reader.
        reason, void = state.exemption(name)
        void_exemptions.update(void)
        outcome = outcomes[name] if outcomes is not None else None
        if outcome == () or (outcome is None and not state.applies(validation.applies_to)):
            return True, None
    except CelError as err:
        return applies, _error(run, validation, unit, f"appliesTo failed: {err}")
    if reason:
        return True, skip(validation.check, run.ref, reason, **run.where(unit, unit.default_path))
    return True, _judge(run, validation, state, outcome)


def _error(
    run: Run, validation: CompiledValidation, unit: Unit, message: str, roles: tuple[str, ...] = ()
) -> Finding:
    return error(validation.check, run.ref, message, **run.where(unit, unit.default_path, roles=roles))


def _judge(
    run: Run,
    validation: CompiledValidation,
    state: UnitState,
    outcome: tuple[Any, ...] | None,  # from the scope's one program (kubegap.batch); None: evaluate alone
    roles: tuple[str, ...] = (),  # the roles the result is told for (Run.told_roles)
) -> Finding:
    unit = state.unit
    try:
        verdict = outcome[0] if outcome else state.check(validation.expression)
    except CelError as err:
        return _error(run, validation, unit, f"evaluation failed: {err}", roles)
    if not isinstance(verdict, bool):
        return _error(run, validation, unit, f"expression gave {type(verdict).__name__}, not a bool", roles)
    check, default_path = validation.check, unit.default_path
    if verdict:
        return state.passed(validation, roles)
    fallback = validation.validation.message or f"{validation.validation.name} failed"
    if outcome is not None and len(outcome) == 3:  # evaluated with the verdict: the same rules as _text
        message = outcome[1] if isinstance(outcome[1], str) else fallback
        path = outcome[2] if isinstance(outcome[2], str) else default_path
    else:
        message = _text(state, validation.message_expression, fallback)
        path = _text(state, validation.field_path, default_path)
    return fail(check, run.ref, message, **run.where(unit, path or None, validation.reads_values, roles))


def _text(state: UnitState, program: Any, fallback: str | None) -> Any:
    if program is None:
        return fallback
    try:
        value = state.check(program)
    except CelError:
        return fallback
    return value if isinstance(value, str) else fallback


def _engine_rules(
    run: Run, policy: CompiledPolicy, void_exemptions: Mapping[str, tuple[str, str]], out: list[Finding]
) -> None:
    """Rules every policy carries: unreadable declarations it reads, exemptions without a reason."""
    remediation = "Write the value as a Go duration such as 90s, 10m or 1h30m."
    for bad in run.facts.invalid:
        if bad.annotation in policy.policy.declarations:
            message = (
                f"annotation {bad.annotation}: {bad.text!r} cannot be read ({bad.reason}); counted as absent"
            )
            check = Check(policy.policy.id, INVALID_DECLARATION, Severity.MEDIUM, remediation)
            out.append(fail(check, run.ref, message, **run.where(None, render(bad.path))))
    for path, (message, fix) in sorted(void_exemptions.items()):
        check = Check(policy.policy.id, EXEMPTION_REASON, Severity.MEDIUM, fix)
        out.append(fail(check, run.ref, message, **run.where(None, path)))

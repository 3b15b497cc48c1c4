"""The CEL fast path (kubegap.fastcel) gives the runtime's answers: every scope program's value on every
bundled example and test workload (and variants with twin templates), under both runtimes, and so the same
findings. Its semantics case by case are in tests/test_celops.py."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegap import batch, cel, celops, compiled, fastahead, fastcel, kinds
from kubegap.activation import Run
from kubegap.config import Settings
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import ObjectRef
from tests.test_twins import CASES

OBJECTS = [v for _, v in CASES]


@pytest.fixture(scope="module", params=["cel-expr", "cel-python"])
def engine(request: pytest.FixtureRequest) -> Engine:
    engine = build_engine(Settings(cel_backend=request.param))
    engine.memo = None  # every evaluation below is made anew
    return engine


@functools.cache
def _slow(backend: str) -> Engine:
    """The engine with the fast path off."""
    slow = build_engine(Settings(cel_backend=backend))
    slow.memo = None
    slow.scope_programs = {k: dataclasses.replace(p, fast=None) for k, p in slow.scope_programs.items()}
    return slow


def _answers(engine: Engine, obj: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    """(fast value, runtime value) of every scope program the object's units give, where the fast path
    answers."""
    gathered = kinds.gather(obj, engine.catalogue, {})
    if gathered is None:
        return
    run = Run(engine.backend, engine.group_of, obj, ObjectRef.of(obj), gathered, None, engine.scope_programs)
    for (group_id, scope), program in engine.scope_programs.items():
        group = next(g for g in engine.group_of.values() if id(g) == group_id)
        if program.fast is None or not gathered.units.get(scope):
            continue
        bindings = batch._bindings(run, group)
        if not all(run.fits(v) for v in bindings.values()):
            continue
        try:
            fast = fastcel.run(program.fast, bindings)
        except celops.Unsure:
            continue
        yield fast, program.program(batch._activation(run, group))


def test_every_bundled_scope_program_compiles_to_python(engine: Engine) -> None:
    assert engine.scope_programs
    assert all(p.fast is not None for p in engine.scope_programs.values())


def test_the_fast_path_answers_for_nearly_every_object(engine: Engine) -> None:
    answered = sum(1 for obj in OBJECTS if next(_answers(engine, obj), None) is not None)
    assert answered > 0.9 * sum(1 for obj in OBJECTS if kinds.row_of(obj) is not None)


@pytest.mark.parametrize("index", range(len(OBJECTS)))
def test_the_fast_path_gives_the_runtimes_value_and_findings(engine: Engine, index: int) -> None:
    obj = OBJECTS[index]
    for fast, runtime in _answers(engine, obj):
        assert fast == runtime
    if engine.backend.name == "cel-expr":  # equal values give equal findings; cel-python would take minutes
        assert engine.evaluate(obj).results == _slow(engine.backend.name).evaluate(obj).results


def test_the_fast_path_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEGAP_CEL_FAST", "0")
    assert all(p.fast is None for p in build_engine(Settings()).scope_programs.values())


def test_the_bundled_programs_are_written_ahead_as_they_are_now() -> None:
    """Making the text compiles every expression the bundled policies prove at load with cel-expr, so it
    also fails when one that the module says compiled no longer does."""
    written = Path(fastahead.__file__ or "").with_name("fastahead.py").read_text()
    assert fastcel.ahead_text() == written, "run: python -m kubegap.fastcel"


def test_the_bundled_policies_load_without_compiling_what_compiled_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sources: list[str] = []
    real = cel.CelExpr.compile

    def counted(self: cel.CelExpr, source: str) -> cel.Program:
        sources.append(source)
        return real(self, source)

    monkeypatch.setattr(cel.CelExpr, "compile", counted)
    engine = build_engine(Settings(cel_backend="cel-expr"))
    assert engine.compiled and sources == []
    # a rule turned off changes its policy's batch: that text was not compiled ahead, so it is proven now
    rule = engine.compiled[0].validations[0].validation
    off = f"{engine.compiled[0].policy.id}/{rule.name}"
    assert len(engine.compiled[0].validations) > 1
    build_engine(Settings(cel_backend="cel-expr", skip=(off,)))
    assert sources


def test_an_expression_compiled_ahead_is_still_proven_under_cel_python() -> None:
    batch_source = next(b.source for p in build_engine(Settings()).compiled for b in p.batches.values())
    assert fastcel.digest(batch_source) in fastahead.COMPILED
    assert compiled._compiled_ahead(cel.backend("cel-expr"), batch_source)
    assert not compiled._compiled_ahead(cel.backend("cel-python"), batch_source)
    assert not compiled._compiled_ahead(cel.backend("cel-expr"), batch_source + " ")


def test_the_bundled_programs_come_from_the_module_written_ahead(engine: Engine) -> None:
    ahead = list(fastahead.PROGRAMS.values())
    assert len(ahead) == len(engine.scope_programs)
    assert all(any(p.fast is f for f in ahead) for p in engine.scope_programs.values())


def test_a_bundled_program_is_found_by_its_text_without_writing_it_again(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unwanted(source: str) -> str | None:
        raise AssertionError("written again at load")

    monkeypatch.setattr(fastcel, "write", unwanted)
    for program in engine.scope_programs.values():
        assert fastcel.compile_fast(program.source) is program.fast


def test_a_program_not_written_ahead_is_compiled_when_loaded() -> None:
    program = fastcel.compile_fast("size(facts.names) > params.least")
    assert program is not None
    assert all(program is not f for f in fastahead.PROGRAMS.values())
    assert program({"facts": {"names": ["a", "b"]}, "params": {"least": 1}}) is True
    assert program({"facts": {"names": []}, "params": {"least": 1}}) is False

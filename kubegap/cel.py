"""The CEL environment behind one small interface, with two runtimes that must never disagree.

`cel-expr` (Google's C++ runtime) is the default where it installs: it type-checks at compile time, so a
misspelt function fails at load, and it evaluates 100-500x faster. `cel-python` is the portable
fallback (`KUBEGAP_CEL_BACKEND=cel-python` or `--cel-backend cel-python`). Policies keep to what both
support: no optional syntax, no strings extension, no mixing of int and double. Both runtimes report
some errors as values instead of raising; here every error raises `CelError`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from kubegap import celcost, durations, globs
from kubegap.errors import KubegapError
from kubegap.integers import INT64_MAX, INT64_MIN

VARIABLES = (
    "object",
    "facts",
    "params",
    "paramsText",
    "globbed",
    "template",
    "container",
    "node",
    "claim",
    "pool",
    "variables",
    # each scope's units, for its one program (kubegap.batch.units_variable)
    *(
        f"kubegapUnits_{s}"
        for s in ("workload", "template", "container", "node", "cluster_node", "pool", "claim")
    ),
)
BACKENDS = ("cel-expr", "cel-python")


class CelError(KubegapError):
    """A CEL expression failed to compile or to evaluate."""


class Program(Protocol):
    def __call__(self, activation: Any) -> Any: ...


class Backend(Protocol):
    name: str
    cost_budget: int  # cost units one evaluation of one expression may take (kubegap.celcost)

    def compile(self, source: str) -> Program: ...

    def convert(self, value: Any) -> Any: ...

    def activation(self, bindings: Mapping[str, Any]) -> Any: ...


# Custom functions, one implementation for both runtimes.
def duration_text(seconds: float) -> str:
    return durations.format_seconds(float(seconds))


def matches_any(name: str, patterns: Sequence[Any]) -> bool:
    """Glob match (`*` any run of characters, as in resource names like `rdma/*`)."""
    return globs.matches(str(name), (str(p) for p in patterns))


def joined(items: Sequence[Any]) -> str:
    return ", ".join(str(i) for i in items)


class Deferred:
    """A program compiled when it first runs, from an expression already proven to compile as part of a
    larger one (kubegap.compiled): most of the policies' expressions never run alone, and compiling each at
    every start was most of a start's CEL work. A compile that fails here raises CelError from the call,
    which reports it as the expression's error."""

    __slots__ = ("_backend", "_program", "source")

    def __init__(self, backend: Backend, source: str) -> None:
        self._backend, self.source = backend, source
        self._program: Program | None = None

    def __call__(self, activation: Any) -> Any:
        program = self._program
        if program is None:  # two threads may both compile it: either result will do
            program = self._program = self._backend.compile(self.source)
        return program(activation)


class CelExpr:
    name = "cel-expr"
    cost_budget = celcost.RUNTIME_BUDGET

    def __init__(self) -> None:
        from cel_expr_python import cel

        self._cel = cel
        t = cel.Type
        functions = [
            cel.FunctionDecl(
                "durationText",
                [cel.Overload("durationText_double", t.STRING, [t.DOUBLE], impl=duration_text)],
            ),
            cel.FunctionDecl(
                "matchesAny",
                [cel.Overload("matchesAny_string_list", t.BOOL, [t.STRING, t.List(t.DYN)], impl=matches_any)],
            ),
            cel.FunctionDecl("joined", [cel.Overload("joined_list", t.STRING, [t.List(t.DYN)], impl=joined)]),
        ]
        self._env = cel.NewEnv(variables=dict.fromkeys(VARIABLES, t.DYN), functions=functions)

    def compile(self, source: str) -> Program:
        try:
            expression = self._env.compile(source)
        except RuntimeError as err:
            raise CelError(str(err)) from None
        error_type = self._cel.Type.ERROR

        def run(activation: Any) -> Any:
            try:
                value = expression.eval(activation)
            except (RuntimeError, MemoryError) as err:
                raise CelError(str(err)) from None
            if value.type() == error_type:
                raise CelError(str(value.value()))
            return value.plain_value()

        return run

    def convert(self, value: Any) -> Any:
        return value  # converted lazily inside the activation

    def activation(self, bindings: Mapping[str, Any]) -> Any:
        return self._env.Activation(dict(bindings))


class CelPython:
    name = "cel-python"
    cost_budget = celcost.SLOW_RUNTIME_BUDGET

    def __init__(self) -> None:
        import celpy
        from celpy import celtypes

        self._celpy = celpy
        self._types = celtypes
        self._env = celpy.Environment()
        self._functions: dict[str, Callable[..., Any]] = {
            "durationText": lambda s: celtypes.StringType(duration_text(float(s))),
            "matchesAny": lambda n, p: celtypes.BoolType(matches_any(str(n), [str(x) for x in p])),
            "joined": lambda items: celtypes.StringType(joined([str(i) for i in items])),
        }

    def compile(self, source: str) -> Program:
        celpy = self._celpy
        # how cel-python fails, besides its error values (`int()` of an infinity is an OverflowError)
        failures = (celpy.CELEvalError, RecursionError, TypeError, ValueError, KeyError, OverflowError)
        try:
            program = self._env.program(self._env.compile(source), functions=self._functions)
        except celpy.CELParseError as err:
            raise CelError(str(err).strip()) from None

        def run(activation: Any) -> Any:
            try:
                value = program.evaluate(activation)
            except failures as err:
                raise CelError(str(err.args[0]) if err.args else repr(err)) from None
            if isinstance(value, celpy.CELEvalError):
                raise CelError(str(value.args[0]) if value.args else repr(value))
            return self._plain(value)

        return run

    def _plain(self, value: Any) -> Any:
        types = self._types
        if isinstance(value, types.BoolType):
            return bool(value)
        if isinstance(value, types.IntType | types.UintType):
            return int(value)
        if isinstance(value, types.DoubleType):
            return float(value)
        if isinstance(value, types.StringType):
            return str(value)
        if isinstance(value, types.ListType):
            return [self._plain(v) for v in value]
        if isinstance(value, types.MapType):
            return {self._plain(k): self._plain(v) for k, v in value.items()}
        if value is None or isinstance(value, types.NullType):
            return None
        return value

    def convert(self, value: Any) -> Any:
        try:
            return self._celpy.json_to_cel(value)
        except ValueError:  # an integer past int64 (a product of huge counts): convert it as an error
            return self._lenient(value)

    def _lenient(self, value: Any) -> Any:
        """Like json_to_cel, but an integer outside int64 becomes an error value: an expression that reads
        it errs, as it does in cel-expr, instead of the whole evaluation dying in the conversion."""
        types = self._types
        if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
            return self._celpy.CELEvalError("integer out of the int64 range")
        if isinstance(value, list | tuple):
            return types.ListType([self._lenient(v) for v in value])
        if isinstance(value, dict):
            return types.MapType({self._lenient(k): self._lenient(v) for k, v in value.items()})
        return self._celpy.json_to_cel(value)

    def activation(self, bindings: Mapping[str, Any]) -> Any:
        return dict(bindings)


@functools.cache
def backend(name: str = "auto") -> Backend:
    """The named runtime; `auto` reads KUBEGAP_CEL_BACKEND, else prefers cel-expr when it imports."""
    chosen = os.environ.get("KUBEGAP_CEL_BACKEND", "auto") if name == "auto" else name
    if chosen == "auto":
        try:
            return CelExpr()
        except ImportError:
            return CelPython()
    if chosen == "cel-expr":
        try:
            return CelExpr()
        except ImportError as err:
            raise KubegapError(
                f"CEL backend cel-expr is not installed ({err}); use --cel-backend cel-python"
            ) from None
    if chosen == "cel-python":
        return CelPython()
    raise KubegapError(f"unknown CEL backend {chosen!r}: choose one of {', '.join(BACKENDS)}")

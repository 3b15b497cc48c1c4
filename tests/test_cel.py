from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kubegap import cel, globs
from kubegap.errors import KubegapError

BINDINGS: Mapping[str, Any] = {
    "facts": {
        "count": 3,
        "seconds": 2.5,
        "name": "Socket",
        "numbers": [1, 2, 3],
        "env": {"NCCL_IB_HCA": "mlx5_0"},
        "resources": ["rdma/ib", "cpu", "nvidia.com/gpu"],
        "on": True,
        "empty": [],
    },
    "params": {"nics": ["rdma/*", "vpc.amazonaws.com/efa"], "max": 600.0, "hints": ["NCCL_*"]},
    "container": {"envNames": ["NCCL_IB_HCA", "PATH"], "unresolvedText": ""},
}

# Both runtimes must agree on every row: policies run on either.
AGREE: list[tuple[str, Any]] = [
    ("has(facts.count)", True),
    ("has(facts.missing)", False),
    ("has(facts.env.NCCL_IB_HCA)", True),
    ("'NCCL_IB_HCA' in facts.env", True),
    ("'NCCL_SOCKET_IFNAME' in facts.env", False),
    ("'PATH' in container.envNames", True),
    ("facts.numbers.exists(n, n > 2)", True),
    ("facts.numbers.all(n, n > 2)", False),
    ("facts.empty.exists(n, n > 0)", False),
    ("facts.numbers.filter(n, n > 1).map(n, n * 2)", [4, 6]),
    ("size(facts.numbers.filter(n, n > 5)) == 0", True),
    ("facts.name.matches('^Socket$')", True),
    ("facts.name.matches('(?i)^socket$')", True),
    ("facts.name.matches('^socket$')", False),
    ("facts.seconds <= params.max", True),
    ("double(facts.count) * 2.0", 6.0),
    ("string(facts.count) + ' pods'", "3 pods"),
    ("facts.on ? 'yes' : 'no'", "yes"),
    ("size(facts.resources)", 3),
    ("durationText(params.max)", "10m"),
    ("durationText(8.4)", "8.4s"),
    ("durationText(params.max / 500.0)", "1.2s"),
    ("durationText(5400.0)", "1h30m"),
    ("matchesAny('rdma/ib', params.nics)", True),
    ("matchesAny('vpc.amazonaws.com/efa', params.nics)", True),
    ("matchesAny('vpc.amazonaws.com/efa-x', params.nics)", False),
    ("matchesAny('cpu', [])", False),
    ("facts.resources.exists(r, matchesAny(r, params.nics))", True),
    ("container.envNames.exists(n, matchesAny(n, params.hints))", True),
    ("joined(facts.numbers)", "1, 2, 3"),
    ("joined(params.nics)", "rdma/*, vpc.amazonaws.com/efa"),
    ("joined(facts.empty)", ""),
    ("joined(facts.resources.filter(r, r != 'cpu').map(r, r + '!'))", "rdma/ib!, nvidia.com/gpu!"),
    ("double('12') <= 600.0", True),
    ("null", None),
    ("{'a': [1]}", {"a": [1]}),
]

# Runtime errors: each must raise CelError in both runtimes, never come back as a value.
ERRORS = [
    "facts.missing",
    "facts.env['NCCL_SOCKET_IFNAME']",
    "facts.numbers[7]",
    "facts.count / 0",
    "facts.name + 1",
    "facts.count + facts.seconds",  # int and double do not mix
    "double(facts.name)",
    "facts.name.matches('(')",
]

SYNTAX_ERRORS = ["has(", "1 +", "a b", "facts.", "facts.x ? 1", "'unterminated", ""]


@pytest.fixture(params=cel.BACKENDS)
def backend(request: pytest.FixtureRequest) -> cel.Backend:
    name: str = request.param
    return cel.backend(name)


def run(backend: cel.Backend, source: str, bindings: Mapping[str, Any] = BINDINGS) -> Any:
    program = backend.compile(source)
    return program(backend.activation({k: backend.convert(v) for k, v in bindings.items()}))


@pytest.mark.parametrize(("source", "expected"), AGREE)
def test_expression_value(backend: cel.Backend, source: str, expected: Any) -> None:
    value = run(backend, source)
    assert value == expected
    assert type(value) is type(expected)  # plain Python values, not runtime wrappers


@pytest.mark.parametrize("source", ERRORS)
def test_runtime_error_raises_cel_error(backend: cel.Backend, source: str) -> None:
    program = backend.compile(source)
    with pytest.raises(cel.CelError):
        program(backend.activation({k: backend.convert(v) for k, v in BINDINGS.items()}))


@pytest.mark.parametrize("source", SYNTAX_ERRORS)
def test_syntax_error_fails_at_compile(backend: cel.Backend, source: str) -> None:
    with pytest.raises(cel.CelError):
        backend.compile(source)


def test_cel_error_is_a_kubegap_error() -> None:
    assert issubclass(cel.CelError, KubegapError)


@pytest.mark.parametrize("source", ["noSuchFunction(1)", "nobody.knows"])
def test_unknown_names_fail_at_compile_or_at_run(backend: cel.Backend, source: str) -> None:
    """cel-expr type-checks at compile time; cel-python finds out when it runs. Neither gives a value."""
    with pytest.raises(cel.CelError):
        run(backend, source)


def test_cel_expr_rejects_unknown_function_at_compile() -> None:
    with pytest.raises(cel.CelError, match="undeclared"):
        cel.backend("cel-expr").compile("noSuchFunction(1)")


def test_non_boolean_results_come_back_as_values(backend: cel.Backend) -> None:
    """The runtime returns what the expression gives; judging it (not a bool → error) is evaluate's job."""
    assert run(backend, "facts.count") == 3
    assert run(backend, "facts.name") == "Socket"


def test_same_program_runs_on_many_activations(backend: cel.Backend) -> None:
    program = backend.compile("size(facts.numbers) > 1")
    verdicts = [
        program(backend.activation({"facts": backend.convert({"numbers": list(range(n))})})) for n in range(4)
    ]
    assert verdicts == [False, False, True, True]


@pytest.mark.parametrize(
    ("patterns", "name", "expected"),
    [
        (["rdma/*"], "rdma/hca_shared_devices_a", True),
        (["nvidia.com/*rdma*"], "nvidia.com/mlnxnics_rdma", True),
        (["nvidia.com/*rdma*"], "nvidia.com/gpu", False),
        (["NCCL_GPUDIRECTTCPX_*"], "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", True),
        (["a.b"], "aXb", False),  # `.` is literal in a glob
        ([], "anything", False),
    ],
)
def test_matches_any(patterns: list[str], name: str, expected: bool) -> None:
    assert cel.matches_any(name, patterns) is expected


@pytest.fixture
def fresh_backends() -> Iterator[None]:
    cel.backend.cache_clear()
    yield
    cel.backend.cache_clear()


def test_unknown_backend_name(fresh_backends: None) -> None:
    with pytest.raises(KubegapError, match="unknown CEL backend 'nope'"):
        cel.backend("nope")


def test_auto_reads_environment(fresh_backends: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEGAP_CEL_BACKEND", "cel-python")
    assert cel.backend("auto").name == "cel-python"


def test_auto_with_unknown_environment_value(fresh_backends: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEGAP_CEL_BACKEND", "fast")
    with pytest.raises(KubegapError, match="'fast'"):
        cel.backend("auto")


def test_explicit_name_beats_environment(fresh_backends: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEGAP_CEL_BACKEND", "cel-python")
    assert cel.backend("cel-expr").name == "cel-expr"


@pytest.mark.parametrize("text", ["", "rdma/ib", "a\nb"])
def test_an_empty_glob_list_matches_nothing_in_either_runtime(backend: cel.Backend, text: str) -> None:
    # a `globs` parameter set to nothing (`--set POLICY.NAME=`) reaches CEL as this pattern
    program = backend.compile("facts.name.matches(facts.pattern)")
    bindings = {"facts": backend.convert({"name": text, "pattern": globs.pattern([])})}
    assert program(backend.activation(bindings)) is False

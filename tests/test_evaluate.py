"""Engine behaviour, with small policies written for each test so that no bundled rule is assumed."""

from __future__ import annotations

import copy
import gc
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegap import cel
from kubegap.config import Settings
from kubegap.errors import KubegapError
from kubegap.evaluate import MAX_DEPTH, Context, DeadlineExceeded, Engine, Evaluation, build_engine
from kubegap.findings import Finding, ObjectRef, Result, Severity, Summary


def policy_text(pid: str, scope: str, validations: str, applies_to: str = "true", extra: str = "") -> str:
    """A policy file; `validations` is a YAML list and `extra` more `spec` fields, both unindented."""
    head = f"""\
apiVersion: kubegap.dev/v1alpha1
kind: Policy
metadata: {{name: {pid}}}
spec:
  title: {pid}
  severity: high
  scope: {scope}
  appliesTo: {applies_to!r}
  remediation: Policy-level fix.
"""
    extra = textwrap.dedent(extra).rstrip("\n") + "\n" if extra else ""
    body = textwrap.indent(extra, "  ") + "  validations:\n"
    return head + body + textwrap.indent(textwrap.dedent(validations), "    ")


@pytest.fixture(params=cel.BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def engine_for(tmp_path: Path, backend: str, *texts: str) -> Engine:
    ids = []
    for text in texts:
        pid = text.split("metadata: {name: ", 1)[1].split("}", 1)[0]
        (tmp_path / f"{pid}.yaml").write_text(text)
        ids.append(pid)
    return build_engine(Settings(policy_dirs=(str(tmp_path),), select=tuple(ids), cel_backend=backend))


def container(name: str, gpus: int = 8, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "t", "resources": {"limits": {"nvidia.com/gpu": gpus}}, **extra}


def pytorchjob(
    annotations: dict[str, Any] | None = None, worker_annotations: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ml", "annotations": annotations or {}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [container("pytorch")]}}},
                "Worker": {
                    "replicas": 2,
                    "template": {
                        "metadata": {"annotations": worker_annotations or {}},
                        "spec": {"containers": [container("pytorch"), container("sidecar", gpus=0)]},
                    },
                },
            }
        },
    }


def results(evaluation: Evaluation) -> list[tuple[str, str, str | None, str | None, str | None]]:
    return sorted((f.rule, f.result.value, f.role, f.container, f.path) for f in evaluation.results)


SCOPES = {
    "workload": [("check", "fail", None, None, None)],
    "template": [
        ("check", "fail", "Master", None, "spec.pytorchReplicaSpecs.Master.template"),
        ("check", "fail", "Worker", None, "spec.pytorchReplicaSpecs.Worker.template"),
    ],
    # The Worker's two identical container findings are one, listing both containers (RULES.md §4).
    "container": [
        ("check", "fail", "Master", "pytorch", "spec.pytorchReplicaSpecs.Master.template.spec.containers[0]"),
        ("check", "fail", "Worker", "pytorch", "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]"),
    ],
    "node": [],
}


@pytest.mark.parametrize("scope", sorted(SCOPES))
def test_one_result_per_unit_of_the_scope(tmp_path: Path, backend: str, scope: str) -> None:
    text = policy_text("probe", scope, '- {name: check, expression: "false"}')
    evaluation = engine_for(tmp_path, backend, text).evaluate(pytorchjob())
    assert evaluation.supported
    assert results(evaluation) == SCOPES[scope]


def test_result_record(tmp_path: Path, backend: str) -> None:
    text = policy_text(
        "probe",
        "container",
        """\
        - name: check
          severity: low
          expression: "container.gpus == 0"
          messageExpression: "container.name + ' has ' + string(container.gpus) + ' GPUs'"
          remediation: Validation-level fix.
        - {name: other, expression: "true"}
        """,
        applies_to="container.gpus > 0",
    )
    evaluation = engine_for(tmp_path, backend, text).evaluate(pytorchjob())
    assert evaluation.ref == ObjectRef("kubeflow.org/v1", "PyTorchJob", "ml", "train")
    failed = [f for f in evaluation.findings if f.rule == "check"]
    assert len(failed) == 2  # the sidecar has no GPU: the policy does not apply to it
    first = failed[0]
    assert (first.policy, first.severity, first.result) == ("probe", Severity.LOW, Result.FAIL)
    assert first.message == "pytorch has 8 GPUs"
    assert first.remediation == "Validation-level fix."
    passed = [f for f in evaluation.results if f.rule == "other"]
    assert [f.result for f in passed] == [Result.PASS, Result.PASS]
    assert passed[0].remediation == "Policy-level fix."
    assert passed[0].message == ""
    assert all(f.result is not Result.PASS for f in evaluation.findings)


def test_applies_to(tmp_path: Path, backend: str) -> None:
    text = policy_text(
        "probe",
        "container",
        """\
        - {name: on-gpus, expression: "false", appliesTo: "container.gpus > 0"}
        - {name: never, expression: "false", appliesTo: "false"}
        """,
        applies_to="template.role == 'Worker'",
    )
    evaluation = engine_for(tmp_path, backend, text).evaluate(pytorchjob())
    assert results(evaluation) == [
        (
            "on-gpus",
            "fail",
            "Worker",
            "pytorch",
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]",
        )
    ]


def test_message_and_field_path_fallbacks(tmp_path: Path, backend: str) -> None:
    text = policy_text(
        "probe",
        "workload",
        """\
        - {name: plain, expression: "false"}
        - {name: fixed, expression: "false", message: "a fixed message"}
        - name: broken
          expression: "false"
          message: "used when the expression fails"
          messageExpression: "facts.expectedRuntime.text"
          fieldPathExpression: "facts.expectedRuntime.path"
        - {name: not-text, expression: "false", messageExpression: "1", fieldPathExpression: "2"}
        - {name: pointed, expression: "false", fieldPathExpression: "'spec.runPolicy'"}
        - {name: blank-path, expression: "false", fieldPathExpression: "''"}
        """,
    )
    found = {
        f.rule: (f.message, f.path)
        for f in engine_for(tmp_path, backend, text).evaluate(pytorchjob()).findings
    }
    assert found == {
        "plain": ("plain failed", None),
        "fixed": ("a fixed message", None),
        "broken": ("used when the expression fails", None),
        "not-text": ("not-text failed", None),
        "pointed": ("plain failed".replace("plain", "pointed"), "spec.runPolicy"),
        "blank-path": ("blank-path failed", None),
    }


# (case, validation, what the error message must say)
ERRORS = [
    (
        "missing key",
        '- {name: check, expression: "facts.expectedRuntime.seconds == 1.0"}',
        "evaluation failed",
    ),
    ("wrong type", '- {name: check, expression: "facts.kind + 1 == 2"}', "evaluation failed"),
    ("int result", '- {name: check, expression: "facts.totalGpus"}', "expression gave int, not a bool"),
    ("string result", '- {name: check, expression: "facts.kind"}', "expression gave str, not a bool"),
    ("null result", '- {name: check, expression: "null"}', "expression gave NoneType, not a bool"),
    (
        "appliesTo error",
        '- {name: check, expression: "true", appliesTo: "facts.expectedRuntime.seconds > 0.0"}',
        "appliesTo failed",
    ),
    ("appliesTo not a bool", '- {name: check, expression: "true", appliesTo: "1"}', None),
]


@pytest.mark.parametrize(("case", "validation", "says"), ERRORS, ids=[e[0] for e in ERRORS])
def test_runtime_problems_are_errors_never_passes(
    tmp_path: Path, backend: str, case: str, validation: str, says: str | None
) -> None:
    evaluation = engine_for(tmp_path, backend, policy_text("probe", "workload", validation)).evaluate(
        pytorchjob()
    )
    if says is None:  # an appliesTo that is not `true` does not apply
        assert evaluation.results == ()
        return
    (finding,) = evaluation.results
    assert finding.result is Result.ERROR
    assert says in finding.message
    assert finding.severity is Severity.HIGH


def test_policy_applies_to_error(tmp_path: Path, backend: str) -> None:
    text = policy_text(
        "probe",
        "workload",
        '- {name: check, expression: "true"}',
        applies_to="facts.expectedRuntime.seconds > 0.0",
    )
    (finding,) = engine_for(tmp_path, backend, text).evaluate(pytorchjob()).results
    assert (finding.result, finding.rule) == (Result.ERROR, "check")
    assert finding.message.startswith("appliesTo failed")


def test_variables(tmp_path: Path, backend: str) -> None:
    extra = """\
variables:
  - {name: names, scope: container, expression: "container.envNames.filter(n, n.startsWith('NCCL_'))"}
  - {name: broken, scope: workload, expression: "facts.expectedRuntime.seconds"}
"""
    text = policy_text(
        "probe",
        "container",
        """\
        - name: uses-variable
          expression: "size(variables.names) == 0"
          fieldPathExpression: "container.path"
        - {name: broken-variable, scope: workload, expression: "variables.broken == 1"}
        - {name: independent, scope: workload, expression: "true"}
        """,
        extra=extra,
    )
    obj = pytorchjob()
    obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "NCCL_DEBUG", "value": "INFO"}
    ]
    evaluation = engine_for(tmp_path, backend, text).evaluate(obj)
    by_rule = {(f.rule, f.role, f.container): f for f in evaluation.results}
    assert by_rule[("uses-variable", "Master", "pytorch")].result is Result.FAIL
    assert by_rule[("uses-variable", "Worker", "pytorch")].result is Result.PASS
    broken = by_rule[("broken-variable", None, None)]
    assert broken.result is Result.ERROR
    # as in ValidatingAdmissionPolicy, a variable is evaluated only for the expressions that read it
    assert by_rule[("independent", None, None)].result is Result.PASS
    assert broken.message.startswith("evaluation failed: variable broken: ")


EXEMPT = policy_text("probe", "container", '- {name: check, expression: "false"}')


def test_exemption_on_the_workload_skips_every_unit(tmp_path: Path, backend: str) -> None:
    obj = pytorchjob({"ignore.kubegap.dev/probe": "  smoke test, 5 minutes  "})
    evaluation = engine_for(tmp_path, backend, EXEMPT).evaluate(obj)
    assert {(f.result, f.message) for f in evaluation.results} == {
        (Result.SKIP, "exempted: smoke test, 5 minutes")
    }
    assert sum(len(f.covered()) for f in evaluation.results) == 3


def test_exemption_on_a_template_skips_only_its_units(tmp_path: Path, backend: str) -> None:
    obj = pytorchjob(worker_annotations={"ignore.kubegap.dev/probe": "workers are checked elsewhere"})
    evaluation = engine_for(tmp_path, backend, EXEMPT).evaluate(obj)
    assert sorted((f.role, f.result.value, len(f.covered())) for f in evaluation.results) == [
        ("Master", "fail", 1),
        ("Worker", "skip", 2),
    ]


def test_exemption_of_another_policy_does_not_apply(tmp_path: Path, backend: str) -> None:
    obj = pytorchjob({"ignore.kubegap.dev/other": "reason"})
    evaluation = engine_for(tmp_path, backend, EXEMPT).evaluate(obj)
    assert {f.result for f in evaluation.results} == {Result.FAIL}


@pytest.mark.parametrize("blank", ["", "   ", None])
def test_blank_exemption_exempts_nothing_and_is_a_finding(tmp_path: Path, backend: str, blank: Any) -> None:
    obj = pytorchjob({"ignore.kubegap.dev/probe": blank})
    evaluation = engine_for(tmp_path, backend, EXEMPT).evaluate(obj)
    checks = [f for f in evaluation.results if f.rule == "check"]
    assert {f.result for f in checks} == {Result.FAIL}
    assert sum(len(f.covered()) for f in checks) == 3
    (reason,) = [f for f in evaluation.results if f.rule == "exemption-reason"]
    assert (reason.policy, reason.severity, reason.result) == ("probe", Severity.MEDIUM, Result.FAIL)
    assert reason.path == "metadata.annotations['ignore.kubegap.dev/probe']"
    assert "has no reason" in reason.message


def test_blank_exemption_on_a_template_is_reported_once(tmp_path: Path, backend: str) -> None:
    obj = pytorchjob(worker_annotations={"ignore.kubegap.dev/probe": ""})
    evaluation = engine_for(tmp_path, backend, EXEMPT).evaluate(obj)
    reasons = [f for f in evaluation.results if f.rule == "exemption-reason"]
    assert [f.path for f in reasons] == [
        "spec.pytorchReplicaSpecs.Worker.template.metadata.annotations['ignore.kubegap.dev/probe']"
    ]


def test_exemption_is_not_reported_where_the_policy_does_not_apply(tmp_path: Path, backend: str) -> None:
    text = policy_text("probe", "workload", '- {name: check, expression: "false"}', applies_to="false")
    obj = pytorchjob({"ignore.kubegap.dev/probe": ""})
    assert engine_for(tmp_path, backend, text).evaluate(obj).results == ()


DECLARING = policy_text(
    "probe",
    "workload",
    '- {name: check, expression: "true"}',
    extra="declarations: [kubegap.dev/step-time]",
)


def test_invalid_declaration_is_reported_by_the_policy_that_reads_it(tmp_path: Path, backend: str) -> None:
    other = policy_text("other", "workload", '- {name: check, expression: "true"}')
    obj = pytorchjob({"kubegap.dev/step-time": "fast"})
    evaluation = engine_for(tmp_path, backend, DECLARING, other).evaluate(obj)
    invalid = [f for f in evaluation.results if f.rule == "invalid-declaration"]
    assert [(f.policy, f.severity, f.result) for f in invalid] == [("probe", Severity.MEDIUM, Result.FAIL)]
    assert invalid[0].path == "metadata.annotations['kubegap.dev/step-time']"
    assert "'fast'" in invalid[0].message


def test_valid_declaration_is_no_finding(tmp_path: Path, backend: str) -> None:
    obj = pytorchjob({"kubegap.dev/step-time": "8.4s"})
    evaluation = engine_for(tmp_path, backend, DECLARING).evaluate(obj)
    assert evaluation.findings == ()


def test_deadline(tmp_path: Path, backend: str) -> None:
    engine = engine_for(tmp_path, backend, EXEMPT)
    with pytest.raises(DeadlineExceeded) as caught:
        engine.evaluate(pytorchjob(), deadline=time.monotonic() - 1.0)
    assert isinstance(caught.value, KubegapError)
    assert "PyTorchJob/ml/train" in str(caught.value)
    results = engine.evaluate(pytorchjob(), deadline=time.monotonic() + 3600.0).results
    assert sum(len(f.covered()) for f in results) == 3


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}},
        {"apiVersion": "example.com/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}},
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "metadata": {"name": "x"}},
        {"kind": "Pod"},
        {},
    ],
)
def test_unsupported_kinds(tmp_path: Path, obj: dict[str, Any]) -> None:
    evaluation = engine_for(tmp_path, "cel-python", EXEMPT).evaluate(obj)
    assert (evaluation.supported, evaluation.results) == (False, ())


def test_node_is_supported(tmp_path: Path, backend: str) -> None:
    text = policy_text("probe", "node", '- {name: check, expression: "node.gpuCapacity == 0"}')
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"capacity": {"nvidia.com/gpu": 8}},
    }
    evaluation = engine_for(tmp_path, backend, text).evaluate(node)
    assert evaluation.supported
    assert [(f.rule, f.result, f.path) for f in evaluation.results] == [("check", Result.FAIL, "status")]


def test_context_configmaps_reach_the_facts(tmp_path: Path, backend: str) -> None:
    text = policy_text("probe", "container", "- {name: check, expression: \"!('HCA' in container.env)\"}")
    obj = pytorchjob()
    master = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    master["env"] = [{"name": "HCA", "valueFrom": {"configMapKeyRef": {"name": "nics", "key": "hca"}}}]
    engine = engine_for(tmp_path, backend, text)
    without = [f for f in engine.evaluate(obj).results if f.role == "Master"]
    assert [f.result for f in without] == [Result.PASS]
    assert without[0].unresolved == ("env HCA from ConfigMap ml/nics key hca (not available)",)
    with_cm = engine.evaluate(obj, Context(configmaps={("ml", "nics"): {"hca": "mlx5_0"}}))
    assert [f.result for f in with_cm.results if f.role == "Master"] == [Result.FAIL]


def nested(depth: int) -> dict[str, Any]:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    result: dict[str, Any] = value
    return result


def test_object_nested_too_deep_is_an_error_when_a_policy_reads_it(tmp_path: Path, backend: str) -> None:
    text = policy_text("probe", "workload", '- {name: check, expression: "has(object.metadata)"}')
    obj = {**pytorchjob(), "status": nested(MAX_DEPTH + 5)}
    (finding,) = engine_for(tmp_path, backend, text).evaluate(obj).results
    assert (finding.policy, finding.rule, finding.result) == ("invalid-manifest", "too-deep", Result.ERROR)
    shallow = {**pytorchjob(), "status": nested(MAX_DEPTH - 10)}
    assert [f.result for f in engine_for(tmp_path, backend, text).evaluate(shallow).results] == [Result.PASS]


@pytest.mark.parametrize(
    ("expression", "reads"),
    [
        ("has(object.metadata)", True),
        ("object.metadata.name != ''", True),
        ("facts.gpuWork || 'object-store' == 'object'", False),  # the word in strings only
        ("[1].exists(object, object > 0)", True),  # a comprehension variable of that name: conservative
    ],
)
def test_only_an_expression_that_reads_the_object_gets_it(
    tmp_path: Path, backend: str, expression: str, reads: bool
) -> None:
    text = policy_text("probe", "workload", f"- {{name: check, expression: {expression!r}}}")
    engine = engine_for(tmp_path, backend, text)
    assert engine.reads_object is reads
    obj = {**pytorchjob(), "status": nested(MAX_DEPTH + 5)}
    results = {(f.policy, f.result) for f in engine.evaluate(obj).results}
    assert (("invalid-manifest", Result.ERROR) in results) is reads


@pytest.mark.parametrize("depth", [MAX_DEPTH + 5, 5000])
def test_deep_object_never_raises(tmp_path: Path, backend: str, depth: int) -> None:
    """Bundled-style policies that never read the raw object must still survive a deep one (webhook input)."""
    text = policy_text("probe", "container", '- {name: check, expression: "container.gpus > 0"}')
    obj = {**pytorchjob(), "status": nested(depth)}
    evaluation = engine_for(tmp_path, backend, text).evaluate(obj)
    assert evaluation.supported
    assert {f.result for f in evaluation.results} <= {Result.PASS, Result.FAIL, Result.ERROR}
    assert evaluation.results


def test_findings_hide_passes_only() -> None:
    ref = ObjectRef("v1", "Pod", None, "p")
    made = [Finding("p", "r", Severity.LOW, result, "", "", ref) for result in Result]
    evaluation = Evaluation(ref, True, tuple(made))
    assert [f.result for f in evaluation.findings] == [Result.FAIL, Result.ERROR, Result.SKIP]


# Malformed objects: every field of every supported kind replaced by junk of another type, under the bundled
# policies. None may raise; whatever cannot be read becomes a result, never an exception.
WORKLOADS = Path(__file__).parent / "data" / "workloads"
JUNK: list[Any] = [None, [], {}, "x", -1, True]
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n", "annotations": {"a": "b"}},
    "spec": {"unschedulable": False, "taints": [{"key": "k", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"nvidia.com/gpu": "8", "rdma/ib": "4"},
        "allocatable": {"nvidia.com/gpu": "7"},
        "conditions": [{"type": "XIDErrors", "status": "True"}],
    },
}


def paths(value: Any, base: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [base] if base else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found += paths(child, (*base, key))
    return found


def replaced(obj: dict[str, Any], path: tuple[Any, ...], junk: Any) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    parent: Any = changed
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = junk
    return changed


def fixtures() -> list[tuple[str, dict[str, Any]]]:
    found = [
        (p.name, yaml.safe_load(p.read_text()))
        for p in sorted(WORKLOADS.glob("*.yaml"))
        if p.name != "golden.yaml"
    ]
    return [*found, ("node", NODE)]


@pytest.fixture(scope="module")
def bundled_engines() -> dict[str, Engine]:
    return {name: build_engine(Settings(cel_backend=name)) for name in cel.BACKENDS}


@pytest.mark.parametrize(("name", "obj"), fixtures(), ids=[f[0] for f in fixtures()])
def test_malformed_fields_never_raise(
    bundled_engines: dict[str, Engine], name: str, obj: dict[str, Any]
) -> None:
    engine = bundled_engines["cel-expr"]
    assert engine.evaluate(obj).supported
    for path in paths(obj):
        if path in (("apiVersion",), ("kind",)):
            continue
        for junk in JUNK:
            evaluation = engine.evaluate(replaced(obj, path, junk))
            assert evaluation.supported, (path, junk)


SMALL_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "j", "labels": {"kubegap.dev/workload": "training"}, "annotations": {"a": "b"}},
    "spec": {
        "parallelism": 2,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "args": ["--save-interval", "500"],
                        "env": [{"name": "NCCL_NET", "value": "Socket"}],
                        "resources": {"limits": {"nvidia.com/gpu": 8}},
                        "livenessProbe": {"exec": {}, "periodSeconds": 10},
                    }
                ]
            }
        },
    },
}


@pytest.mark.parametrize("obj", [SMALL_JOB, NODE], ids=["job", "node"])
def test_malformed_fields_never_raise_on_cel_python(
    bundled_engines: dict[str, Engine], obj: dict[str, Any]
) -> None:
    """The slower runtime (tens of ms an object), lightly: a small Job and the node, one junk value."""
    engine = bundled_engines["cel-python"]
    for path in paths(obj):
        if path not in (("apiVersion",), ("kind",)):
            assert engine.evaluate(replaced(obj, path, "x")).supported


@pytest.mark.parametrize(
    "obj",
    [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"containers": None}}},
        },
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": ["not", "a", "map"], "spec": {}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": "x"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": None, "spec": None},
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "p"},
            "spec": {"pytorchReplicaSpecs": [1, 2]},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "resources": {"limits": {"nvidia.com/gpu": 8}},
                        "env": "x",
                        "command": "bash -c x",
                        "args": [{"a": 1}],
                    }
                ]
            },
        },
    ],
)
def test_named_malformed_objects(
    bundled_engines: dict[str, Engine], backend: str, obj: dict[str, Any]
) -> None:
    evaluation = bundled_engines[backend].evaluate(obj)
    assert evaluation.supported
    assert all(isinstance(f, Finding) for f in evaluation.results)


def test_blank_template_exemption_does_not_hide_a_reasoned_workload_one() -> None:
    from kubegap.config import Settings
    from kubegap.evaluate import build_engine

    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "annotations": {"ignore.kubegap.dev/health-probes": "smoke test"}},
        "spec": {
            "parallelism": 2,
            "template": {
                "metadata": {"annotations": {"ignore.kubegap.dev/health-probes": " "}},
                "spec": {"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": 8}}}]},
            },
        },
    }
    results = build_engine(Settings(select=("health-probes",))).evaluate(job).results
    assert {(r.rule, r.result.value) for r in results} == {
        ("liveness-probe", "skip"),
        ("exemption-reason", "fail"),
    }
    assert next(r for r in results if r.rule == "liveness-probe").message == "exempted: smoke test"


def _templated(value: Any) -> dict[str, Any]:
    """A one-container PyTorchJob whose GPU limit is `value` (a CPU count it cannot read beside it)."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "templated", "namespace": "ml"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 4, "template": {"spec": {"containers": [
            {"name": "trainer", "image": "t", "command": ["torchrun", "train.py"],
             "resources": {"limits": {"nvidia.com/gpu": value, "cpu": "${CPUS}"}}},
        ]}}}}},
    }  # fmt: skip


@pytest.mark.parametrize("value", ["${GPUS}", "__SLOTS__", None, "8x", True])
def test_an_accelerator_count_that_cannot_be_read_is_a_finding(value: Any) -> None:
    evaluation = build_engine(Settings()).evaluate(_templated(value))
    [finding] = evaluation.findings  # it counts 0 GPUs, so nothing else applies: the finding says why
    assert (finding.policy, finding.rule, finding.severity) == (
        "unresolved-count",
        "resources",
        Severity.MEDIUM,
    )
    assert finding.path == (
        "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.limits['nvidia.com/gpu']"
    )
    assert "not a whole number" in finding.message
    summary = Summary()
    summary.add(evaluation.results)
    assert summary.to_json()["unsized"] == 1


@pytest.mark.parametrize("value", [0, "0", 8, "8"])
def test_a_readable_count_is_no_finding(value: Any) -> None:
    findings = build_engine(Settings()).evaluate(_templated(value)).findings
    assert not [f for f in findings if f.policy == "unresolved-count"]


def test_a_finding_lists_unseen_values_only_where_they_could_change_it() -> None:
    obj = _templated(8)
    container = obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]
    findings = {f.rule: f for f in build_engine(Settings()).evaluate(obj).findings}
    assert findings["liveness-probe"].unresolved == ()  # a probe is no env value
    assert findings["nccl-nic-hints"].unresolved == ("env HF_TOKEN from Secret hf (never read)",)


def test_a_tpu_trainer_is_told_about_accelerators_not_gpus() -> None:
    obj = _templated(8)
    resources = obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]
    resources["limits"] = {"google.com/tpu": 4}
    [finding] = [f for f in build_engine(Settings()).evaluate(obj).findings if f.rule == "liveness-probe"]
    assert finding.message == "no livenessProbe: a hung trainer keeps its accelerators until a person notices"


def test_evaluations_keep_pythons_none_alive() -> None:
    """cel-expr-python 0.1.3 hands a null result back with one reference to Python's None too few; a
    process that returns enough of them crashes (none_dealloc). The engine's programs return no null, so
    the count of references to None stays flat however many objects are judged."""
    engine = build_engine(Settings(cel_backend="cel-expr"))
    every = [yaml.safe_load(p.read_text()) for p in sorted(WORKLOADS.glob("*.yaml"))]
    objects = [o for o in every if isinstance(o, dict)]
    for obj in objects:  # settle caches first: their first entries hold references to None too
        engine.evaluate(copy.deepcopy(obj))
    gc.collect()  # earlier tests' garbage, freed mid-loop, would release thousands of references at once
    before = sys.getrefcount(None)
    for _ in range(30):
        for obj in objects:
            engine.evaluate(obj)
    gc.collect()
    lost = before - sys.getrefcount(None)
    assert lost < 30 * len(objects) // 4, lost

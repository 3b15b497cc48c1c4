from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubegap import policy
from kubegap.errors import KubegapError, PolicyError
from kubegap.findings import Severity

MINIMAL = """\
apiVersion: kubegap.dev/v1alpha1
kind: Policy
metadata: {name: NAME}
spec:
  title: A test policy
  severity: low
  scope: container
  remediation: Fix it.
  validations:
    - {name: always, expression: "true"}
"""


def write_policy(root: Path, name: str, text: str, folder: bool = True) -> Path:
    path = root / name / "policy.yaml" if folder else root / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).replace("NAME", name))
    return path


# RULES.md §2: ids, validation names, severities, scopes and defaults are a contract with users.
BUNDLED: dict[str, tuple[Severity, str, dict[str, tuple[Severity, str]], dict[str, Any]]] = {
    "nccl-timeout": (
        Severity.HIGH,
        "container",
        {
            "timeout-declared": (Severity.HIGH, "container"),
            "timeout-bounded": (Severity.HIGH, "container"),
            "async-error-handling": (Severity.HIGH, "container"),
            "watchdog-enabled": (Severity.MEDIUM, "container"),
            "no-placebo-timeout": (Severity.LOW, "container"),
        },
        {"maxCollectiveTimeout": 1800.0, "maxHeartbeatTimeout": 600.0},
    ),
    "checkpoint-interval": (
        Severity.HIGH,
        "workload",
        {
            "checkpointing-enabled": (Severity.HIGH, "workload"),
            "interval-declared": (Severity.HIGH, "workload"),
            "interval-bounded": (Severity.HIGH, "workload"),
        },
        {"maxCheckpointInterval": 600.0},
    ),
    "gpu-nic-topology": (
        Severity.HIGH,
        "template",
        {
            "nic-attached": (Severity.HIGH, "template"),
            "nccl-nic-hints": (Severity.MEDIUM, "container"),
            "no-transport-fallback": (Severity.HIGH, "container"),
        },
        {
            "nicResources": [
                "rdma/*",
                "vpc.amazonaws.com/efa",
                "nvidia.com/*rdma*",
                "nvidia.com/*sriov*",
                "openshift.io/*",
            ]
        },
    ),
    "health-probes": (
        Severity.HIGH,
        "container",
        {"liveness-probe": (Severity.HIGH, "container"), "probe-window": (Severity.MEDIUM, "container")},
        {"minLivenessWindow": 300.0},
    ),
    "restart-budget": (
        Severity.MEDIUM,
        "workload",
        {"auto-restart": (Severity.MEDIUM, "workload"), "rendezvous-bounded": (Severity.MEDIUM, "workload")},
        {"maxRendezvousTimeout": 600.0},
    ),
    "gpu-node-health": (
        Severity.HIGH,
        "node",
        {
            "gpus-healthy": (Severity.HIGH, "node"),
            "nics-healthy": (Severity.HIGH, "node"),
            "returned-validated": (Severity.HIGH, "node"),
            "deep-check-fresh": (Severity.LOW, "node"),
        },
        {
            "perDeviceNicResources": ["vpc.amazonaws.com/efa", "rdma/ib", "nvidia.com/*rdma*"],
            "deepCheckLabels": ["autopilot.ibm.com/dcgm.level.3"],
            "maxDeepCheckAge": 720 * 3600.0,
        },
    ),
    "checkpoint-recovery": (
        Severity.HIGH,
        "workload",
        {
            "storage-persistent": (Severity.HIGH, "workload"),
            "resume-latest": (Severity.HIGH, "workload"),
            "grace-covers-save": (Severity.MEDIUM, "workload"),
            "save-async": (Severity.INFO, "workload"),
        },
        {"maxSyncInterval": 600.0, "largeJobAccelerators": 512},
    ),
    "gpu-nic-alignment": (Severity.MEDIUM, "claim", {"pcie-root-aligned": (Severity.MEDIUM, "claim")}, {}),
    "gpu-nic-rails": (
        Severity.MEDIUM,
        "template",
        {"hca-per-gpu": (Severity.MEDIUM, "container"), "nic-per-rail": (Severity.MEDIUM, "template")},
        {
            "railsPerNode": {},
            "nodeTypeLabel": "node.kubernetes.io/instance-type",
            "perDeviceNicResources": [
                "vpc.amazonaws.com/efa",
                "rdma/ib",
                "nvidia.com/*rdma*",
                "nvidia.com/*sriov*",
                "openshift.io/*",
            ],
            "sharedNicResources": ["rdma/*shared*", "*/rdma_shared_device*", "*/hca_shared_devices*"],
        },
    ),
    "hot-spares": (
        Severity.MEDIUM,
        "pool",
        {"spares-available": (Severity.MEDIUM, "pool")},
        {"poolLabel": "node.kubernetes.io/instance-type", "nodesPerSpare": 16, "minGangNodes": 2},
    ),
    "link-monitor": (Severity.HIGH, "cluster-node", {"monitor-running": (Severity.HIGH, "cluster-node")}, {}),
    "nccl-transport": (
        Severity.MEDIUM,
        "container",
        {
            "ib-timeout-bounded": (Severity.MEDIUM, "container"),
            "ib-retry-count": (Severity.MEDIUM, "container"),
            "ib-async-events": (Severity.MEDIUM, "container"),
        },
        {"minIbTimeout": 18, "maxIbTimeout": 22},
    ),
    "nccl-flight-recorder": (
        Severity.LOW,
        "container",
        {
            "recorder-on": (Severity.LOW, "container"),
            "dump-kept": (Severity.LOW, "container"),
            "blocking-wait-off": (Severity.INFO, "container"),
        },
        {},
    ),
    "health-taints": (
        Severity.MEDIUM,
        "template",
        {
            "no-blanket-toleration": (Severity.HIGH, "template"),
            "no-health-taint-toleration": (Severity.MEDIUM, "template"),
        },
        {
            "healthTaintKeys": [
                "node.kubernetes.io/unschedulable",
                "sagemaker.amazonaws.com/node-health-status",
                "autopilot.ibm.com/gpuhealth",
                "nvidia.com/gpu-error",
                "AggregatedNodeHealth",
            ]
        },
    ),
    "disruption-budget": (
        Severity.LOW,
        "workload",
        {"disruptions-not-counted": (Severity.LOW, "workload")},
        {},
    ),
}


@pytest.fixture(scope="module")
def bundled() -> dict[str, policy.Policy]:
    return {p.id: p for p in policy.load()}


def test_bundled_policy_ids(bundled: dict[str, policy.Policy]) -> None:
    assert sorted(bundled) == sorted(BUNDLED)


@pytest.mark.parametrize("pid", sorted(BUNDLED))
def test_bundled_policy_matches_the_rule_contract(bundled: dict[str, policy.Policy], pid: str) -> None:
    severity, scope, validations, defaults = BUNDLED[pid]
    loaded = bundled[pid]
    assert (loaded.severity, loaded.scope) == (severity, scope)
    assert {v.name: (v.severity, v.scope) for v in loaded.validations} == validations
    for name, value in defaults.items():
        assert loaded.param(name).default == value
    assert loaded.remediation
    assert loaded.source == f"policies/{pid}/policy.yaml"


def test_bundled_declarations(bundled: dict[str, policy.Policy]) -> None:
    assert bundled["nccl-timeout"].declarations == ("kubegap.dev/collective-timeout",)
    assert set(bundled["checkpoint-interval"].declarations) == {
        "kubegap.dev/checkpoint-interval",
        "kubegap.dev/step-time",
    }


def test_loads_folders_and_loose_files(tmp_path: Path) -> None:
    write_policy(tmp_path, "in-folder", MINIMAL)
    write_policy(tmp_path, "loose", MINIMAL, folder=False)
    (tmp_path / "knobs.yaml").write_text("not a policy: true\n")  # a knob catalogue beside policies
    (tmp_path / "notes.txt").write_text("ignored")
    loaded = policy.load_dir(tmp_path, "mine")
    assert [(p.id, p.source) for p in loaded] == [
        ("in-folder", "mine/in-folder/policy.yaml"),
        ("loose", "mine/loose.yaml"),
    ]
    only = loaded[0]
    assert only.validations[0].severity is Severity.LOW  # inherited from the policy
    assert only.validations[0].scope == "container"


def test_user_folder_replaces_a_bundled_id(tmp_path: Path) -> None:
    write_policy(tmp_path, "nccl-timeout", MINIMAL)
    write_policy(tmp_path, "extra-rule", MINIMAL)
    loaded = {p.id: p for p in policy.load([str(tmp_path)])}
    assert set(BUNDLED) | {"extra-rule"} == set(loaded)
    assert [v.name for v in loaded["nccl-timeout"].validations] == ["always"]
    assert loaded["nccl-timeout"].source.startswith(str(tmp_path))


def test_later_folder_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_policy(first, "mine", MINIMAL.replace("title: A test policy", "title: first"))
    write_policy(second, "mine", MINIMAL.replace("title: A test policy", "title: second"))
    loaded = {p.id: p for p in policy.load([str(first), str(second)])}
    assert loaded["mine"].title == "second"


def test_missing_folder_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="not a folder of policies"):
        policy.load([str(tmp_path / "nope")])


# (what is wrong, edit to MINIMAL, JSON pointer the error must name)
SCHEMA_ERRORS = [
    ("unknown severity", ("severity: low", "severity: urgent"), "/spec/severity"),
    ("unknown scope", ("scope: container", "scope: cluster"), "/spec/scope"),
    ("misspelt field", ("remediation: Fix it.", "remedation: Fix it."), "/spec"),
    ("bad validation name", ("name: always", "name: Always_Bad"), "/spec/validations/0/name"),
    ("empty expression", ('expression: "true"', 'expression: ""'), "/spec/validations/0/expression"),
    ("wrong apiVersion", ("kubegap.dev/v1alpha1", "kubegap.dev/v2"), "/apiVersion"),
    ("no validations", ('    - {name: always, expression: "true"}\n', "    []\n"), "/spec/validations"),
    (
        "param without default",
        ("  validations:", "  params: {limit: {type: int}}\n  validations:"),
        "/spec/params/limit",
    ),
    (
        "param of unknown type",
        ("  validations:", "  params: {limit: {type: float, default: 1}}\n  validations:"),
        "/spec/params/limit/type",
    ),
]


@pytest.mark.parametrize(("case", "edit", "pointer"), SCHEMA_ERRORS, ids=[c[0] for c in SCHEMA_ERRORS])
def test_schema_errors_name_file_and_pointer(
    tmp_path: Path, case: str, edit: tuple[str, str], pointer: str
) -> None:
    old, new = edit
    assert old in MINIMAL
    path = write_policy(tmp_path, "broken", MINIMAL.replace(old, new, 1))
    with pytest.raises(PolicyError) as caught:
        policy.load_dir(tmp_path, "mine")
    message = str(caught.value)
    assert "mine/broken/policy.yaml" in message
    assert f"  {pointer}: " in message, message
    assert path.is_file()


def test_yaml_syntax_error_names_the_file(tmp_path: Path) -> None:
    write_policy(tmp_path, "broken", MINIMAL + "  oops: [\n")
    with pytest.raises(PolicyError, match=r"mine/broken/policy\.yaml: not valid YAML"):
        policy.load_dir(tmp_path, "mine")


@pytest.mark.parametrize(
    ("validations", "named"),
    [
        ('[{name: a, expression: "true"}, {name: a, expression: "false"}]', "a"),
        ('[{name: exemption-reason, expression: "true"}]', "exemption-reason"),
        ('[{name: invalid-declaration, expression: "true"}]', "invalid-declaration"),
    ],
)
def test_duplicate_and_reserved_validation_names(tmp_path: Path, validations: str, named: str) -> None:
    text = MINIMAL.replace('\n    - {name: always, expression: "true"}', " " + validations)
    write_policy(tmp_path, "dup", text)
    with pytest.raises(PolicyError, match=f"policy dup: validation names repeated or reserved: {named}$"):
        policy.load_dir(tmp_path, "mine")


def test_bad_param_default_names_policy_and_param(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        "  validations:", "  params: {limit: {type: duration, default: 10 minutes}}\n  validations:"
    )
    write_policy(tmp_path, "bad-default", text)
    with pytest.raises(PolicyError, match="policy bad-default: parameter limit: bad default"):
        policy.load_dir(tmp_path, "mine")


def test_unknown_param_lists_the_known_ones(bundled: dict[str, policy.Policy]) -> None:
    with pytest.raises(KubegapError, match="maxCollectiveTimeout, maxHeartbeatTimeout"):
        bundled["nccl-timeout"].param("maxTimeout")


@pytest.mark.parametrize(
    ("param_type", "value", "expected"),
    [
        ("duration", "20m", 1200.0),
        ("duration", "1h30m", 5400.0),
        ("duration", 1200, 1200.0),
        ("int", "5", 5),
        ("int", 5, 5),
        ("number", "1.5", 1.5),
        ("number", 2, 2.0),
        ("bool", "true", True),
        ("bool", "FALSE", False),
        ("bool", True, True),
        ("list", "a, b,,c", ["a", "b", "c"]),
        ("list", ["a", 1], ["a", "1"]),
        ("list", "", []),
        ("string", 5, "5"),
        ("intMap", "p5.48xlarge:32, 8:8", {"p5.48xlarge": 32, "8": 8}),
        ("intMap", {8: "8", "a3-megagpu-8g": 8}, {"8": 8, "a3-megagpu-8g": 8}),
        ("intMap", "", {}),
    ],
)
def test_convert_param(param_type: str, value: Any, expected: Any) -> None:
    converted = policy.convert_param(param_type, value)
    assert converted == expected
    assert type(converted) is type(expected)


@pytest.mark.parametrize(
    ("param_type", "value"),
    [
        ("duration", "20"),
        ("duration", ""),
        ("duration", "-5m"),
        ("duration", True),
        ("number", True),
        ("int", "x"),
        ("int", 1.5),
        ("int", True),
        ("number", "fast"),
        ("bool", "yes"),
        ("bool", 1),
        ("intMap", "p5.48xlarge"),
        ("intMap", "p5.48xlarge:many"),
        ("intMap", {"p5.48xlarge": 0}),
        ("intMap", {"p5.48xlarge": True}),
        ("intMap", {"p5.48xlarge": 1.5}),
        ("intMap", {True: 8}),
        ("intMap", {"": 8}),
        ("intMap", ["p5.48xlarge"]),
    ],
)
def test_convert_param_rejects(param_type: str, value: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        policy.convert_param(param_type, value)


def test_an_int_map_is_written_as_set_takes_it() -> None:
    param = policy.Param("rails", "intMap", {})
    text = policy.param_text(param, {"p5.48xlarge": 32, "8": 8})
    assert text == "p5.48xlarge:32, 8:8"
    assert policy.convert_param("intMap", text) == {"p5.48xlarge": 32, "8": 8}
    assert policy.param_text(param, {}) == "{}"
    assert policy.convert_param("intMap", "{}") == {}

"""The NICs a pod asks for (kubegap.facts.nics) and `gpu-nic-rails/nic-per-rail` over them (RULES.md v3)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubegap.config import Settings
from kubegap.evaluate import Engine, build_engine
from kubegap.facts import nics
from kubegap.facts.container import resource_counts
from kubegap.facts.template import pinned_labels
from kubegap.workloads import Container
from tests.test_facts import gather

RAILS = {"gpu-nic-rails": {"railsPerNode": {"p5.48xlarge": 32, "8": 8}}}


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("ib-rail-0,ib-rail-1", 2),
        (" ib-rail-0 , fabric/ib-rail-1@net2 ", 2),
        ('[{"name": "ib-rail-0"}, {"name": "ib-rail-1", "namespace": "fabric", "interface": "net2"}]', 2),
        ("[]", 0),
    ],
)
def test_multus_entries_are_counted_as_multus_reads_them(value: str, count: int) -> None:
    assert nics.attached({nics.MULTUS: value}) == {"multus": count, "unresolved": []}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("ib-rail-0,,ib-rail-1", "'' is not [namespace/]name[@interface]"),
        ("IB_Rail_0", "'IB_Rail_0' is not [namespace/]name[@interface]"),
        ("a/b/c", "'a/b/c' is not"),
        ('["ib-rail-0"]', "a JSON list must hold objects that each name a network"),
        ('[{"namespace": "fabric"}]', "a JSON list must hold objects that each name a network"),
        ('{"name": "ib-rail-0"}', "not a JSON list"),
        ('[{"name": "ib-rail-0"}', "not JSON"),
        ("${RDMA_NETWORKS}", "it holds a template placeholder"),
        ("{{ .Values.networks }}", "it holds a template placeholder"),
        ("[" * 100_000, "cannot be read"),
    ],
)
def test_a_multus_value_kubegap_cannot_read_is_unresolved_not_zero(value: str, why: str) -> None:
    found = nics.attached({nics.MULTUS: value})
    assert "multus" not in found
    assert len(found["unresolved"]) == 1
    assert found["unresolved"][0].startswith(f"annotation {nics.MULTUS} cannot be read: ")
    assert why in found["unresolved"][0]


GKE_A3 = (
    '[{"interfaceName":"eth0","network":"default"},'
    + ",".join(f'{{"interfaceName":"eth{i}","network":"vpc{i}"}}' for i in range(1, 9))
    + "]"
)


@pytest.mark.parametrize(
    ("annotations", "count"),
    [
        ({nics.GKE: GKE_A3}, 8),
        ({nics.GKE: GKE_A3, nics.GKE_DEFAULT: "eth0"}, 8),
        ({nics.GKE: '[{"interfaceName":"eth1","network":"vpc1"}]', nics.GKE_DEFAULT: "eth1"}, 0),
        ({nics.GKE: '[{"interfaceName":"eth0","network":"default"}]'}, 0),
    ],
)
def test_gke_data_interfaces_leave_out_the_default_one(annotations: dict[str, str], count: int) -> None:
    assert nics.attached(annotations) == {"gke": count, "unresolved": []}


@pytest.mark.parametrize(
    "value", ['[{"interfaceName":"eth1"}]', '["eth1"]', '{"interfaceName":"eth1","network":"vpc1"}', "eth1"]
)
def test_a_gke_value_kubegap_cannot_read_is_unresolved(value: str) -> None:
    found = nics.attached({nics.GKE: value})
    assert "gke" not in found and len(found["unresolved"]) == 1


def test_no_annotation_attaches_nothing_and_hides_nothing() -> None:
    assert nics.attached({"other": "x"}) == {"unresolved": []}


def _containers(*limits: dict[str, Any]) -> list[Container]:
    return [
        Container(f"c{i}", ("spec", "containers", i), {"resources": {"limits": each}})
        for i, each in enumerate(limits)
    ]


def test_resources_add_up_each_extended_resource_over_the_containers_largest_first() -> None:
    containers = _containers(
        {"nvidia.com/gpu": 2, "vpc.amazonaws.com/efa": "3", "memory": "10Gi", "cpu": 4},
        {"vpc.amazonaws.com/efa": 29, "example.com/huge": 10_000},
    )
    counts = nics.resource_counts(containers, {id(c): resource_counts(c.spec) for c in containers})
    assert counts == [  # largest first
        {"name": "example.com/huge", "count": 10_000},
        {"name": "vpc.amazonaws.com/efa", "count": 32},
        {"name": "nvidia.com/gpu", "count": 2},
    ]


def test_the_counted_names_are_resource_names_so_globbed_matches_them() -> None:
    """gpu-nic-rails tests these names with `in globbed.NAME`, exact only for names of a globbed list."""
    obj = _with_limits(_job(), **{"vpc.amazonaws.com/efa": 32, "rdma/ib": "${N}", "example.com/x": 0})
    (unit,) = gather(obj).units["template"]
    facts = unit.bindings["template"]
    named = {r["name"] for r in facts["resources"]} | set(facts["unreadableResources"])
    assert named == {"vpc.amazonaws.com/efa", "rdma/ib", "nvidia.com/gpu"}
    assert named <= set(facts["resourceNames"])


def test_unreadable_counts_are_listed_and_zero_is_not_unreadable() -> None:
    containers = _containers(
        {"vpc.amazonaws.com/efa": "${EFA_DEVICES}", "rdma/ib": "0", "nvidia.com/gpu": 8, "memory": "1Gi"},
        {"nvidia.com/sriov_rail0": 1.5, "nvidia.com/sriov_rail1": 0},
    )
    assert nics.unreadable_resources(containers) == ["nvidia.com/sriov_rail0", "vpc.amazonaws.com/efa"]


def _in(key: str, *values: str, operator: str = "In") -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def _affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    node_terms = [{"matchExpressions": t} for t in terms]
    required = {"nodeSelectorTerms": node_terms}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}


TYPE = "node.kubernetes.io/instance-type"


@pytest.mark.parametrize(
    ("spec", "pinned"),
    [
        ({"nodeSelector": {TYPE: "p5.48xlarge"}}, {TYPE: "p5.48xlarge"}),
        (_affinity([_in(TYPE, "p5.48xlarge")]), {TYPE: "p5.48xlarge"}),
        (
            _affinity([_in(TYPE, "p5.48xlarge"), _in("zone")], [_in(TYPE, "p5.48xlarge")]),
            {TYPE: "p5.48xlarge"},
        ),
        (_affinity([_in(TYPE, "p5.48xlarge")], [_in(TYPE, "p5e.48xlarge")]), {}),  # either type may be chosen
        (_affinity([_in(TYPE, "p5.48xlarge", "p5e.48xlarge")]), {}),
        (_affinity([_in(TYPE, "p4d.24xlarge", operator="NotIn")]), {}),
        (
            {"nodeSelector": {TYPE: "p5.48xlarge", "bad": 3}, **_affinity([_in("zone", "a")])},
            {TYPE: "p5.48xlarge", "zone": "a"},
        ),
        ({"nodeSelector": "junk", "affinity": {"nodeAffinity": []}}, {}),
    ],
)
def test_pinned_labels(spec: dict[str, Any], pinned: dict[str, str]) -> None:
    assert pinned_labels(spec) == pinned


_ENGINES: dict[str, Engine] = {}


@pytest.fixture(params=["cel-expr", "cel-python"])
def engine(request: pytest.FixtureRequest) -> Engine:
    backend: str = request.param
    if backend not in _ENGINES:
        settings = Settings(select=("gpu-nic-rails",), cel_backend=backend).with_params(RAILS)
        _ENGINES[backend] = build_engine(settings)
    return _ENGINES[backend]


def _container(gpus: int) -> dict[str, Any]:
    return {"name": "t", "image": "t", "resources": {"limits": {"nvidia.com/gpu": gpus}}}


def _job(**spec: Any) -> dict[str, Any]:
    annotations = spec.pop("annotations", {})
    template = {"metadata": {"annotations": annotations}, "spec": {"containers": [_container(8)], **spec}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"parallelism": 2, "completions": 2, "template": template},
    }


def _verdict(engine: Engine, obj: dict[str, Any]) -> tuple[str, str] | None:
    """(result, message) of nic-per-rail on the job's one pod template; None where it is not judged."""
    found = [r for r in engine.evaluate(obj).results if r.rule == "nic-per-rail"]
    assert len(found) <= 1
    return (found[0].result.value, found[0].message) if found else None


def _result(engine: Engine, obj: dict[str, Any]) -> str | None:
    verdict = _verdict(engine, obj)
    return verdict[0] if verdict else None


def _with_limits(obj: dict[str, Any], **limits: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].update(limits)
    return out


def test_a_pod_that_shows_no_nic_fails_where_the_rail_count_is_declared(engine: Engine) -> None:
    verdict = _verdict(engine, _job())
    assert verdict is not None and verdict[0] == "fail"
    assert "requests no NIC per rail" in verdict[1] and "8-GPU pods have 8 rails" in verdict[1]


def test_the_largest_of_the_three_counts_decides(engine: Engine) -> None:
    eight_networks = {"annotations": {nics.MULTUS: ",".join(f"ib-{i}" for i in range(8))}}
    assert _result(engine, _with_limits(_job(**eight_networks), **{"nvidia.com/sriov_ib": 2})) == "pass"
    assert _result(engine, _with_limits(_job(), **{"nvidia.com/sriov_ib": 8})) == "pass"
    verdict = _verdict(engine, _with_limits(_job(), **{"nvidia.com/sriov_ib": 4}))
    assert verdict is not None and verdict[0] == "fail"
    assert "requests nvidia.com/sriov_ib: 4 and" in verdict[1]


def test_devices_of_two_nic_resources_are_not_added(engine: Engine) -> None:
    """A pod's NICs come from one device plugin: two resources of 4 are not 8 NICs per rail."""
    two = _with_limits(_job(), **{"nvidia.com/sriov_ib": 4, "vpc.amazonaws.com/efa": 4})
    verdict = _verdict(engine, two)
    assert verdict is not None and verdict[0] == "fail"
    assert "nvidia.com/sriov_ib: 4, vpc.amazonaws.com/efa: 4" in verdict[1]


def test_an_unreadable_nic_count_fails_as_unresolved_unless_the_rest_already_suffice(engine: Engine) -> None:
    unreadable = _with_limits(_job(), **{"vpc.amazonaws.com/efa": "${EFA_DEVICES}"})
    verdict = _verdict(engine, unreadable)
    assert verdict is not None and verdict[0] == "fail"
    assert "unresolved: kubegap cannot count" in verdict[1] and "vpc.amazonaws.com/efa" in verdict[1]
    assert "GPUs share NICs" not in verdict[1]
    enough = _with_limits(unreadable, **{"nvidia.com/sriov_ib": 8})
    assert _result(engine, enough) == "pass"


@pytest.mark.parametrize(
    "spec",
    [
        {"hostNetwork": True},
        {"resourceClaims": [{"name": "nics", "resourceClaimTemplateName": "rdma-nics"}]},
        {"nodeSelector": {TYPE: "g6.48xlarge"}, "containers": [_container(4)]},
    ],
)
def test_pods_whose_nics_a_manifest_cannot_show_or_no_count_covers_are_not_judged(
    engine: Engine, spec: dict[str, Any]
) -> None:
    assert _verdict(engine, _job(**spec)) is None


def test_a_shared_rdma_device_is_not_judged(engine: Engine) -> None:
    assert _verdict(engine, _with_limits(_job(), **{"rdma/hca_shared_devices_a": 1})) is None


def test_without_a_declared_rail_count_nothing_is_judged() -> None:
    engine = build_engine(Settings(select=("gpu-nic-rails",)))
    assert _verdict(engine, _job()) is None

"""Integers as Kubernetes reads them, and numbers no runtime can hold reaching the engine without a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from kubegap import cel, integers, quantities, yamlguard
from kubegap.config import Settings
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Result
from kubegap.integers import INT64_MAX, INT64_MIN, NumberError

PARSED = [
    ("0", 0),
    ("-17", -17),
    (str(INT64_MAX), INT64_MAX),
    (str(INT64_MIN), INT64_MIN),
    (str(INT64_MAX + 1), float(INT64_MAX + 1)),  # past int64: float64, as sigs.k8s.io/json decodes it
    ("1" + "0" * 300, 1e300),
]


@pytest.mark.parametrize(("text", "expected"), PARSED)
def test_parse_keeps_int64_and_falls_back_to_float(text: str, expected: int | float) -> None:
    value = integers.parse(text)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize("text", ["9" * 310, "9" * 5_000, "9" * 100_000, "-" + "9" * 400])
def test_parse_refuses_what_float64_cannot_hold(text: str) -> None:
    with pytest.raises(NumberError, match="beyond the range of a Kubernetes number"):
        integers.parse(text)


def test_loads_reads_a_page_with_kubernetes_numbers() -> None:
    page = integers.loads(b'{"items": [{"n": 3, "big": ' + str(2**70).encode() + b', "f": 1.5}]}')
    assert page == {"items": [{"n": 3, "big": float(2**70), "f": 1.5}]}
    with pytest.raises(NumberError):
        integers.loads(b'{"n": ' + b"9" * 100_000 + b"}")
    with pytest.raises(json.JSONDecodeError):
        integers.loads(b"{")


@pytest.mark.parametrize(
    ("value", "count"),
    [("8", 8), ("0008", 8), (" 9223372036854775807 ", INT64_MAX), ("9" * 100_000, INT64_MAX), ("1k", 0)],
)
def test_quantity_counts_saturate_at_int64(value: str, count: int) -> None:
    assert quantities.count(value) == count


def test_short_quantity_texts_are_read_once_and_long_ones_are_never_kept() -> None:
    short = " 0000000000000000000000000031 "  # 30 characters: a quantity's length
    quantities.count(short)
    hits = quantities._known_count.cache_info().hits
    assert quantities.count(short) == 31
    assert quantities._known_count.cache_info().hits == hits + 1
    # a webhook may be sent megabytes of digits: counted, and not kept
    before = quantities._known_count.cache_info()
    assert quantities.count("7" * 1_000_000) == INT64_MAX
    after = quantities._known_count.cache_info()
    assert (after.hits, after.misses, after.currsize) == (before.hits, before.misses, before.currsize)


JOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: huge, namespace: llm}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: REPLICAS
      template:
        spec:
          containers:
            - name: trainer
              image: registry.example/llm:1
              command: [torchrun, train.py]
              resources:
                limits: {nvidia.com/gpu: GPUS}
"""


@pytest.fixture(scope="module", params=cel.BACKENDS)
def engine(request: pytest.FixtureRequest) -> Engine:
    return build_engine(Settings(cel_backend=request.param))


@pytest.mark.parametrize(
    ("replicas", "gpus"),
    [(str(INT64_MAX), "8"), ("2", '"' + "9" * 5_000 + '"'), (str(INT64_MAX), str(INT64_MAX))],
    ids=["replicas at int64 max", "5,000-digit GPU string", "both at int64 max"],
)
def test_totals_past_int64_are_errors_or_findings_never_a_crash_or_a_clean_pass(
    engine: Engine, replicas: str, gpus: str
) -> None:
    obj: Any = yaml.safe_load(JOB.replace("REPLICAS", replicas).replace("GPUS", gpus))
    evaluation = engine.evaluate(obj)
    assert evaluation.supported
    assert any(f.result in (Result.FAIL, Result.ERROR) for f in evaluation.results)


def test_yaml_integers_past_int64_are_floats_as_in_the_cluster() -> None:
    data = yamlguard.load("a: 9223372036854775808\nb: 9223372036854775807\nc: 0x10000000000000000\n")
    assert [type(data[k]) for k in "abc"] == [float, int, float]

"""NCCL InfiniBand transport facts (kubegap/facts/transport.py; RULES.md v3 `nccl-transport`)."""

from __future__ import annotations

from typing import Any

import pytest

from kubegap.facts import transport


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, {}),
        # NCCL's guide: 20 waits 4.3 s an attempt, about 30 s over 7 retries
        ({"NCCL_IB_TIMEOUT": "20"}, {"readable": True, "value": 20, "infinite": False, "windowText": "30s"}),
        ({"NCCL_IB_TIMEOUT": "22"}, {"attemptText": "17s", "windowText": "2m"}),
        ({"NCCL_IB_TIMEOUT": "14"}, {"attemptText": "0.067s", "windowText": "0.47s"}),
        ({"NCCL_IB_TIMEOUT": "20", "NCCL_IB_RETRY_CNT": "3"}, {"windowText": "13s"}),
        ({"NCCL_IB_TIMEOUT": "0"}, {"readable": True, "infinite": True}),
        ({"NCCL_IB_TIMEOUT": "32"}, {"readable": True, "infinite": True}),
        ({"NCCL_IB_TIMEOUT": "fast"}, {"readable": False, "infinite": False, "value": 0}),
        ({"NCCL_IB_TIMEOUT": "1e3"}, {"readable": False}),
        ({"NCCL_IB_TIMEOUT": "99999999999999999999"}, {"readable": False}),  # no 64-bit overflow
    ],
)
def test_timeout(env: dict[str, str], expected: dict[str, Any]) -> None:
    found = transport.gather(env).get("timeout", {})
    assert {k: found.get(k) for k in expected} == expected
    assert ("windowText" in found) == (found.get("readable", False) and not found.get("infinite", True))


@pytest.mark.parametrize(
    ("text", "readable", "value"),
    [("7", True, 7), ("0", True, 0), ("8", True, 8), (" 3 ", True, 3), ("x", False, 0)],
)
def test_retry_count(text: str, readable: bool, value: int) -> None:
    assert transport.gather({"NCCL_IB_RETRY_CNT": text})["retryCount"] == {
        "text": text,
        "readable": readable,
        "value": value,
    }


def test_an_out_of_range_retry_count_leaves_the_window_at_nccls_default() -> None:
    """A retry count the queue pair cannot take does not shrink the window shown beside the timeout."""
    found = transport.gather({"NCCL_IB_TIMEOUT": "20", "NCCL_IB_RETRY_CNT": "9"})
    assert found["timeout"]["windowText"] == "30s"

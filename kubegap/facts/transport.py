"""NCCL's InfiniBand transport settings of a container (RULES.md `nccl-transport`): how long a queue pair
waits for an acknowledgement, how often it retries, and whether fatal port events end communication.

Sources (NVIDIA/nccl): `src/transport/net_ib/connect.cc` NCCL_PARAM(IbTimeout, "IB_TIMEOUT", 20) and
NCCL_PARAM(IbRetryCnt, "IB_RETRY_CNT", 7), set as the queue pair's `timeout` and `retry_cnt`;
`src/transport/net_ib/common.cc` NCCL_PARAM(IbAsyncEvents, "IB_RETURN_ASYNC_EVENTS", 1). The NCCL user guide
(docs/env.html, NCCL_IB_TIMEOUT) gives each wait as 4.096 µs · 2^timeout, 0 or ≥ 32 as no timeout at all,
and the time before NCCL reports a network error as the wait times the retry count (20 and 7: ≈ 30 s).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kubegap import durations

TIMEOUT: Final = "NCCL_IB_TIMEOUT"
RETRY_COUNT: Final = "NCCL_IB_RETRY_CNT"
DEFAULT_RETRY_COUNT: Final = 7
_TICK_SECONDS: Final = 4.096e-6
_WHOLE: Final = re.compile(r"^\s*[0-9]{1,9}\s*$")  # longer strings of digits are not a 5-bit field either


def _about(seconds: float) -> str:
    """4.295 -> 4.3s, 30.06 -> 30s, 120.3 -> 2m: the precision the NCCL guide quotes."""
    return durations.format_seconds(
        round(seconds) if seconds >= 10 else round(seconds, 1 if seconds >= 1 else 3)
    )


def _whole(text: str) -> int | None:
    return int(text) if _WHOLE.match(text) else None


def _timeout(text: str, retries: int) -> dict[str, Any]:
    value = _whole(text)
    found: dict[str, Any] = {"text": text, "readable": value is not None, "value": value or 0}
    found["infinite"] = value is not None and (value == 0 or value >= 32)
    if value is not None and not found["infinite"]:
        wait = _TICK_SECONDS * 2**value
        found["attemptText"] = _about(wait)
        found["windowText"] = _about(wait * retries)
    return found


def gather(env: Mapping[str, str]) -> dict[str, Any]:
    """`timeout` and `retryCount` facts for the variables that are set with a visible value."""
    facts: dict[str, Any] = {}
    retries = DEFAULT_RETRY_COUNT
    if RETRY_COUNT in env:
        count = _whole(env[RETRY_COUNT])
        facts["retryCount"] = {"text": env[RETRY_COUNT], "readable": count is not None, "value": count or 0}
        retries = count if count is not None and 1 <= count <= DEFAULT_RETRY_COUNT else retries
    if TIMEOUT in env:
        facts["timeout"] = _timeout(env[TIMEOUT], retries)
    return facts

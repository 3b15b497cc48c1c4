"""PyTorch's NCCL flight recorder in a container (RULES.md `nccl-flight-recorder`): is it recording, does
it dump on a timeout, and does the dump land where it outlives the pod.

Sources (pytorch/pytorch torch/csrc/distributed/c10d): FlightRecorder.hpp reads the ring size from
TORCH_FR_BUFFER_SIZE, else TORCH_NCCL_TRACE_BUFFER_SIZE (0 = off; the default is 2000 in current releases
and was 0 before, so kubegap asks for it to be written); ProcessGroupNCCL.cpp reads
TORCH_NCCL_DUMP_ON_TIMEOUT (false in older 2.x releases, true in current ones) and TORCH_NCCL_BLOCKING_WAIT
(alias NCCL_BLOCKING_WAIT, default false); FlightRecorder.cpp writes each rank's dump to the prefix in
TORCH_NCCL_DEBUG_INFO_TEMP_FILE (newer releases also TORCH_FR_DUMP_TEMP_FILE), default
`/tmp/nccl_trace_rank_`, followed by the rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubegap.facts import mounts
from kubegap.fieldpath import FieldPath

BUFFER: Final = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")  # the newer name wins
DUMP: Final = ("TORCH_NCCL_DUMP_ON_TIMEOUT",)
FILE: Final = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
BLOCKING: Final = ("TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT")
DEFAULT_FILE: Final = "/tmp/nccl_trace_rank_"
_ON, _OFF = frozenset({"1", "true"}), frozenset({"0", "false"})


def _first(names: Sequence[str], env: Mapping[str, str], seen: Sequence[str]) -> tuple[str, str | None]:
    """(variable, value) of the first of `names` that is set; value None when it cannot be seen."""
    for name in names:
        if name in env:
            return name, env[name]
        if name in seen:
            return name, None
    return "", None


def _state(env: Mapping[str, str], seen: Sequence[str]) -> str:
    """Why the recorder is not both recording and dumping on a timeout; '' when it is."""
    size_var, size = _first(BUFFER, env, seen)
    dump_var, dump = _first(DUMP, env, seen)
    if not size_var:
        return f"{BUFFER[1]} is not set (older PyTorch releases record nothing by default)"
    if size is None:
        return f"{size_var} cannot be seen"
    if not size.strip().isdigit() or int(size) <= 0:
        return f"{size_var}={size} records nothing"
    if not dump_var:
        return f"{DUMP[0]} is not set (older PyTorch releases do not dump on a timeout by default)"
    if dump is None:
        return f"{dump_var} cannot be seen"
    if dump.strip().lower() not in _ON:
        off = dump.strip().lower() in _OFF
        return f"{dump_var}={dump} {'turns the dump off' if off else 'is not read as on (1 or true)'}"
    return ""


def _dump_file(
    env: Mapping[str, str],
    seen: Sequence[str],
    pod_spec: Mapping[str, Any],
    spec: Mapping[str, Any],
    base: FieldPath,
) -> dict[str, Any]:
    variable, value = _first(FILE, env, seen)
    prefix = value if variable else DEFAULT_FILE
    found: dict[str, Any] = {"file": prefix or "", "fileSource": variable or "default"}
    if prefix is None or not prefix.startswith("/"):
        found["fileWhere"] = "a place kubegap cannot resolve" if prefix is None else "a relative path"
        found |= {"fileKept": False, "fileUnresolved": True}
        return found
    directory = prefix if prefix.endswith("/") else mounts.parent(prefix)
    volume = mounts.volume_at(pod_spec, spec, base, directory or "/")
    found["fileKept"] = mounts.kept(volume)
    found["fileUnresolved"] = False
    if not volume:
        found["fileWhere"] = "the container's own filesystem"
    else:
        kind = volume["kind"] or "undeclared"
        access = " (read-only)" if volume["readOnly"] else ""
        found["fileWhere"] = f"volume {volume['volume']} ({kind}) at {volume['mountPath']}{access}"
    return found


def gather(
    env: Mapping[str, str],
    seen: Sequence[str],
    pod_spec: Mapping[str, Any],
    spec: Mapping[str, Any],
    base: FieldPath,
) -> dict[str, Any]:
    """`seen`: every variable name set, including those whose value cannot be seen."""
    problem = _state(env, seen)
    blocking, value = _first(BLOCKING, env, seen)
    facts: dict[str, Any] = {"on": not problem, "problem": problem}
    facts["blockingWait"] = blocking if value is not None and value.strip().lower() in _ON else ""
    return facts | _dump_file(env, seen, pod_spec, spec, base)

"""NIC-rail facts of a container (RULES.md v3 `gpu-nic-rails`): how many HCAs `NCCL_IB_HCA` lets NCCL use.

NCCL's syntax (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-hca): a comma list of
`device[:port]`; a leading `^` excludes the listed devices, a leading `=` matches names exactly, and
without `=` each entry is a name prefix (`mlx5` selects every mlx5 card). Only a list whose size kubegap
can know is counted: exact names, or entries that name one numbered device (`mlx5_3`, `mlx5_3:1`).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

from kubegap.facts.env import Environment
from kubegap.fieldpath import render

_NUMBERED: Final = re.compile(r".*[_-]\d+\Z")  # mlx5_3, bnxt_re-2; not the family mlx5


def ib_hca(environment: Environment) -> dict[str, Any] | None:
    """{count, text, path} of an NCCL_IB_HCA whose HCAs can be counted; None otherwise."""
    var = environment.variables.get("NCCL_IB_HCA")
    if var is None or var.value is None:
        return None
    count = _hca_count(var.value)
    return None if count is None else {"count": count, "text": var.value, "path": render(var.path)}


# Keyed by the text: the pods of a cluster set NCCL_IB_HCA to a few values (bounded all the same).
@functools.lru_cache(maxsize=1024)
def _hca_count(value: str) -> int | None:
    """How many HCAs an NCCL_IB_HCA value names; None where the node decides."""
    text = value.strip()
    if text.startswith("^"):
        return None  # an exclusion list: the HCAs left depend on the node
    exact = text.startswith("=")
    entries = {e.strip() for e in text.lstrip("=").split(",") if e.strip()}
    if not entries or (not exact and not all(_NUMBERED.match(e.split(":", 1)[0]) for e in entries)):
        return None  # a family prefix (`mlx5`) selects as many cards as the node has
    return len(entries)

"""NCCL_IB_HCA counted as NCCL reads it (RULES.md v3 `gpu-nic-rails`)."""

from __future__ import annotations

import pytest

from kubegap.facts import rails
from kubegap.facts.env import Environment, Variable


def env(value: str | None) -> Environment:
    return Environment({"NCCL_IB_HCA": Variable("NCCL_IB_HCA", value, ("env", 0), "env")}, ())


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("mlx5_0,mlx5_1", 2),
        ("mlx5_0:1,mlx5_1:1,mlx5_1:1", 2),  # a repeated entry is one HCA
        ("=mlx5_0,mlx5_1,mlx5_2,mlx5_3", 4),
        ("=mlx5", 1),  # exact: the device named mlx5
        (" mlx5_0 , ", 1),
        ("mlx5", None),  # a family prefix: every mlx5 card
        ("mlx5_0,mlx5", None),
        ("^mlx5_4", None),  # an exclusion: what is left depends on the node
        ("^=mlx5_bond_0", None),
        ("", None),
        (None, None),  # from a Secret: unseen
    ],
)
def test_hcas_are_counted_only_where_the_list_says_how_many(value: str | None, count: int | None) -> None:
    found = rails.ib_hca(env(value))
    assert (found["count"] if found else None) == count
    if found:
        assert found["path"] == "env[0]"


def test_unset_is_not_judged() -> None:
    assert rails.ib_hca(Environment({}, ())) is None

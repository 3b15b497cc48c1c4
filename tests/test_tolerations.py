"""Toleration facts (kubegap/facts/tolerations.py; RULES.md v3 `health-taints`)."""

from __future__ import annotations

from typing import Any

import pytest

from kubegap.facts import tolerations


@pytest.mark.parametrize(
    ("items", "blanket", "keys"),
    [
        ([], "", []),
        ([{"operator": "Exists"}], "spec.template.spec.tolerations[0]", []),
        ([{"operator": "Exists", "effect": "NoExecute"}], "spec.template.spec.tolerations[0]", []),
        ([{"operator": "Exists", "effect": "PreferNoSchedule"}], "", []),  # keeps no pod away anyway
        (
            [{"key": "", "operator": "Equal", "value": "x"}],
            "",
            [],
        ),  # not valid without a key: matches nothing
        (
            [
                {"key": "nvidia.com/gpu", "operator": "Exists"},
                {"key": "autopilot.ibm.com/gpuhealth", "operator": "Equal", "value": "EVICT"},
            ],
            "",
            ["autopilot.ibm.com/gpuhealth", "nvidia.com/gpu"],
        ),
        ([{"key": "autopilot.ibm.com/gpuhealth", "effect": "PreferNoSchedule"}], "", []),
        ("not a list", "", []),
    ],
)
def test_tolerations(items: Any, blanket: str, keys: list[str]) -> None:
    found = tolerations.gather({"tolerations": items}, ("spec", "template"))
    assert found["blanketToleration"] == blanket
    assert found["toleratedKeys"] == keys and found["toleratedKeysText"] == "\n".join(keys)
    assert set(found["toleratedKeyPaths"]) == set(keys)

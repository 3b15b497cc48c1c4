"""Node-health marks and deep-check ages (kubegap/facts/health.py), at a fixed clock."""

from __future__ import annotations

import datetime

from kubegap.facts.health import health_facts

NOW = datetime.datetime(2024, 10, 12, 19, 12, 3, tzinfo=datetime.UTC).timestamp()


def test_marks_are_labels_then_annotations_one_line_each() -> None:
    facts = health_facts(
        {
            "labels": {"autopilot.ibm.com/gpuhealth": "EVICT"},
            "annotations": {"note": "first\nautopilot.ibm.com/gpuhealth=ERR"},
        },
        NOW,
    )
    assert facts["marks"] == [
        "autopilot.ibm.com/gpuhealth=EVICT",
        "note=first autopilot.ibm.com/gpuhealth=ERR",
    ]


def test_autopilot_stamp_gives_result_and_age() -> None:
    labels = {
        "autopilot.ibm.com/dcgm.level.3": "PASS_2024-10-10_19.12.03UTC",
        "other/check": "ERR_2024-10-12_19.12.03UTC_page_retirement_row_remap.0",
    }
    checks = health_facts({"labels": labels}, NOW)["deepChecks"]
    assert checks == [
        {
            "label": "autopilot.ibm.com/dcgm.level.3",
            "result": "PASS",
            "ran": "2024-10-10 19:12 UTC",
            "ageSeconds": 2 * 86400.0,
        },
        {"label": "other/check", "result": "ERR", "ran": "2024-10-12 19:12 UTC", "ageSeconds": 0.0},
    ]


def test_values_without_a_readable_time_have_no_age() -> None:
    labels = {
        "a": "PASS",  # the Go rewrite of the check writes no time
        "b": "PASS_2024-13-45_19.12.03UTC",
        "c": "PASS_2024-10-10",
        "d": 7,
    }
    assert health_facts({"labels": labels}, NOW)["deepChecks"] == []


def test_a_time_in_the_future_is_not_a_negative_age() -> None:
    labels = {"x": "PASS_2030-01-01_00.00.00UTC"}
    assert health_facts({"labels": labels}, NOW)["deepChecks"][0]["ageSeconds"] == 0.0


def test_malformed_metadata_gives_no_marks() -> None:
    assert health_facts({"labels": ["a"], "annotations": None}, NOW) == {"marks": [], "deepChecks": []}

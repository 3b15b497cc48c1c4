"""Shared fixtures: real-shape AdmissionReview payloads and reviewers built as `kubegap serve` builds them."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubegap.config import Settings
from kubegap.impact import ImpactSettings
from kubegap.webhook.admission import Reviewer
from kubegap.webhook.app import build_reviewer
from kubegap.webhook.metrics import Metrics

DATA = Path(__file__).parent / "data"
PAYLOADS = sorted(p.name for p in DATA.glob("*.json"))


def payload(name: str) -> dict[str, Any]:
    """A fresh copy of one fixture, safe to modify."""
    document: dict[str, Any] = json.loads((DATA / name).read_text("utf-8"))
    return copy.deepcopy(document)


_CACHE: dict[str, Reviewer] = {}

# The fixtures are single pods and small jobs, whose findings the cost model prices low. These tests are
# about how the webhook acts on severities, so every priced fix keeps its policy's top severity unless it
# costs more than it saves (then it is still low).
PRICED_HIGH = ImpactSettings(high_gpu_hours=0.0, medium_gpu_hours=0.0)


@pytest.fixture
def reviewer() -> Callable[..., Reviewer]:
    """reviewer(webhook_section, metrics=None): compiled once per distinct section for the whole session."""

    def make(section: dict[str, Any] | None = None, metrics: Metrics | None = None) -> Reviewer:
        raw = section or {}
        if metrics is not None:
            return build_reviewer(Settings(webhook=raw, impact=PRICED_HIGH), metrics)
        key = json.dumps(raw, sort_keys=True)
        if key not in _CACHE:
            _CACHE[key] = build_reviewer(Settings(webhook=raw, impact=PRICED_HIGH), Metrics())
        return _CACHE[key]

    return make

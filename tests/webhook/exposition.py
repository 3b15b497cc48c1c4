"""Exposition text read with prometheus-client's own parser, as a Prometheus server reads it."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def families(text: str) -> dict[str, str]:
    """Family name -> type, for every family the text declares."""
    return {f.name: f.type for f in text_string_to_metric_families(text)}


def total(text: str, sample: str, **labels: str) -> float:
    """The sum of the samples named `sample` whose labels include `labels` (0 when none)."""
    found = [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == sample and labels.items() <= s.labels.items()
    ]
    return sum(found)


def count(text: str, sample: str, **labels: str) -> int:
    """How many series named `sample` carry `labels`."""
    return sum(
        1
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == sample and labels.items() <= s.labels.items()
    )


def labels_of(text: str, sample: str) -> list[dict[str, str]]:
    """The label sets of the series named `sample`."""
    return [
        dict(s.labels)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == sample
    ]

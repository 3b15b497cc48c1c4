"""The kinds table is the one source: the chart's kind list and docs/kinds.md agree with it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegap import kinds
from kubegap.facts import knobs

ROOT = Path(__file__).resolve().parent.parent
HELPERS = ROOT / "charts" / "kubegap" / "templates" / "_helpers.tpl"


def _chart_kinds() -> list[dict[str, Any]]:
    text = HELPERS.read_text("utf-8")
    block = re.search(r'\{\{- define "kubegap\.kinds" -\}\}\n(.*?)\{\{- end -\}\}', text, re.S)
    assert block is not None, "the chart no longer defines kubegap.kinds"
    listed: list[dict[str, Any]] = yaml.safe_load(block[1])
    return listed


def test_the_chart_lists_every_kind_of_the_table() -> None:
    listed = {
        (k["group"], k["resource"], k["namespaced"], not k.get("auditOnly", False)) for k in _chart_kinds()
    }
    rows = {(r.info.group, r.info.plural, r.info.namespaced, r.admitted) for r in kinds.KINDS}
    # TrainJob is one resource name in two groups; each row is one (group, resource)
    assert listed == rows
    assert len(_chart_kinds()) == len(rows)


def test_the_kinds_reference_is_current() -> None:
    checked_in = (ROOT / "docs" / "kinds.md").read_text("utf-8")
    assert checked_in == kinds.markdown(), (
        "docs/kinds.md is stale: run `python -m kubegap.kinds > docs/kinds.md`"
    )


def test_every_row_documents_itself() -> None:
    text = kinds.markdown()
    for row in kinds.KINDS:
        assert row.roles and row.upstream, row.info
        assert row.pods or row.templates is None, row.info
        assert f"`{row.info.plural}`" in text
    assert text.count("\n| ") == len(kinds.KINDS) + 1  # a header and one line per row


def test_one_row_per_group_and_kind() -> None:
    keys = [(r.info.group, r.info.kind) for r in kinds.KINDS]
    assert len(keys) == len(set(keys))


def _obj(api: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "x"}, "spec": {}}


@pytest.mark.parametrize("row", kinds.KINDS, ids=lambda r: f"{r.info.group or 'core'}/{r.info.kind}")
def test_each_row_gathers_its_kind(row: kinds.Kind) -> None:
    version = row.info.versions[0]
    obj = _obj(f"{row.info.group}/{version}" if row.info.group else version, row.info.kind)
    gathered = kinds.gather(obj, knobs.load(), {})
    assert gathered is not None
    assert gathered.facts["kind"] == row.info.kind and gathered.facts["group"] == row.info.group
    scopes = set(gathered.units)
    own = {"claim"} if row.info.group == "resource.k8s.io" else {"node"}  # kinds that are not workloads
    assert scopes == (own if row.templates is None else {"workload", "template", "container"})
    assert ("restart" in gathered.facts) == (row.restart is not None)
    assert kinds.kind_info(obj) == row.info


def test_unknown_kinds_are_not_gathered() -> None:
    assert kinds.gather(_obj("example.com/v1", "Job"), knobs.load(), {}) is None
    assert kinds.workload_of(_obj("v1", "Node")) is None

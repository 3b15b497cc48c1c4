"""Lint and audit must agree: every policy example, served by the test API server, gets from
`kubegap audit --format json` exactly the findings `kubegap lint --format json` gives the files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegap.kinds import kind_info
from tests.support.apiserver import ApiServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(ROOT.glob("policies/*/examples/*.yaml"))


def _documents(path: Path) -> Iterator[Mapping[str, Any]]:
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if isinstance(doc, Mapping) and doc.get("kind"):
            yield doc


def _identity(doc: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = doc.get("metadata") or {}
    return (
        str(doc.get("apiVersion")),
        str(doc["kind"]),
        str(meta.get("namespace") or ""),
        str(meta.get("name")),
    )


def _rounds(files: list[Path]) -> list[list[Path]]:
    """Files grouped so that no two in a group define the same object (a server holds each name once)."""
    rounds: list[tuple[list[Path], set[tuple[str, str, str, str]]]] = []
    for path in files:
        ids = {_identity(d) for d in _documents(path)}
        home = next((r for r in rounds if not r[1] & ids), None)
        if home is None:
            rounds.append(([], set()))
            home = rounds[-1]
        home[0].append(path)
        home[1].update(ids)
    return [files for files, _ in rounds]


def _comparable(doc: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    out = []
    for f in doc["findings"]:
        if f["policy"] == "invalid-manifest" or f["scope"] == "cluster":
            continue  # cluster validations are audit-only (RULES.md §2 v3): judged over the server's lists
        ref = f["object"]
        namespace = ref["namespace"]
        info = kind_info({"apiVersion": ref["apiVersion"], "kind": ref["kind"]})
        if namespace is None and info is not None and info.namespaced:
            namespace = "default"  # where the API server puts a namespaced object that names none
        key = (
            f["policy"],
            f["rule"],
            ref["kind"],
            namespace,
            ref["name"],
            f["role"],
            f["container"],
            f["path"],
        )
        out.append((key, f["severity"], f["result"], f["message"], tuple(f["unresolved"])))
    return sorted(out)


def _kubegap(*argv: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.skipif(not EXAMPLES, reason="no policy examples (policies/*/examples/*.yaml) to compare on")
def test_audit_reports_exactly_what_lint_reports(tmp_path: Path) -> None:
    compared = 0
    for files in _rounds(EXAMPLES):
        with ApiServer() as server:
            for path in files:
                for doc in _documents(path):
                    if server.store.resource_for(str(doc.get("apiVersion")), str(doc["kind"])) is not None:
                        server.store.add(doc)
            kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
            audited = _kubegap(
                "-m",
                "kubegap",
                "audit",
                "--kubeconfig",
                str(kubeconfig),
                "--format",
                "json",
                "--resolve-configmaps",
                "--include-owned-pods",
            )
        linted = _kubegap("-m", "kubegap", "lint", "--format", "json", *map(str, files))
        assert _comparable(audited) == _comparable(linted), f"lint and audit disagree on {files}"
        assert not [f for f in linted["findings"] if f["scope"] == "cluster"], "lint judged a cluster"
        assert audited["coverage"]["complete"] is True
        compared += len(_comparable(linted))
    assert compared > 0, "the examples gave no findings at all: nothing was compared"

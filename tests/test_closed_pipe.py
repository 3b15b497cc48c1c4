"""`kubegap … | head`: every command that writes stdout treats a reader that went away the same way."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.audit.objects import node, pytorchjob
from tests.support.apiserver import ApiServer
from tests.support.samples import FAILING_PYTORCHJOB


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with ApiServer() as server:
        server.load([pytorchjob(f"job-{i}", namespace="ml") for i in range(40)] + [node("gpu-0")])
        yield server.kubeconfig(tmp_path_factory.mktemp("closed-pipe") / "kubeconfig")


def _closed_stdout(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run kubegap with stdout a pipe whose reader is already gone: the first write gets EPIPE."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "kubegap", *argv], stdout=write, stderr=subprocess.PIPE, timeout=120
        )
    finally:
        os.close(write)


COMMANDS = [
    ["lint", "JOB"],
    ["lint", "--format", "json", "JOB"],
    ["lint", "--format", "sarif", "JOB"],
    ["policies", "list"],
    ["audit", "--kubeconfig", "KUBECONFIG"],
    ["audit", "--kubeconfig", "KUBECONFIG", "--format", "json"],
    ["audit", "--kubeconfig", "KUBECONFIG", "--format", "policyreport"],
    ["audit", "--print-rbac"],
]


@pytest.mark.slow
@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_a_closed_stdout_ends_the_command_quietly(argv: list[str], kubeconfig: Path, tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("---\n".join([FAILING_PYTORCHJOB.replace("pretrain", f"p{i}") for i in range(40)]))
    args = [str(job) if a == "JOB" else str(kubeconfig) if a == "KUBECONFIG" else a for a in argv]
    done = _closed_stdout(args)
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr and "internal error" not in stderr and "BrokenPipe" not in stderr
    assert done.returncode == 0, stderr

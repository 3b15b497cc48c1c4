"""The wheel carries the bundled rules: build it, install it into a fresh venv, and run it from there."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
POLICIES = sorted(p.parent.name for p in (ROOT / "policies").glob("*/policy.yaml"))
CLUSTER_POLICIES = {"hot-spares", "link-monitor"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("kubegap-*.whl")
    return built


@pytest.mark.slow
def test_wheel_contains_policies_examples_knobs_and_schemas(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kubegap/policies/knobs.yaml" in names
    for policy in POLICIES:
        assert f"kubegap/policies/{policy}/policy.yaml" in names
        if policy not in CLUSTER_POLICIES:  # judged over an audit's lists: tests/audit/test_cluster.py
            assert any(n.startswith(f"kubegap/policies/{policy}/examples/fail-") for n in names)
    assert {
        "kubegap/schemas/policy.schema.json",
        "kubegap/schemas/knobs.schema.json",
        "kubegap/py.typed",
        "kubegap/mcp/server.py",
        "kubegap/fix/command.py",
    } <= names


@pytest.mark.slow
def test_installed_wheel_runs_its_bundled_rules(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    python = target / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True)
    # Dependencies come from this environment; kubegap itself only from the fresh venv's wheel.
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import kubegap, importlib.resources as r; print(kubegap.__file__);"
            "print(sorted(p.name for p in r.files('kubegap.policies').iterdir()))",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    ).stdout
    assert str(target) in where.splitlines()[0]
    for policy in POLICIES:
        assert policy in where
    listed = subprocess.run(
        [str(target / "bin" / "kubegap"), "policies", "list"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert listed.returncode == 0, listed.stderr
    assert all(policy in listed.stdout for policy in POLICIES)
    tested = subprocess.run(
        [str(target / "bin" / "kubegap"), "test"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # compiled where the build could compile (setup.py), and then with every module's source unchanged
    version = subprocess.run(
        [str(target / "bin" / "kubegap"), "version"], capture_output=True, text=True, env=env, cwd=tmp_path
    ).stdout.splitlines()[0]
    compiled = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".so")]
    assert ("compiled (" in version) == bool(compiled) and "install again" not in version, version

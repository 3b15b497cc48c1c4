"""The Dockerfile, tested without a Docker engine (there is none on these machines).

What can run here runs: the build stage's COPY list is laid out in a scratch folder and its wheel command
builds the wheel there (without build isolation, which would download setuptools); the wheel is installed
into a fresh virtual environment the way the build stage installs it, and its `kubegap` entrypoint answers.
The base image, the user and the layering are checked by reading the Dockerfile.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from chart.helm import REPO

DOCKERFILE = REPO / "Dockerfile"
CONSTRAINTS = REPO / "constraints.txt"


@dataclass
class Stage:
    base: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, instruction: str) -> list[str]:
        return [a for i, a in self.instructions if i == instruction]


def _instructions(text: str) -> list[tuple[str, str]]:
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        pending += stripped[:-1] + " " if stripped.endswith("\\") else stripped
        if not stripped.endswith("\\"):
            logical.append(pending)
            pending = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in logical]


def _stages() -> tuple[dict[str, str], list[Stage]]:
    build_args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction, argument in _instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if instruction == "ARG" and not stages:
            key, _, value = argument.partition("=")
            build_args[key] = value
        elif instruction == "FROM":
            words = argument.split()
            base = words[0]
            for key, value in build_args.items():
                base = base.replace("${" + key + "}", value)
            stages.append(Stage(base, words[2] if len(words) == 3 and words[1].upper() == "AS" else ""))
        else:
            stages[-1].instructions.append((instruction, argument))
    return build_args, stages


def test_multi_stage_slim_non_root_with_kubegap_entrypoint() -> None:
    _, stages = _stages()
    build, runtime = stages
    assert (build.name, runtime.name) == ("build", "runtime")
    # Same base: the venv made in the build stage must find the same interpreter at run time.
    assert build.base == runtime.base
    image, _, tag = runtime.base.partition(":")
    version = tuple(int(part) for part in tag.split("-")[0].split("."))
    assert image == "python" and "slim" in tag and version >= (3, 11)  # the project's requires-python
    (user,) = runtime.args("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) == 65532 and gid == uid  # the chart's runAsUser / runAsGroup
    assert json.loads(runtime.args("ENTRYPOINT")[0]) == ["kubegap"]
    # The runtime stage takes only the finished environment: no sources, no compilers, no pip.
    assert runtime.args("RUN") == []
    assert runtime.args("COPY") == ["--from=build /opt/kubegap /opt/kubegap"]
    assert any("pip uninstall --yes pip" in run for run in build.args("RUN"))
    assert any("install" in run and " gcc " in run for run in build.args("RUN"))  # compiled (setup.py)


def test_dockerignore_admits_exactly_what_the_build_copies() -> None:
    _, (build, _) = _stages()
    copied = {src.rstrip("/") for arg in build.args("COPY") for src in shlex.split(arg)[:-1]}
    lines = (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
    admitted = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert (
        copied
        == admitted
        == {"pyproject.toml", "setup.py", "README.md", "LICENSE", "constraints.txt", "kubegap", "policies"}
    )


def _wheel_command(build: Stage) -> list[str]:
    (command,) = [shlex.split(run) for run in build.args("RUN") if "pip wheel" in run]
    assert command[:3] == ["python", "-m", "pip"] and command[-1] == "."
    return command


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _, (build, _) = _stages()
    context = tmp_path_factory.mktemp("context")
    for arg in build.args("COPY"):
        *sources, destination = shlex.split(arg)
        for source in sources:
            target = (
                context / destination / Path(source).name if destination.endswith("/") else context / source
            )
            src = REPO / source
            if src.is_dir():
                subprocess.run(["cp", "-r", str(src), str(target)], check=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(src.read_bytes())
    dist = tmp_path_factory.mktemp("dist")
    command = _wheel_command(build)
    command = [sys.executable, *command[1:]]
    command[command.index("/dist")] = str(dist)
    command.insert(-1, "--no-build-isolation")  # isolation would download the build backend
    # Pure Python: what compiling gives is tested once, on the project's own wheel (tests/test_packaging.py)
    env = {**os.environ, "KUBEGAP_PURE_PYTHON": "1"}
    proc = subprocess.run(
        command, cwd=context, capture_output=True, text=True, timeout=300, check=False, env=env
    )
    if proc.returncode != 0 and _setuptools_version() < (77,):
        # The SPDX `license = "..."` string of pyproject.toml needs setuptools >= 77 (PEP 639); a venv
        # made by Python 3.11 starts with 65. Docker's build isolation fetches a current one.
        pytest.skip(
            f"setuptools {_setuptools_version()} here cannot build kubegap: pip install 'setuptools>=77'"
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (built,) = dist.glob("kubegap-*.whl")
    return built


def _setuptools_version() -> tuple[int, ...]:
    try:
        text = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return (0,)
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


@pytest.mark.slow
def test_wheel_ships_the_package_policies_and_entrypoint(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "kubegap = kubegap.cli:entry" in archive.read(entry_points).decode()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {"kubegap/cli.py", "kubegap/webhook/serve.py", "kubegap/audit/command.py"} <= names
    assert "kubegap/policies/knobs.yaml" in names
    assert any(n.startswith("kubegap/policies/nccl-timeout/") for n in names)
    assert any(n.startswith("kubegap/schemas/") for n in names)
    assert "Provides-Extra: webhook" in metadata and "Provides-Extra: audit" in metadata


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel, as the build stage makes /opt/kubegap.

    No network here: the wheel goes in without its dependencies, which this test environment already has
    and lends through a .pth file (after the venv's own site-packages, so kubegap itself comes from the
    wheel).
    """
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index"]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True, timeout=300)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "lent-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return venv


def _run(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(venv / "bin" / "kubegap"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=venv,
        env=env,
    )


@pytest.mark.slow
def test_entrypoint_runs_from_the_installed_wheel(installed: Path) -> None:
    where = subprocess.run(
        [str(installed / "bin" / "python"), "-c", "import kubegap; print(kubegap.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=installed,
    ).stdout.strip()
    assert where.startswith(str(installed)), where
    helped = _run(installed, "--help")
    assert helped.returncode == 0 and "serve" in helped.stdout and "audit" in helped.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("serve", ["--cert", "--key", "--port", "--config", "--workers", "--threads"]),
        ("audit", ["--config", "--format", "--resolve-configmaps", "--write-policyreports"]),
    ],
)
def test_chart_commands_exist_in_the_installed_wheel(installed: Path, command: str, flags: list[str]) -> None:
    helped = _run(installed, command, "--help")
    assert helped.returncode == 0, helped.stderr
    assert all(flag in helped.stdout for flag in flags)


@pytest.mark.slow
def test_bundled_policies_load_from_the_installed_wheel(installed: Path) -> None:
    listed = _run(installed, "policies", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert "nccl-timeout" in listed.stdout


def test_the_base_image_is_pinned_by_digest() -> None:
    build_args, (build, runtime) = _stages()
    assert build.base == runtime.base == build_args["PYTHON_IMAGE"]
    # name:tag@sha256:<64 hex>: the digest decides what is pulled; the tag says which release it is.
    assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+@sha256:[0-9a-f]{64}", runtime.base), runtime.base


def test_the_image_carries_oci_labels_for_source_version_and_revision() -> None:
    _, (_, runtime) = _stages()
    declared = {a.partition("=")[0] for a in runtime.args("ARG")}
    labels = {
        key: value.strip('"')
        for argument in runtime.args("LABEL")
        for key, _, value in (pair.partition("=") for pair in shlex.split(argument, posix=False))
    }
    for key, arg in (("source", "SOURCE"), ("version", "VERSION"), ("revision", "REVISION")):
        assert labels[f"org.opencontainers.image.{key}"] == "${" + arg + "}"
        assert arg in declared  # a build argument of the stage that labels
    version = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    assert f"VERSION={version}" in runtime.args("ARG")  # the default follows the package


def test_the_build_installs_from_the_checked_in_constraints() -> None:
    _, (build, _) = _stages()
    (install,) = [shlex.split(run) for run in build.args("RUN") if "/opt/kubegap/bin/pip install" in run]
    assert install[install.index("--constraint") + 1] == "constraints.txt"
    assert any("constraints.txt" in shlex.split(arg)[:-1] for arg in build.args("COPY"))


def _pins(text: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, version = line.strip().partition("==")
        assert sep and name and version, f"not a name==version pin: {line!r}"
        assert canonicalize_name(name) not in pins, f"pinned twice: {name}"
        pins[canonicalize_name(name)] = version
    return pins


_IMAGE = {"platform_system": "Linux", "sys_platform": "linux", "os_name": "posix", "python_version": "3.11"}


def _unpinned(dependencies: Iterable[str], pins: Mapping[str, str]) -> list[str]:
    """Dependencies (as the image's Linux Python 3.11 reads their markers) with no pin, or a pin outside
    their specifier."""
    problems = []
    for text in dependencies:
        requirement = Requirement(text)
        if requirement.marker and not requirement.marker.evaluate(_IMAGE):
            continue
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None:
            problems.append(f"{requirement.name}: not pinned")
        elif not requirement.specifier.contains(pin, prereleases=True):
            problems.append(f"{requirement.name}=={pin} is outside {requirement.specifier}")
    return problems


def test_every_base_dependency_is_pinned_within_its_specifier() -> None:
    pins = _pins(CONSTRAINTS.read_text("utf-8"))
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["dependencies"]
    assert _unpinned(dependencies, pins) == []
    assert "kubegap" not in pins  # the wheel itself is built, not pinned
    assert _unpinned(["gunicorn>=99", "left-out>=1", "pyyaml>=6; sys_platform == 'win32'"], pins) == [
        f"gunicorn=={pins['gunicorn']} is outside >=99",
        "left-out: not pinned",
    ]


def test_what_the_pinned_packages_need_is_pinned_too() -> None:
    """For each pin at the version installed here, its own requirements are pinned: the file is a whole
    environment, not a list of top-level names."""
    pins = _pins(CONSTRAINTS.read_text("utf-8"))
    checked = 0
    for name, version in pins.items():
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if distribution.version != version:
            continue
        needs = [r for r in distribution.requires or [] if "extra ==" not in r]
        assert _unpinned(needs, pins) == [], name
        checked += 1
    assert checked >= len(pins) // 2, "too few pins installed here at their pinned version to check"

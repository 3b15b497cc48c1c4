"""A plain `pip install kubegap` runs all three enforcement points; a missing optional module is one line."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from kubegap.extras import missing_module

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def test_cluster_client_gunicorn_and_prometheus_client_are_base_dependencies() -> None:
    project = tomllib.loads(PYPROJECT.read_text("utf-8"))["project"]
    base = {r.split(">")[0].split(";")[0].strip() for r in project["dependencies"]}
    assert {"kubernetes", "gunicorn", "prometheus-client"} <= base
    # 0.1's install lines (`kubegap[webhook,audit]`) still resolve.
    assert {"webhook", "audit"} <= set(project["optional-dependencies"])


def _run_without(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """kubegap in a fresh interpreter where `module` cannot be imported, as after a partial install."""
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        f"from kubegap.cli import main; sys.exit(main({list(argv)!r}))"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("module", "argv", "extra"),
    [("kubernetes", ("audit", "--help"), "audit"), ("gunicorn", ("serve", "--help"), "webhook")],
)
def test_a_missing_module_is_named_with_its_extra_and_exits_2(
    module: str, argv: tuple[str, ...], extra: str
) -> None:
    done = _run_without(module, *argv)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"kubegap: kubegap {argv[0]} needs the Python module {module!r}, which is not installed: "
        f"pip install 'kubegap[{extra}]'"
    ]


def test_lint_does_not_need_the_cluster_client() -> None:
    assert _run_without("kubernetes", "policies", "list").returncode == 0


def test_an_unknown_missing_module_is_an_internal_error() -> None:
    assert missing_module(ModuleNotFoundError("no", name="kubegap.nothing"), "lint") is None

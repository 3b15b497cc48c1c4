"""The report registry (kubegap.reports.registry): every format is one module and one entry, lint and
the audit offer what it lists, and every format renders a lint run that has every kind of result."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

import kubegap.reports
from kubegap import cli
from kubegap.findings import Result
from kubegap.reports import registry
from kubegap.reports.report import Report
from tests.reports.sample import Sample

PACKAGE = Path(kubegap.reports.__file__).parent


def test_every_module_is_a_registered_format_or_declared_support() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    formats = {f.name for f in registry.FORMATS}
    unregistered = modules - formats - set(registry.SUPPORT)
    assert not unregistered, f"add these to registry.FORMATS (or SUPPORT, saying why): {unregistered}"
    assert not formats & set(registry.SUPPORT), "a module is either a format or support"
    assert formats | set(registry.SUPPORT) <= modules, "every entry names a module of the package"


def test_names_are_unique_and_every_format_has_a_render() -> None:
    names = [f.name for f in registry.FORMATS]
    assert len(names) == len(set(names))
    for fmt in registry.FORMATS:
        assert callable(fmt.renderer())
        assert set(fmt.commands) <= {registry.LINT, registry.AUDIT} and fmt.commands


def _report(sample: Sample) -> Report:
    report = sample.report
    return Report(
        report.findings,
        report.summary,
        sample.engine.policies,
        report.passes,
        report.workloads,
        base_dir=str(sample.root),
    )


def _json_findings(text: str) -> int:
    return len(json.loads(text)["findings"])


def _sarif_results(text: str) -> int:
    return len(json.loads(text)["runs"][0]["results"])


def _junit_problems(text: str) -> int:
    root = ET.fromstring(text.encode("utf-8"))
    return sum(int(root.get(k, "0")) for k in ("failures", "errors", "skipped"))


def _policyreport_listed(text: str) -> int:
    return sum(len(d["results"]) for d in yaml.safe_load_all(text) if d)


def _github_lines(text: str) -> int:
    return sum(line.startswith("::") for line in text.splitlines())


def _codequality_issues(text: str) -> int:
    return len(json.loads(text))


def _text_blocks(text: str) -> int:
    return sum(" fix: " in line or line.strip().startswith("fix:") for line in text.splitlines())


# How many results each format lists for the sample, read back from its own output.
LISTED: dict[str, Callable[[str], int]] = {
    "json": _json_findings,
    "sarif": _sarif_results,
    "junit": _junit_problems,
    "policyreport": _policyreport_listed,
    "github": _github_lines,
    "codequality": _codequality_issues,
}


def test_the_table_of_listed_counts_covers_every_format_but_text() -> None:
    assert set(LISTED) == {f.name for f in registry.FORMATS} - {"text"}


@pytest.mark.parametrize("name", [f.name for f in registry.FORMATS])
def test_every_format_renders_a_lint_run(sample: Sample, name: str) -> None:
    report = _report(sample)
    text = "".join(registry.render(name, report))
    findings = sample.report.findings
    assert {f.result for f in findings} >= {Result.FAIL, Result.ERROR, Result.SKIP}, "the sample has each"
    if name == "text":
        assert text.endswith("\n") and f"{sample.report.summary.objects} object(s) checked" in text
        assert _text_blocks(text) == sum(f.result is not Result.SKIP for f in findings if f.remediation)
        return
    # Annotations and Code Quality leave exemptions out (neither has a suppressed state).
    skips = sum(f.result is Result.SKIP for f in findings)
    expected = len(findings) - (skips if name in ("github", "codequality") else 0)
    if name == "junit":  # one testcase per object, role, container and rule: results on one case merge
        assert 0 < LISTED[name](text) <= expected
    else:
        assert LISTED[name](text) == expected


def _choices(capsys: pytest.CaptureFixture[str], command: str) -> list[str]:
    with pytest.raises(SystemExit):
        cli.main([command, "--format", "no-such-format"])
    err = capsys.readouterr().err
    listed = err.split("choose from ", 1)[1].split(")", 1)[0]
    return [c.strip().strip("'") for c in listed.split(",")]


@pytest.mark.parametrize("command", [registry.LINT, registry.AUDIT])
def test_commands_offer_exactly_the_registered_formats(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    assert _choices(capsys, command) == list(registry.names(command))
    help_text = _help(capsys, command)
    for fmt in registry.FORMATS:
        assert (f"{fmt.name} {fmt.help}" in help_text) == (command in fmt.commands)


def _help(capsys: pytest.CaptureFixture[str], command: str) -> str:
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_completion_offers_the_registered_formats(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["completion", "fish"]) == 0
    fish = capsys.readouterr().out
    for command in (registry.LINT, registry.AUDIT):
        words = " ".join(registry.names(command))
        assert f"-n '__fish_seen_subcommand_from {command}' -s o -l format -xa '{words}'" in fish

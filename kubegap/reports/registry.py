"""Every output format by name: `kubegap lint` and `kubegap audit` look their formats up here, and only here.

Each format is one module of this package with one function, `render(report: Report) -> Iterator[str]`,
which yields the output in pieces (so the audit can stream a cluster's findings without holding them).

Adding a format means one module plus one entry:
1. write `kubegap/reports/<name>.py` with that `render`;
2. add a `Format` row to `FORMATS` below: its name, the commands that offer it, and one line of help.
`--format`, `--output`, `--help` and shell completion all read their choices from `FORMATS`, and a test
fails when a module of this package is neither a format nor listed in `SUPPORT`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from kubegap.errors import UsageError
from kubegap.reports.report import Report

LINT, AUDIT = "lint", "audit"


@dataclass(frozen=True, slots=True)
class Format:
    name: str  # also the module's name in this package
    commands: tuple[str, ...]  # the commands that offer it
    help: str  # what it is for, in `--help`
    keeps_passes: bool = False  # it counts or lists passing results, so lint must keep them
    # it reads the findings themselves, not only the JSON texts lint's runs make (kubegap.lint.Output)
    reads_findings: bool = True

    def renderer(self) -> Callable[[Report], Iterator[str]]:
        """The module's `render`, imported on first use so that `kubegap lint` starts fast."""
        module = importlib.import_module(f"kubegap.reports.{self.name}")
        render: Callable[[Report], Iterator[str]] = module.render
        return render


# The order is the order of `--help` and completion.
FORMATS = (
    Format("text", (LINT, AUDIT), "for people (the default)"),
    Format("json", (LINT, AUDIT), "for scripts", reads_findings=False),
    Format("policyreport", (LINT, AUDIT), "for kubectl apply (wgpolicyk8s.io)", keeps_passes=True),
    Format("sarif", (LINT, AUDIT), "for code scanning", keeps_passes=True),
    Format("junit", (LINT, AUDIT), "for CI test reports", keeps_passes=True),
    # Both point at files in a checkout: the audit's findings have none.
    Format("github", (LINT,), "for GitHub workflow annotations"),
    Format("codequality", (LINT,), "for GitLab merge requests"),
)
# Modules of this package that are not formats: what the formats share.
SUPPORT = {
    "registry": "this table",
    "report": "the record every format renders",
    "sariflog": "SARIF's wire types",
    "sarifrules": "SARIF's rule descriptors",
    "catalogue": "the rule catalogue of `kubegap policies`, which renders policies, not a run's results",
}


def names(command: str) -> tuple[str, ...]:
    return tuple(f.name for f in FORMATS if command in f.commands)


def get(name: str) -> Format:
    return next(f for f in FORMATS if f.name == name)


def described(command: str) -> str:
    """`text for people (the default), json …`: the formats of a command, for its `--format` help."""
    return ", ".join(f"{f.name} {f.help}" for f in FORMATS if command in f.commands)


def keeps_passes(formats: set[str]) -> bool:
    return any(get(name).keeps_passes for name in formats)


def reads_findings(formats: set[str]) -> bool:
    return any(get(name).reads_findings for name in formats)


def render(name: str, report: Report) -> Iterator[str]:
    return get(name).renderer()(report)


def write(out: TextIO, name: str, report: Report) -> None:
    for piece in render(name, report):
        try:
            out.write(piece)  # encodes the whole piece before writing any of it
        except UnicodeEncodeError:
            out.write(writable(piece, json_text=name == "json"))


# A JSON string (an object the cluster or a review sent) may hold a lone surrogate, which no UTF-8 output
# can: JSON writes it as its escape, which reads back as it was; every other format as U+FFFD.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def writable(text: str, json_text: bool = False) -> str:
    if json_text:
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)
    return _LONE_SURROGATE.sub("\ufffd", text)


def write_file(path: str, name: str, report: Report) -> None:
    """One report to a file (folders created); UsageError when it cannot be written."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with Path(path).open("w", encoding="utf-8") as out:
            write(out, name, report)
    except OSError as err:
        raise UsageError(f"--output {name}={path}: {err.strerror or err}") from None

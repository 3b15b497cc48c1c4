"""`kubegap fix`: arguments, the per-file loop, the report on stderr and the exit code.

Exit codes (like `ruff format --check`): with --diff (the default), 1 when a fix would change a file and
0 when nothing would; with --write, 0 once the files are written. 2 when a path, a file or an option
could not be used (other files are still fixed and reported).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from kubegap import inputs, manifests
from kubegap.enginerules import EXEMPTION_REASON, INVALID_DECLARATION
from kubegap.errors import UsageError
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Finding
from kubegap.fix.checked import Outcome
from kubegap.fix.files import (
    Fixed,
    Refused,
    fix_source,
    scope_for,
    sources,
    write,
)
from kubegap.forked import each_file
from kubegap.lint import jobs_from
from kubegap.options import add_engine_arguments, add_exclude_argument, settings_from_args
from kubegap.reports.text import printable

EPILOG = """\
examples:
  kubegap fix deploy/                     show, as a diff, what kubegap fix would change
  kubegap fix --write deploy/ train.yaml  change the files in place
  kubegap fix --policy nccl-timeout/timeout-declared --write train.yaml
  helm template trainer ./chart | kubegap fix --write -    the fixed stream on stdout

exit codes: 0 nothing to change (or, with --write, changed), 1 --diff shows changes, 2 a path, file or
            option could not be used, 3 internal error
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders; - reads stdin")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print a unified diff, change nothing (default)")
    mode.add_argument(
        "--write", action="store_true", help="change the files in place (stdin: print the fixed stream)"
    )
    add_exclude_argument(parser)
    parser.add_argument(
        "--jobs",
        metavar="N",
        help="worker processes for many files (default auto: one per core; env KUBEGAP_JOBS)",
    )
    add_engine_arguments(parser)
    for action in parser._actions:  # the shared engine options, as fix reads them
        if action.dest == "policy":
            action.metavar = "ID[/RULE]"
            action.help = "fix only this policy, or one rule of it (repeatable)"
        elif action.dest == "fail_on":  # every finding is fixed whatever its severity
            action.help = argparse.SUPPRESS


@dataclass(frozen=True, slots=True)
class _Selection:
    """`--policy ID` and `--policy ID/RULE` as given."""

    policies: frozenset[str]  # fixed whole
    rules: frozenset[tuple[str, str]]  # (policy, rule) fixed alone

    def ids(self) -> list[str]:
        """The policies the engine runs."""
        return sorted(self.policies | {p for p, _ in self.rules})

    def __call__(self, finding: Finding) -> bool:
        everything = not self.policies and not self.rules
        return everything or finding.policy in self.policies or (finding.policy, finding.rule) in self.rules

    def check(self, engine: Engine) -> None:
        """A rule that is not one of its policy's is a typo, not an empty selection."""
        known = {(c.policy.id, v.name) for c in engine.compiled for v in c.policy.validations}
        engine_rules = {(c.policy.id, rule) for c in engine.compiled for rule in _ENGINE_RULES}
        for policy, rule in sorted(self.rules - known - engine_rules):
            names = sorted(r for p, r in known if p == policy)
            raise UsageError(f"--policy {policy}/{rule}: no such rule; {policy} has {', '.join(names)}")


_ENGINE_RULES = (EXEMPTION_REASON, INVALID_DECLARATION)


def _selection(chosen: Sequence[str]) -> _Selection:
    policies: set[str] = set()
    rules: set[tuple[str, str]] = set()
    for item in chosen:
        policy, _, rule = item.partition("/")
        if not policy:
            raise UsageError(f"--policy {item!r}: write ID or ID/RULE")
        if rule:
            rules.add((policy, rule))
        else:
            policies.add(policy)
    return _Selection(frozenset(policies), frozenset(rules))


def _report(outcomes: list[Outcome]) -> list[str]:
    lines = []
    for outcome in sorted(outcomes, key=lambda o: (o.finding.line or 0, o.finding.column or 0)):
        f = outcome.finding
        state = ("todo" if outcome.todo else "fixed") if outcome.fixed else "not fixed"
        lines.append(printable(f"{f.file}:{f.line}:{f.column}: {f.policy}/{f.rule}: {state}: {outcome.note}"))
    return lines


def run(args: argparse.Namespace) -> int:
    selected = _selection(args.policy)
    args.policy = selected.ids()
    jobs = jobs_from(args.jobs)
    settings = settings_from_args(args)
    engine = build_engine(settings)
    selected.check(engine)
    stdin = sys.stdin.buffer.read(manifests.MAX_FILE_BYTES + 1) if inputs.STDIN in args.paths else None
    notes: list[str] = []
    found = sources(list(args.paths), stdin, (*settings.exclude, *args.exclude), notes)
    for note in notes:
        print(f"kubegap: {note}", file=sys.stderr)
    scope = scope_for(found, engine, selected)
    problems = changed = 0
    counts = {"fixed": 0, "todo": 0, "not fixed": 0}

    def attempt(index: int) -> Fixed | Refused:
        try:
            return fix_source(found[index], scope)
        except Refused as err:
            return err

    # worked out in worker processes when there are many files; reported and written here, in order
    for source, fixed in zip(found, each_file(attempt, len(found), jobs), strict=True):
        if isinstance(fixed, Refused):
            print(printable(f"kubegap: {source.name}: {fixed}"), file=sys.stderr)
            problems += 1
            if source.path is None and args.write:  # a stream loses nothing: it passes through as it came
                sys.stdout.flush()
                sys.stdout.buffer.write(source.data)
            continue
        for line in _report(fixed.outcomes):
            print(line, file=sys.stderr)
        for outcome in fixed.outcomes:
            counts["todo" if outcome.todo else "fixed" if outcome.fixed else "not fixed"] += 1
        changed += fixed.changed
        problems += _emit(fixed, args.write)
    verb = "changed" if args.write else "would change"
    print(
        f"kubegap fix: {counts['fixed']} fixed, {counts['todo']} left as TODO for you, "
        f"{counts['not fixed']} without a safe fix; {changed} file(s) {verb}",
        file=sys.stderr,
    )
    if problems:
        return 2
    return 1 if changed and not args.write else 0


def _emit(fixed: Fixed, write_files: bool) -> int:
    """Print or write one file's result; 1 when it could not be written."""
    if fixed.source.path is None and write_files:
        sys.stdout.write(fixed.text)
        return 0
    if not write_files:
        sys.stdout.write(fixed.diff())
        return 0
    if not fixed.changed:
        return 0
    try:
        write(fixed)
    except Refused as err:
        print(printable(f"kubegap: {fixed.source.name}: {err}"), file=sys.stderr)
        return 1
    return 0

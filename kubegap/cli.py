"""The `kubegap` command: a thin layer that parses arguments and calls one function per subcommand.

Exit codes: 0 clean; 1 findings at or above --fail-on; 2 usage, input or policy error; 3 internal error
(audit adds 4: incomplete). Only this layer and the reporters write to stdout; diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from kubegap import __version__
from kubegap.commands import COMPLETION, VERSION
from kubegap.errors import KubegapError

if TYPE_CHECKING:
    from kubegap.evaluate import Engine
    from kubegap.findings import Finding
    from kubegap.fix.suggestions import Suggestion
    from kubegap.lint import LintReport
    from kubegap.reports.report import Report

EPILOG = """\
examples:
  kubegap lint deploy/                          lint every *.yaml, *.yml and *.json below deploy/
  helm template my-release ./chart | kubegap lint -
  kubegap lint --format json --fail-on medium job.yaml
  kubegap lint --set nccl-timeout.maxCollectiveTimeout=20m --skip health-probes train.yaml
  kubegap policies list                         what each rule checks and why
  kubegap test my-policies/                     run your own policies' examples
  kubegap audit --format policyreport           read-only report over a live cluster
  kubegap serve --cert tls.crt --key tls.key    the validating admission webhook
  kubegap mcp --require-read-only               read-only tools for coding agents (MCP over stdio)
  kubegap fix --write train.yaml                add the missing settings, keeping the file's style

exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage/input/policy error, 3 internal error,
            4 audit incomplete
"""


LINT_EPILOG = """\
examples:
  kubegap lint deploy/ jobs/train.yaml
  helm template trainer ./chart | kubegap lint -
  kubegap lint deploy/ --output sarif=kubegap.sarif --output junit=reports/kubegap.xml
  kubegap lint --set checkpoint-interval.maxCheckpointInterval=15m --skip restart-budget deploy/

exemption: annotate the workload or pod template with ignore.kubegap.dev/<policy-id>: "<reason>"
exit codes: 0 clean, 1 a finding at or above --fail-on, 2 usage/input/policy error (also when a document
            could not be read; every other document is still checked), 3 internal error
"""


def _lint_arguments(parser: argparse.ArgumentParser) -> None:
    from kubegap.options import add_engine_arguments, add_exclude_argument
    from kubegap.reports import registry

    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or folders to lint (*.yaml, *.yml, *.json, recursive); - reads stdin; "
        "none: nothing is linted",
    )
    parser.add_argument(
        "--examples", action="store_true", help="lint the bundled policy examples (they have findings)"
    )
    add_exclude_argument(parser)
    parser.add_argument(
        "--chart-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a chart folder: findings in `helm template` output point at its templates (repeatable; "
        "adds to chartDirs: in the config)",
    )
    parser.add_argument(
        "--fail-if-no-objects",
        action="store_true",
        help="exit 2 when no Kubernetes object was linted (e.g. an empty list of changed files)",
    )
    parser.add_argument(
        "-o",
        "--format",
        choices=registry.names(registry.LINT),
        default="text",
        help=f"format written to stdout: {registry.described(registry.LINT)}",
    )
    parser.add_argument(
        "--output",
        action="append",
        default=[],
        metavar="FORMAT=PATH",
        help="also write FORMAT to the file PATH, e.g. --output sarif=kubegap.sarif (repeatable)",
    )
    parser.add_argument(
        "--jobs",
        metavar="N",
        help="worker processes for many files (default auto: one per core; env KUBEGAP_JOBS)",
    )
    add_engine_arguments(parser)


def _bundled_examples() -> list[str]:
    from importlib.resources import files

    root = Path(str(files("kubegap.policies")))
    return [str(p) for p in sorted(root.glob("*/examples"))]


def _lint(args: argparse.Namespace) -> int:
    from kubegap.charts import chart_dirs
    from kubegap.evaluate import build_engine
    from kubegap.inputs import expand
    from kubegap.lint import Output, exit_code, jobs_from, lint_files
    from kubegap.options import parse_outputs, settings_from_args
    from kubegap.reports import registry

    settings = settings_from_args(args)
    engine = build_engine(settings)
    paths = [*args.paths, *(_bundled_examples() if args.examples else [])]
    notes: list[str] = []
    files = expand(paths, (*settings.exclude, *args.exclude), notes)
    for note in notes:
        print(f"kubegap: {note}", file=sys.stderr)
    if not paths:
        print(
            "kubegap: no path given: nothing to lint (`kubegap lint -` reads stdin; "
            "`kubegap lint --examples` lints the bundled examples)",
            file=sys.stderr,
        )
    # before linting, so that a typo fails at once
    outputs = parse_outputs(args.output, registry.names(registry.LINT))
    formats = {args.format, *(fmt for fmt, _ in outputs)}
    stdin = sys.stdin.buffer if any(path is None for _, path in files) else None
    charts = chart_dirs([*settings.chart_dirs, *args.chart_dir])
    jobs = jobs_from(args.jobs)
    # Only the formats that count or list passes need them kept (SARIF, JUnit, PolicyReport).
    output = Output(
        charts,
        keep_passes=registry.keeps_passes(formats),
        texts="json" in formats,
        findings=registry.reads_findings(formats),
        fixable="text" in formats,
        suggest="sarif" in formats,
    )
    report = lint_files(files, engine, stdin, jobs, output)
    rendered = _report(report, engine)
    for fmt, path in outputs:
        registry.write_file(path, fmt, rendered)
    registry.write(sys.stdout, args.format, rendered)
    _warn_unlocated(formats, report)
    if args.fail_if_no_objects and not report.summary.objects:
        print("kubegap: no Kubernetes object was linted (--fail-if-no-objects)", file=sys.stderr)
        return 2
    return exit_code(report, settings.fail_on)


def _warn_unlocated(formats: set[str], report: LintReport) -> None:
    if "sarif" not in formats:
        return
    from kubegap.reports import sarif  # imported only here: 9 ms of every other lint's start

    count = sarif.unlocated(report.findings)
    if count:
        print(
            f"kubegap: warning: {count} SARIF result(s) have no file location (stdin without "
            "`# Source:` lines); GitHub code scanning rejects such files: lint the files themselves, "
            "or pipe `helm template` output, which names them",
            file=sys.stderr,
        )


def _report(report: LintReport, engine: Engine) -> Report:
    """The lint run as every format reads it; `kubegap fix`'s suggestions matched to their findings only
    if a format asks for them."""
    from kubegap.reports.report import Report

    def fixes() -> Mapping[Finding, Suggestion]:
        from kubegap.fix.suggestions import by_finding  # made in lint's runs (Output.suggest)

        return by_finding(report.findings, report.suggested or [])

    return Report(
        findings=report.findings,
        summary=report.summary,
        policies=engine.policies,
        passes=report.passes,
        workloads=sorted(report.workloads, key=lambda w: -w.lost),
        base_dir=str(Path.cwd()),
        fixes=fixes,
        fixable=report.fixable,
        findings_json=report.findings_json,
        workloads_json=None if report.workloads_json is None else _costliest_first(report.workloads_json),
    )


def _costliest_first(workloads: Sequence[tuple[float, str]]) -> list[str]:
    """Texts of workloads in the order `_report` sorts the workloads themselves (a stable sort by loss)."""
    return [text for _, text in sorted(workloads, key=lambda pair: -pair[0])]


def _policies_arguments(parser: argparse.ArgumentParser) -> None:
    from kubegap.options import add_engine_arguments

    parser.add_argument("action", choices=("list", "show"), help="list every policy, or show one")
    parser.add_argument("id", nargs="?", help="the policy to show")
    parser.add_argument("-o", "--format", choices=("text", "markdown", "json"), default="text")
    add_engine_arguments(parser, fail_on=False)


def _policies(args: argparse.Namespace) -> int:
    from kubegap.errors import UsageError
    from kubegap.evaluate import build_engine
    from kubegap.options import settings_from_args
    from kubegap.reports import catalogue

    engine = build_engine(settings_from_args(args))
    if args.action == "show":
        if not args.id:
            raise UsageError("kubegap policies show ID: name the policy (see `kubegap policies list`)")
        chosen = [c for c in engine.compiled if c.policy.id == args.id]
        if not chosen:
            known = ", ".join(c.policy.id for c in engine.compiled)
            raise UsageError(f"no policy {args.id!r}; known: {known}")
        sys.stdout.write(catalogue.render(chosen, args.format, detailed=True))
    else:
        sys.stdout.write(catalogue.render(list(engine.compiled), args.format, detailed=args.format != "text"))
    return 0


def _test_arguments(parser: argparse.ArgumentParser) -> None:
    from kubegap.options import add_engine_arguments

    parser.add_argument(
        "dir", nargs="?", help="a folder of policy folders with examples (default: the bundled ones)"
    )
    add_engine_arguments(parser, fail_on=False)


def _test(args: argparse.Namespace) -> int:
    from importlib.resources import files

    from kubegap import testing
    from kubegap.options import settings_from_args

    root = Path(args.dir) if args.dir else Path(str(files("kubegap.policies")))
    outcomes = testing.run(root, settings_from_args(args), tuple(args.policy))
    for outcome in outcomes:
        status = "ok  " if outcome.ok else "FAIL"
        print(f"{status} {outcome.example.policy}: {outcome.example.path.name}")
        for problem in outcome.problems:
            print(f"       {problem}")
    failed = sum(not o.ok for o in outcomes)
    print(f"{len(outcomes) - failed} passed, {failed} failed")
    return 1 if failed or not outcomes else 0


def _verbose(parser: argparse.ArgumentParser) -> None:
    """`-v` after the command word too (`kubegap lint -v`), not only before it."""
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log diagnostics to stderr"
    )


def _command_word(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubegap",
        description="Rules from public GPU-training incident reports, enforced on Kubernetes manifests "
        "(lint), live clusters (audit) and admission requests (serve).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kubegap {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log diagnostics to stderr")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    table = [
        ("lint", "lint manifests (files, folders, - for stdin)", _lint_arguments, _lint),
        (
            "policies",
            "list the rules or show one: what, why, parameters, fix",
            _policies_arguments,
            _policies,
        ),
        ("test", "run policy examples (pass/fail/skip) against their expectations", _test_arguments, _test),
        ("version", "kubegap's version and the version of the policy set", *VERSION),
        ("completion", 'print a shell completion script: eval "$(kubegap completion bash)"', *COMPLETION),
    ]
    for name, help_text, add, run in table:
        sub = commands.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=LINT_EPILOG if name == "lint" else None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add(sub)
        _verbose(sub)
        sub.set_defaults(run=run)
    # audit and serve need the Kubernetes client and gunicorn: import them only when that command runs, so
    # `kubegap lint` starts fast; their subparsers still list in `kubegap --help`.
    chosen = _command_word(argv)
    for name, module, help_text in (
        ("audit", "kubegap.audit.command", "read-only audit of a live cluster"),
        ("serve", "kubegap.webhook.serve", "run the validating admission webhook (gunicorn, TLS)"),
        ("mcp", "kubegap.mcp.command", "serve read-only lint, audit and node tools to coding agents (MCP)"),
        ("fix", "kubegap.fix.command", "patch manifests so that findings are fixed, keeping their style"),
    ):
        sub = commands.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=getattr(importlib.import_module(module), "EPILOG", None) if name == chosen else None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if name == chosen:
            imported = importlib.import_module(module)
            imported.add_arguments(sub)
            _verbose(sub)
            sub.set_defaults(run=imported.run)
    return parser


def closed_pipe() -> int:
    """The reader of stdout went away (`kubegap ... | head`): not an error of kubegap, so exit 0 quietly.

    The one place every command's closed stdout ends up. stdout is pointed at /dev/null so that the
    interpreter's final flush of what is still buffered cannot fail again on the way out.
    """
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 0


# Evaluations allocate many short-lived containers, nearly all freed by reference counting, while a lint
# report keeps every finding it reads: with the default first threshold (700) the collector ran often and
# re-scanned that growing report, 10-20% of a 2,000-manifest lint's CPU (docs/speed.md). Cycles are rare
# here, so collecting them every 100,000 net allocations costs no measurable memory (67-68 MB either way).
GC_THRESHOLDS = (100_000, 50, 50)


def entry() -> NoReturn:
    """The `kubegap` command (and `python -m kubegap`): `main`, then the process's exit."""
    code = main()
    # Python's exit ends with collections that walk every object the run left alive (the engine, the
    # report): 12% of linting one file. Frozen, they are left to the exit to free, as a forked worker's
    # are; exit handlers and the flushing of stdout still run. Not in `main`, which tests call in process.
    gc.freeze()
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return _main(arguments)
    except ModuleNotFoundError as err:
        from kubegap.extras import missing_module

        message = missing_module(err, _command_word(arguments))
        if message is None:
            print("kubegap: internal error (please report it with this trace):", file=sys.stderr)
            traceback.print_exc()
            return 3
        print(f"kubegap: {message}", file=sys.stderr)
        return 2


def _main(arguments: list[str]) -> int:
    parser = _parser(arguments)
    args = parser.parse_args(arguments)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="kubegap: %(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.run(args)
    except KubegapError as err:
        print(f"kubegap: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError:
        raise  # named by main() when an optional module is missing
    except KeyboardInterrupt:
        print("kubegap: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return closed_pipe()
    except Exception:  # an internal error: say so plainly, with the trace for a bug report
        print("kubegap: internal error (please report it with this trace):", file=sys.stderr)
        traceback.print_exc()
        return 3
    return code


if __name__ == "__main__":
    sys.exit(main())

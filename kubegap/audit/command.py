"""`kubegap audit`: a read-only look at a live cluster through the same rules as `kubegap lint`.

Exit codes: 0 clean; 1 findings at or above --fail-on; 2 usage, configuration or policy error; 3 internal
error; 4 incomplete (something could not be evaluated) unless --allow-incomplete. An interrupted audit
(Ctrl-C) always exits 4: it reports what it covered, but it is never a clean bill of health.
"""

from __future__ import annotations

import argparse
import logging
import sys

from kubegap.audit import output, rbac, reach
from kubegap.audit.progress import TerminalProgress
from kubegap.audit.reader import DEFAULT_TIMEOUT, connect
from kubegap.audit.retry import Api
from kubegap.audit.runner import Auditor, AuditResult
from kubegap.audit.scope import DEFAULT_PAGE_SIZE, scope_from
from kubegap.audit.spool import Keep
from kubegap.audit.writer import write_reports
from kubegap.config import Settings
from kubegap.errors import KubegapError
from kubegap.evaluate import build_engine
from kubegap.findings import Severity, highest
from kubegap.lint import jobs_from
from kubegap.options import add_engine_arguments, parse_outputs, settings_from_args
from kubegap.reports import policyreport, registry
from kubegap.reports.registry import AUDIT
from kubegap.reports.report import Report

log = logging.getLogger(__name__)

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL, EXIT_INCOMPLETE = 0, 1, 2, 3, 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cluster = parser.add_argument_group("cluster")
    cluster.add_argument(
        "--demo",
        action="store_true",
        help="audit a built-in API server holding the bundled examples and a few GPU nodes (no cluster)",
    )
    cluster.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else the in-cluster service account)",
    )
    cluster.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
    cluster.add_argument(
        "--request-timeout",
        type=float,
        default=DEFAULT_TIMEOUT[1],
        metavar="SECONDS",
        help=f"read timeout of one API request (default {DEFAULT_TIMEOUT[1]:g})",
    )
    scope = parser.add_argument_group("scope")
    scope.add_argument(
        "-n",
        "--namespace",
        action="append",
        metavar="NS",
        help="audit only this namespace (repeatable; cluster-scoped kinds are then skipped)",
    )
    scope.add_argument(
        "--exclude-namespace", action="append", metavar="NS", help="skip this namespace (repeatable)"
    )
    scope.add_argument("-l", "--selector", metavar="SEL", help="label selector, e.g. 'team=ml,tier!=dev'")
    scope.add_argument(
        "--include-owned-pods",
        action="store_true",
        default=None,
        help="also judge Pods whose controller is audited (default: judge only the controller)",
    )
    scope.add_argument(
        "--resolve-configmaps",
        action="store_true",
        default=None,
        help="read the ConfigMaps that env refers to (needs get on configmaps; Secrets never)",
    )
    scope.add_argument(
        "--page-size", type=int, metavar="N", help=f"objects per list request (default {DEFAULT_PAGE_SIZE})"
    )
    parser.add_argument(
        "--jobs",
        metavar="N",
        help="worker processes evaluating objects while the audit lists (default auto: one per core, "
        "about twice as fast with a core free; 1: all in this process, better on a busy machine; "
        "env KUBEGAP_JOBS)",
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "-o",
        "--format",
        choices=registry.names(AUDIT),
        default="text",
        help=f"report format: {registry.described(AUDIT)}",
    )
    out.add_argument(
        "--output",
        action="append",
        default=[],
        metavar="FORMAT=PATH",
        help="also write FORMAT to the file PATH, e.g. --output sarif=audit.sarif (repeatable)",
    )
    out.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0/1 even when some kind or namespace could not be evaluated (default: exit 4)",
    )
    out.add_argument(
        "--write-policyreports",
        action="store_true",
        help="LEAVES READ-ONLY MODE: create or update PolicyReports in the cluster",
    )
    out.add_argument(
        "--print-rbac", action="store_true", help="print the ClusterRole the audit needs, and exit"
    )
    add_engine_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "demo", False):
        from kubegap.audit import demo

        with demo.cluster() as (kubeconfig, served):
            print(
                f"kubegap audit: demo: an API server on 127.0.0.1 serving {served} objects "
                f"(the bundled examples and {len(demo.NODES)} GPU nodes, one degraded)",
                file=sys.stderr,
            )
            args.kubeconfig, args.context = kubeconfig, None
            return _run(args)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args)
        scope = scope_from(settings.audit, args)
        outputs = parse_outputs(args.output, registry.names(AUDIT))  # before connecting: a typo fails at once
        jobs = jobs_from(args.jobs)
        if args.print_rbac:
            sys.stdout.write(rbac.render(scope.resolve_configmaps, args.write_policyreports))
            return EXIT_CLEAN
        engine = build_engine(settings)
        transport = connect(args.kubeconfig, args.context, (DEFAULT_TIMEOUT[0], args.request_timeout))
    except KubegapError as exc:
        print(f"kubegap audit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if (why := reach.problem(transport, transport.host)) is not None:
        print(f"kubegap audit: {why}", file=sys.stderr)  # said once, and no empty report under it
        transport.close()
        return EXIT_INCOMPLETE
    result: AuditResult | None = None
    try:
        api = Api(transport)
        keep = Keep.for_formats([args.format, *(fmt for fmt, _ in outputs)], args.write_policyreports)
        auditor = Auditor(api, engine, scope, TerminalProgress.for_stderr(), jobs=jobs, keep=keep)
        result = auditor.run()
        if args.write_policyreports:
            _write(api, result)
        report = output.report(result, transport.host, engine.policies)
        unwritten = _write_files(outputs, report)
        registry.write(sys.stdout, args.format, report)
        sys.stdout.flush()
        return EXIT_USAGE if unwritten else exit_code(result, settings, args.allow_incomplete)
    except BrokenPipeError:
        raise  # stdout closed by its reader (`| head`): the command layer handles it for every command
    except Exception:
        log.exception("internal error")
        print("kubegap audit: internal error (see the trace above)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if result is not None:
            result.spool.close()
        transport.close()


def _write_files(outputs: list[tuple[str, str]], report: Report) -> bool:
    """Each `--output` file; True when one could not be written (said on stderr, exit 2 as for lint)."""
    failed = False
    for fmt, path in outputs:
        try:
            registry.write_file(path, fmt, report)
        except KubegapError as exc:
            print(f"kubegap audit: {exc}", file=sys.stderr)
            failed = True
    return failed


def _write(api: Api, result: AuditResult) -> None:
    if result.coverage.interrupted:
        result.coverage.problems.append("policyreports not written: the audit was interrupted")
        return
    written, problems = write_reports(api, policyreport.from_audit(result))
    result.coverage.problems.extend(problems)
    print(f"kubegap audit: {written} PolicyReport(s) written to the cluster", file=sys.stderr)


def worst(result: AuditResult) -> Severity | None:
    return highest([Severity(severity) for (_ns, _p, _r, severity) in result.by_rule])


def exit_code(result: AuditResult, settings: Settings, allow_incomplete: bool) -> int:
    if result.internal_errors:
        return EXIT_INTERNAL
    if result.coverage.interrupted or (not result.coverage.complete and not allow_incomplete):
        return EXIT_INCOMPLETE
    severity = worst(result)
    return EXIT_FINDINGS if severity is not None and severity >= settings.fail_on else EXIT_CLEAN

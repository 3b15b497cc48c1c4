"""`kubegap mcp`: serve the tools to a coding agent over stdio (default) or streamable HTTP (--http).

At start the credentials' rights are checked once (a SelfSubjectRulesReview) and logged; with
--require-read-only the server refuses to start unless they are shown to be read-only, and refuses any
later call whose credentials are not. The SDK and the Kubernetes client are imported only here, when the
command runs, so a missing extra is one clear line.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
from typing import TYPE_CHECKING

from kubegap.errors import KubegapError, UsageError
from kubegap.options import add_engine_arguments

if TYPE_CHECKING:
    from kubegap.mcp.cluster import Connection

EXIT_CLEAN, EXIT_USAGE = 0, 2
DEFAULT_REVIEW_NAMESPACE = "default"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cluster = parser.add_argument_group("cluster")
    cluster.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"
    )
    cluster.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
    cluster.add_argument(
        "--request-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="read timeout of one API request",
    )
    cluster.add_argument(
        "--require-read-only",
        action="store_true",
        help="refuse to start (and to read) when the credentials can write, read secrets, exec into pods "
        "or impersonate, or when that cannot be checked",
    )
    cluster.add_argument(
        "--review-namespace",
        default=DEFAULT_REVIEW_NAMESPACE,
        metavar="NS",
        help=f"namespace whose rights are checked at start (default {DEFAULT_REVIEW_NAMESPACE}; "
        "audits check the namespace they read)",
    )
    transport = parser.add_argument_group("transport (default: stdio)")
    transport.add_argument(
        "--http",
        metavar="ADDR",
        help="serve streamable HTTP on PORT or HOST:PORT instead (a bare port binds 127.0.0.1); "
        "needs a bearer token",
    )
    transport.add_argument(
        "--token-file",
        metavar="FILE",
        help="file holding the bearer token for --http (default: the KUBEGAP_MCP_TOKEN variable)",
    )
    add_engine_arguments(parser)


def _require_extras() -> None:
    for module, what in (("mcp", "the MCP SDK"), ("kubernetes", "the Kubernetes client")):
        if importlib.util.find_spec(module) is None:
            raise UsageError(f"kubegap mcp needs {what}: pip install 'kubegap[mcp]'")


def run(args: argparse.Namespace) -> int:
    _require_extras()
    from kubegap.mcp import server, streamable
    from kubegap.mcp.cluster import Connection, Target
    from kubegap.mcp.tools import Toolbox
    from kubegap.options import settings_from_args
    from kubegap.webhook import jsonlog

    listen = streamable.address(args.http) if args.http else None
    secret = streamable.token(args.token_file) if listen else ""
    jsonlog.configure("info")
    logging.getLogger("kubegap").propagate = False  # one JSON line per event, not a second plain one
    target = Target(args.kubeconfig, args.context, args.review_namespace)
    connection = Connection(target, args.require_read_only, args.request_timeout)
    toolbox = Toolbox(settings_from_args(args), connection)
    try:
        _check_at_start(connection)
        if listen is None:
            server.build(toolbox).run("stdio")
        else:
            streamable.serve(server.build(toolbox), *listen, secret)
    finally:
        toolbox.close()
    return EXIT_CLEAN


def _check_at_start(connection: Connection) -> None:
    """Log what the credentials may do; under --require-read-only, unproven or risky rights stop here."""
    from kubegap.mcp.access import describe

    log = logging.getLogger("kubegap.mcp.access")
    try:
        with connection.open() as (_api, where, rights):
            fields = {"cluster": where.model_dump(mode="json"), "access": rights.model_dump(mode="json")}
            log.info("credentials " + describe(rights), extra={"fields": fields})
    except KubegapError as exc:
        if connection.require_read_only:
            raise UsageError(f"refusing to start: {exc}") from None
        log.warning("no cluster: %s (lint and policy tools still work)", exc)

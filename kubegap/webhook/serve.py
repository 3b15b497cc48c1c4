"""`kubegap serve`: the webhook app under gunicorn, over TLS, with graceful drain on SIGTERM.

gunicorn's asyncio (`asgi`) workers: each reads every connection, its TLS handshake and its requests in
an event loop and hands complete reviews to a pool of `--threads` evaluation threads, which judge them one
at a time (kubegap.webhook.app.Lanes). Thread workers (gthread) read a new connection's first request in a
thread, so clients holding idle or slow connections, as the API server holds idle ones, took every thread
and stalled all reviews. Connections are kept alive:
the sync worker's handshake per review costs about a ninth of the throughput (research:
dependencies-and-speed.md §6). Policies are compiled once in the master before the workers fork, so a bad
policy or config stops the start with exit code 2 instead of a crash loop of workers, and workers share
the compiled programs. Metrics are prometheus-client's multiprocess files in a private directory (see
kubegap.webhook.metrics); gunicorn's own log lines are JSON like kubegap's (kubegap.webhook.serverlog).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from gunicorn.app.base import BaseApplication  # type: ignore[import-untyped]

from kubegap.errors import KubegapError
from kubegap.options import add_engine_arguments, settings_from_args
from kubegap.webhook import jsonlog, scrape
from kubegap.webhook.serverlog import JsonLogger
from kubegap.webhook.tls import CertificateFiles
from kubegap.webhook.worker import Worker

if TYPE_CHECKING:  # imported by run(), after PROMETHEUS_MULTIPROC_DIR is set
    from kubegap.webhook.app import ServerState, WebhookApp

log = logging.getLogger(__name__)

# Longer than the API server's idle-connection timeout (90 s in client-go): when the server closes an
# idle connection first, a review sent on it at that moment fails, and a POST is never retried.
KEEPALIVE_SECONDS = 120
# Left for in-flight reviews after the drain; with the default drain this stays under Kubernetes'
# default terminationGracePeriodSeconds of 30.
FINISH_SECONDS = 20
# prometheus-client reads it when first imported, and chooses its multiprocess mode then.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cert", required=True, help="TLS certificate file (PEM); reloaded when replaced")
    parser.add_argument("--key", required=True, help="TLS private key file (PEM); reloaded when replaced")
    parser.add_argument("--port", type=int, default=8443, help="port to listen on (default 8443)")
    parser.add_argument("--bind", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--workers", type=_positive, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--threads",
        type=_positive,
        default=4,
        help="evaluation threads per worker (default 4): reviews are judged one at a time, and one still "
        "running after 50 ms lets the next start beside it, up to this many at once",
    )
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=5.0,
        help="after SIGTERM, keep serving (with /readyz failing) this long before stopping (default 5)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        help="also serve GET /metrics (only) over plain HTTP on this port, for a Prometheus without the "
        "webhook's CA (default 0: off; /metrics is always served on the TLS port)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument(
        "--access-log", action="store_true", help="log every HTTP request (JSON, on stderr), probes included"
    )
    add_engine_arguments(parser, fail_on=False)  # a webhook exits on signals, not on findings


def run(args: argparse.Namespace) -> int:
    if args.metrics_port and args.metrics_port == args.port:
        print(
            f"kubegap serve: --metrics-port {args.metrics_port} is the TLS port: give it another",
            file=sys.stderr,
        )
        return 2
    jsonlog.configure(args.log_level)
    with _metrics_directory() as metrics_dir:
        return _start(args, metrics_dir)


@contextlib.contextmanager
def _metrics_directory() -> Iterator[str]:
    """A new, empty directory for prometheus-client's files, private to this server and removed when it
    stops, so that no count of an earlier run is ever added in."""
    path = tempfile.mkdtemp(prefix="kubegap-metrics-")
    previous = os.environ.get(MULTIPROC_ENV)
    os.environ[MULTIPROC_ENV] = path
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        if previous is None:
            os.environ.pop(MULTIPROC_ENV, None)
        else:
            os.environ[MULTIPROC_ENV] = previous


def _start(args: argparse.Namespace, metrics_dir: str) -> int:
    from kubegap.webhook.app import ServerState, create_app
    from kubegap.webhook.metrics import CERT_RELOADS, CONFIG_ERRORS, Metrics

    try:
        state = ServerState(metrics=Metrics(metrics_dir))
        files = CertificateFiles(
            args.cert,
            args.key,
            on_reload=lambda: state.metrics.inc(CERT_RELOADS),
            on_error=lambda _err: state.metrics.inc(CONFIG_ERRORS, ("tls",)),
        )
        app = create_app(settings_from_args(args), state=state, threads=args.threads)
        scraped = scrape.listen(args.bind, args.metrics_port) if args.metrics_port else None
    except KubegapError as err:
        print(f"kubegap serve: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # the metrics port is taken or not ours to bind
        print(f"kubegap serve: cannot listen on --metrics-port {args.metrics_port}: {err}", file=sys.stderr)
        return 2
    server = _Server(app, _options(args, files, state, metrics_dir, scraped))
    try:
        server.run()
    except SystemExit as stop:  # gunicorn's arbiter leaves by sys.exit
        return stop.code if isinstance(stop.code, int) else 3
    finally:
        if scraped is not None:
            scraped.close()
    return 0


def _options(
    args: argparse.Namespace,
    files: CertificateFiles,
    state: ServerState,
    metrics_dir: str,
    scraped: socket.socket | None = None,
) -> dict[str, Any]:
    host = f"[{args.bind}]" if ":" in args.bind else args.bind
    drain = max(args.drain_seconds, 0.0)
    tasks: list[Any] = []  # held, so that the scrape listener's task is not collected

    def ssl_context(_conf: Any, _default_factory: Any) -> Any:
        return files.current()

    def post_worker_init(worker: Any) -> None:
        state.metrics.after_fork()
        worker.loop.add_signal_handler(signal.SIGTERM, _drain_handler(worker, state, drain))
        if scraped is not None:  # cancelled with the worker's other tasks when it stops
            tasks.append(worker.loop.create_task(scrape.serve(scraped, state.metrics.render)))

    def child_exit(_server: Any, worker: Any) -> None:
        from prometheus_client import multiprocess

        # Its live gauges leave the sum; its counters stay, so that totals never go down.
        multiprocess.mark_process_dead(worker.pid, metrics_dir)  # type: ignore[no-untyped-call]

    return {
        "bind": [f"{host}:{args.port}"],
        "workers": args.workers,
        "worker_class": Worker,
        "asgi_lifespan": "on",
        "certfile": files.cert,
        "keyfile": files.key,
        "ssl_context": ssl_context,
        "keepalive": KEEPALIVE_SECONDS,
        "graceful_timeout": math.ceil(drain) + FINISH_SECONDS,
        "preload_app": True,
        "post_worker_init": post_worker_init,
        "child_exit": child_exit,
        "logger_class": JsonLogger,
        "accesslog": "-" if args.access_log else None,
        "errorlog": "-",
        "loglevel": args.log_level,
        "proc_name": "kubegap-webhook",
        "control_socket_disable": True,  # no runtime control interface on an admission endpoint
    }


def _drain_handler(worker: Any, state: ServerState, drain: float) -> Any:
    """SIGTERM: fail /readyz at once, keep serving for `drain` seconds, then gunicorn's graceful stop."""

    def handle() -> None:
        if state.draining.is_set():
            return
        state.draining.set()
        log.info("SIGTERM: not ready; draining for %.1fs before stopping", drain)
        worker.loop.call_later(drain, worker.handle_exit_signal)

    return handle


class _Server(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
    def __init__(self, app: WebhookApp, options: dict[str, Any]) -> None:
        self._app, self._options = app, options
        super().__init__()

    def load_config(self) -> None:
        for name, value in self._options.items():
            if name in self.cfg.settings:  # settings newer than the installed gunicorn are left out
                self.cfg.set(name, value)

    def load(self) -> WebhookApp:
        return self._app


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (`python -m kubegap.webhook.serve`), the same as `kubegap serve`."""
    parser = argparse.ArgumentParser(
        prog="kubegap serve", description="Run the validating admission webhook."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

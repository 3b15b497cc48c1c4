"""`kubegap serve`: the webhook app under gunicorn, over TLS, with graceful drain on SIGTERM.

gunicorn's asyncio (`asgi`) workers: each reads every connection, its TLS handshake and its requests in
an event loop and hands complete reviews to a pool of `--threads` evaluation threads. Thread workers
(gthread) read a new connection's first request in a thread, so clients holding idle or slow connections,
as the API server holds idle ones, took every thread and stalled all reviews. Connections are kept alive:
the sync worker's handshake per review costs about a ninth of the throughput (research:
dependencies-and-speed.md §6). Policies are compiled once in the master before the workers fork, so a bad
policy or config stops the start with exit code 2 instead of a crash loop of workers, and workers share
the compiled programs.
"""

from __future__ import annotations

import argparse
import logging
import math
import shutil
import signal
import sys
import tempfile
from typing import Any

from gunicorn.app.base import BaseApplication  # type: ignore[import-untyped]

from kubegap.errors import KubegapError
from kubegap.options import add_engine_arguments, settings_from_args
from kubegap.webhook import jsonlog
from kubegap.webhook.app import ServerState, WebhookApp, create_app
from kubegap.webhook.metrics import CERT_RELOADS, CONFIG_ERRORS, Metrics
from kubegap.webhook.tls import CertificateFiles
from kubegap.webhook.worker import Worker

log = logging.getLogger(__name__)

# Longer than the API server's idle-connection timeout (90 s in client-go): when the server closes an
# idle connection first, a review sent on it at that moment fails, and a POST is never retried.
KEEPALIVE_SECONDS = 120
# Left for in-flight reviews after the drain; with the default drain this stays under Kubernetes'
# default terminationGracePeriodSeconds of 30.
FINISH_SECONDS = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cert", required=True, help="TLS certificate file (PEM); reloaded when replaced")
    parser.add_argument("--key", required=True, help="TLS private key file (PEM); reloaded when replaced")
    parser.add_argument("--port", type=int, default=8443, help="port to listen on (default 8443)")
    parser.add_argument("--bind", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--workers", type=_positive, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--threads", type=_positive, default=4, help="evaluation threads per worker (default 4)"
    )
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=5.0,
        help="after SIGTERM, keep serving (with /readyz failing) this long before stopping (default 5)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    add_engine_arguments(parser, fail_on=False)  # a webhook exits on signals, not on findings


def run(args: argparse.Namespace) -> int:
    jsonlog.configure(args.log_level)
    metrics_dir = tempfile.mkdtemp(prefix="kubegap-metrics-")
    try:
        try:
            state = ServerState(metrics=Metrics(metrics_dir))
            files = CertificateFiles(
                args.cert,
                args.key,
                on_reload=lambda: state.metrics.inc(CERT_RELOADS),
                on_error=lambda _err: state.metrics.inc(CONFIG_ERRORS, ("tls",)),
            )
            app = create_app(settings_from_args(args), state=state, threads=args.threads)
        except KubegapError as err:
            print(f"kubegap serve: {err}", file=sys.stderr)
            return 2
        server = _Server(app, _options(args, files, state))
        try:
            server.run()
        except SystemExit as stop:  # gunicorn's arbiter leaves by sys.exit
            return stop.code if isinstance(stop.code, int) else 3
        return 0
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _options(args: argparse.Namespace, files: CertificateFiles, state: ServerState) -> dict[str, Any]:
    host = f"[{args.bind}]" if ":" in args.bind else args.bind
    drain = max(args.drain_seconds, 0.0)

    def ssl_context(_conf: Any, _default_factory: Any) -> Any:
        return files.current()

    def post_worker_init(worker: Any) -> None:
        state.metrics.start_flusher()
        worker.loop.add_signal_handler(signal.SIGTERM, _drain_handler(worker, state, drain))

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
        "accesslog": None,
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

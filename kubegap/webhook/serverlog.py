"""gunicorn's own log lines (its error log, and the access log when enabled) as kubegap's JSON lines.

gunicorn formats its loggers `gunicorn.error` and `gunicorn.access` itself, as text. This logger class
keeps gunicorn's handlers and levels and gives them kubegap's JSON formatter; an access line becomes the
fields of one request instead of an Apache-style text.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from gunicorn import glogging  # type: ignore[import-untyped]

from kubegap.webhook.jsonlog import JsonFormatter


class JsonLogger(glogging.Logger):  # type: ignore[misc]  # gunicorn is untyped
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(JsonFormatter())
                if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout:
                    handler.setStream(sys.stderr)  # gunicorn's `-` access log is stdout; logs go to stderr

    def access(self, resp: Any, req: Any, environ: Any, request_time: Any) -> None:
        if not self.access_log_enabled:
            return
        atoms = self.atoms(resp, req, environ, request_time)
        fields = {
            "remote": atoms["h"],
            "method": atoms["m"],
            "path": atoms["U"],
            "status": _status(atoms["s"]),
            "bytes": atoms["B"],
            "duration_ms": atoms["D"] / 1000,  # D: microseconds
            "user_agent": atoms["a"],
        }
        # The query string is left out: /validate?timeout=… tells nothing, and no route reads others.
        self.access_log.info("access %s %s", atoms["m"], atoms["U"], extra={"fields": fields})


def _status(value: Any) -> Any:
    return int(value) if isinstance(value, str) and value.isdigit() else value

"""One JSON object per log line, so that log pipelines can index reviews by uid, decision and rule.

A record logged with `extra={"fields": {...}}` contributes those fields at the top level; any other
record is written with its message as text.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line["event"] = record.msg.split(" ", 1)[0] if isinstance(record.msg, str) else "event"
            line.update(fields)
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, separators=(",", ":"), default=str)


def configure(level: str = "info") -> None:
    """JSON lines on stderr for the kubegap loggers; stdout stays free for command output."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("kubegap")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False

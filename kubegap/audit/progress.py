"""A one-line progress display on stderr, only when stderr is a terminal (never in pipes or logs)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class TerminalProgress:
    def __init__(self, stream: TextIO, interval: float = 0.2) -> None:
        self.stream, self.interval = stream, interval
        self._last = 0.0
        self._width = 0

    @classmethod
    def for_stderr(cls) -> TerminalProgress | None:
        return cls(sys.stderr) if sys.stderr.isatty() else None

    def update(self, kind: str, namespace: str | None, kind_count: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        where = f" in {namespace}" if namespace else ""
        text = f"auditing {kind}{where}: {kind_count:,} listed, {total:,} objects in all"
        self.stream.write("\r" + text.ljust(self._width))
        self._width = len(text)
        self.stream.flush()

    def done(self) -> None:
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()

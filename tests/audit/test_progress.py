"""The progress line: only on a terminal, and wiped before the report is printed."""

from __future__ import annotations

import io

import pytest

from kubegap.audit.progress import TerminalProgress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_kind_and_counts_then_clears() -> None:
    stream = _Tty()
    progress = TerminalProgress(stream, interval=0.0)
    progress.update("PyTorchJob", "ml", 500, 1500)
    progress.update("Pod", None, 20, 1520)
    text = stream.getvalue()
    assert "auditing PyTorchJob in ml: 500 listed, 1,500 objects in all" in text
    assert text.rsplit("\r", 1)[1].startswith("auditing Pod: 20 listed, 1,520 objects in all")
    progress.done()
    assert stream.getvalue().endswith("\r"), "the line is blanked out and the cursor returned"


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert TerminalProgress.for_stderr() is None
    monkeypatch.setattr("sys.stderr", _Tty())
    assert TerminalProgress.for_stderr() is not None

"""`python -m kubegap`."""

from __future__ import annotations

from kubegap.cli import entry

entry()

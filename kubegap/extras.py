"""Which install extra brings which optional module, so a missing one is named in one line, not a trace."""

from __future__ import annotations

# module imported at run time -> the extra of `pip install 'kubegap[EXTRA]'` that brings it. kubernetes,
# gunicorn and prometheus-client are base dependencies; their extras stay (empty) for old install lines,
# and pip installs a missing base dependency again when asked for any extra.
EXTRA_OF = {
    "kubernetes": "audit",
    "urllib3": "audit",
    "gunicorn": "webhook",
    "prometheus_client": "webhook",
    "mcp": "mcp",
}


def missing_module(err: ModuleNotFoundError, command: str | None) -> str | None:
    """The one-line message for a module kubegap knows to be optional; None for any other (a bug)."""
    top = (err.name or "").partition(".")[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    who = f"kubegap {command}" if command else "kubegap"
    return f"{who} needs the Python module {top!r}, which is not installed: pip install 'kubegap[{extra}]'"

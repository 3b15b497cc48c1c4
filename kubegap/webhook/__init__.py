"""The validating admission webhook: `create_app(settings)` builds the ASGI app, `kubegap serve` runs it.

The app is imported on first use, so that the pure admission logic (`kubegap.webhook.admission`) can be
used and tested without the server's dependencies installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubegap.webhook.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from kubegap.webhook.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

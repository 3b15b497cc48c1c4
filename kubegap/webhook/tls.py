"""A server TLS context that follows its certificate and key files as they are replaced on disk.

cert-manager and kubelet replace Secret-mounted files by swapping a symlink, so a change shows in the
files' inode and mtime. Every TLS handshake looks (two stat calls) and, on a change, loads the new pair
into a fresh SSLContext and moves the connection to it from the SNI callback, which OpenSSL calls for
every ClientHello, with or without a server name. Connections already open keep the context they started
with, so no request in flight fails. A half-written pair (new certificate, old key) does not load: the old
context stays in service and the next handshake tries again once the files change once more.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from pathlib import Path

from kubegap.errors import UsageError

log = logging.getLogger(__name__)

_Signature = tuple[tuple[int, int, int, int], ...]


class CertificateFiles:
    def __init__(
        self,
        cert: str,
        key: str,
        on_reload: Callable[[], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self.cert, self.key = cert, key
        self._on_reload, self._on_error = on_reload, on_error
        self._lock = threading.Lock()
        try:
            self._signature = self._stat()
            self._context = self._load()
        except (OSError, ssl.SSLError) as err:
            raise UsageError(f"cannot load TLS certificate {cert} and key {key}: {err}") from err
        self._failed: _Signature | None = None

    def current(self) -> ssl.SSLContext:
        """The context for the files as they are now; the last good one while they cannot be loaded."""
        try:
            signature = self._stat()
        except OSError:
            return self._context  # mid-swap: a file is briefly missing
        if signature in (self._signature, self._failed):
            return self._context
        with self._lock:
            if signature not in (self._signature, self._failed):
                self._reload(signature)
        return self._context

    def _reload(self, signature: _Signature) -> None:
        try:
            context = self._load()
        except (OSError, ssl.SSLError) as err:
            self._failed = signature
            log.warning(
                "keeping the previous TLS certificate: cannot load %s and %s: %s", self.cert, self.key, err
            )
            if self._on_error:
                self._on_error(err)
            return
        self._context, self._signature, self._failed = context, signature, None
        log.info("loaded the new TLS certificate %s", self.cert)
        if self._on_reload:
            self._on_reload()

    def _stat(self) -> _Signature:
        stats = (Path(self.cert).stat(), Path(self.key).stat())
        return tuple((s.st_dev, s.st_ino, s.st_mtime_ns, s.st_size) for s in stats)

    def _load(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2  # what kube-apiserver offers at the least
        context.load_cert_chain(self.cert, self.key)
        context.sni_callback = self._on_hello
        return context

    def _on_hello(self, connection: ssl.SSLObject, server_name: str | None, context: ssl.SSLContext) -> None:
        fresh = self.current()
        if fresh is not context:
            connection.context = fresh

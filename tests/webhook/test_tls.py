"""Certificate files replaced on disk are served from the next handshake on; a broken pair is not."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest
import trustme

from kubegap.errors import UsageError
from kubegap.webhook.tls import CertificateFiles


class Pair:
    """A certificate and key on disk, replaced the way kubelet updates a mounted Secret (atomically)."""

    def __init__(self, directory: Path, ca: trustme.CA) -> None:
        self.ca, self.cert, self.key = ca, directory / "tls.crt", directory / "tls.key"
        self.der = b""
        self.rotate()

    def rotate(self, write_key: bool = True) -> trustme.LeafCert:
        leaf = self.ca.issue_cert("127.0.0.1", "localhost")
        self._replace(self.cert, b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        if write_key:
            self._replace(self.key, leaf.private_key_pem.bytes())
        self.der = ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())
        return leaf

    def write_key(self, leaf: trustme.LeafCert) -> None:
        self._replace(self.key, leaf.private_key_pem.bytes())

    @staticmethod
    def _replace(path: Path, data: bytes) -> None:
        temporary = path.with_suffix(".new")
        temporary.write_bytes(data)
        temporary.replace(path)


@pytest.fixture
def pair(tmp_path: Path) -> Pair:
    return Pair(tmp_path, trustme.CA())


def _served_certificate(server_context: ssl.SSLContext, ca: trustme.CA) -> bytes:
    """Handshake once over loopback; the server side always starts from `server_context`."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(5)
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            connection, _ = listener.accept()
            connection.settimeout(5)
            with server_context.wrap_socket(connection, server_side=True) as tls:
                tls.recv(1)
        except (OSError, ssl.SSLError) as err:
            errors.append(err)

    thread = threading.Thread(target=serve)
    thread.start()
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    try:
        with (
            socket.create_connection(listener.getsockname(), timeout=5) as raw,
            client_context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            der = tls.getpeercert(binary_form=True)
            tls.sendall(b"x")
    finally:
        thread.join(5)
        listener.close()
    assert not errors and der is not None
    return der


def test_the_same_context_while_files_are_unchanged(pair: Pair) -> None:
    files = CertificateFiles(str(pair.cert), str(pair.key))
    assert files.current() is files.current()
    assert _served_certificate(files.current(), pair.ca) == pair.der


def test_a_replaced_pair_is_served_even_through_an_old_context(pair: Pair) -> None:
    reloads: list[int] = []
    files = CertificateFiles(str(pair.cert), str(pair.key), on_reload=lambda: reloads.append(1))
    cached = files.current()  # a server that wraps every connection with the context it got first
    pair.rotate()
    assert _served_certificate(cached, pair.ca) == pair.der
    assert files.current() is not cached and reloads == [1]


def test_a_half_written_pair_keeps_the_old_certificate_until_the_key_arrives(pair: Pair) -> None:
    old_der = pair.der
    failures: list[Exception] = []
    files = CertificateFiles(str(pair.cert), str(pair.key), on_error=failures.append)
    cached = files.current()
    leaf = pair.rotate(write_key=False)  # new certificate, old key: they do not match
    assert _served_certificate(cached, pair.ca) == old_der
    assert _served_certificate(cached, pair.ca) == old_der
    assert len(failures) == 1  # tried once per change, not once per handshake
    pair.write_key(leaf)
    assert _served_certificate(cached, pair.ca) == pair.der


def test_a_briefly_missing_file_keeps_the_current_context(pair: Pair) -> None:
    files = CertificateFiles(str(pair.cert), str(pair.key))
    before = files.current()
    pair.key.unlink()
    assert files.current() is before


@pytest.mark.parametrize("broken", ["missing", "garbage"])
def test_unusable_files_at_start_are_a_usage_error(pair: Pair, broken: str) -> None:
    if broken == "missing":
        pair.cert.unlink()
    else:
        pair.cert.write_text("not a certificate")
    with pytest.raises(UsageError, match="cannot load TLS certificate"):
        CertificateFiles(str(pair.cert), str(pair.key))

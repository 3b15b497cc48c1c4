"""The test API server (kubegap.testserver) over real TLS, with a throwaway CA from trustme.

Run alone (used by the benchmark): `python -m tests.support.apiserver --kubeconfig K --load objects.jsonl`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import ssl
import sys
from collections.abc import Iterable
from pathlib import Path

import trustme

from kubegap.testserver import server
from kubegap.testserver.server import (
    BASIC_USER_RULE,
    RULES_REVIEW,
    TOKEN,
    Fault,
    Request,
    Resource,
    read_only_rules,
)
from kubegap.testserver.store import DEFAULT_RESOURCES

__all__ = [
    "BASIC_USER_RULE",
    "RULES_REVIEW",
    "TOKEN",
    "ApiServer",
    "Fault",
    "Request",
    "Resource",
    "read_only_rules",
]


class TrustmeTls:
    def __init__(self) -> None:
        self.ca = trustme.CA()
        self.ca_pem = self.ca.cert_pem.bytes()

    def configure(self, context: ssl.SSLContext) -> None:
        self.ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)


class ApiServer(server.ApiServer):
    """`with ApiServer() as server:` serves HTTPS until the block ends; `.kubeconfig(path)` for clients."""

    def __init__(self, resources: Iterable[Resource] = DEFAULT_RESOURCES, token: str = TOKEN) -> None:
        self.ca_tls = TrustmeTls()
        super().__init__(resources, token, self.ca_tls)

    @property
    def ca(self) -> trustme.CA:
        return self.ca_tls.ca


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--load", type=Path, help="a JSON-lines file of objects to serve")
    args = parser.parse_args(argv)
    api = ApiServer()
    if args.load:
        with args.load.open(encoding="utf-8") as lines:
            api.load(json.loads(line) for line in lines if line.strip())
    api.start()
    api.kubeconfig(args.kubeconfig)
    print(f"READY {api.url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()  # serve until the parent closes our stdin
    api.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: `audit_cluster` through `kubegap mcp` (stdio) against `kubegap audit --format json`.

    python benchmarks/bench_mcp.py [--size 10000] [--limit 50]

The objects are bench_audit's mix, served by the test API server in its own process. Reports the wall
time of the CLI audit, of the first `audit_cluster` call (the audit itself), of the next page (read from
the kept audit, no cluster reads), the size of the text part and of structuredContent, and the ratio of
the MCP audit's time to the CLI's. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_audit import generate  # noqa: E402


def start_server(objects: Path, kubeconfig: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tests.support.apiserver", "--kubeconfig", str(kubeconfig)]
    server = subprocess.Popen(
        [*command, "--load", str(objects)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert server.stdout is not None
    ready = server.stdout.readline()
    if not ready.startswith("READY"):
        raise SystemExit(f"test API server did not start: {ready!r}")
    return server


def cli_audit(kubeconfig: Path) -> float:
    start = time.perf_counter()
    command = [sys.executable, "-m", "kubegap", "audit", "--kubeconfig", str(kubeconfig), "--format", "json"]
    subprocess.run(command, stdout=subprocess.DEVNULL, cwd=ROOT, check=False)
    return time.perf_counter() - start


async def mcp_audit(kubeconfig: Path, limit: int, errlog: Path) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kubegap", "mcp", "--kubeconfig", str(kubeconfig)], cwd=str(ROOT)
    )
    with errlog.open("w") as log:
        async with Client(stdio_client(params, errlog=log), read_timeout_seconds=600) as client:
            start = time.perf_counter()
            first = await client.call_tool("audit_cluster", {"limit": limit})
            audit_s = time.perf_counter() - start
            record = first.structured_content or {}
            start = time.perf_counter()
            await client.call_tool("audit_cluster", {"limit": limit, "cursor": record["nextCursor"]})
            page_s = time.perf_counter() - start
    return {
        "mcp_audit_s": round(audit_s, 2),
        "next_page_s": round(page_s, 3),
        "findings_total": record["total"],
        "text_chars": len(first.content[0].text),  # type: ignore[union-attr]
        "structured_bytes": len(json.dumps(record)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--limit", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kubegap-bench-mcp-") as tmp:
        work = Path(tmp)
        generate(args.size, work / "objects.jsonl")
        server = start_server(work / "objects.jsonl", work / "kubeconfig")
        try:
            cli_s = cli_audit(work / "kubeconfig")
            row = {"objects": args.size, "limit": args.limit, "cli_audit_s": round(cli_s, 2)}
            row.update(anyio.run(mcp_audit, work / "kubeconfig", args.limit, work / "stderr.log"))
        finally:
            if server.stdin is not None:
                server.stdin.close()
            server.wait(timeout=30)
    print(json.dumps(row))
    print(f"audit_cluster / kubegap audit: {row['mcp_audit_s'] / row['cli_audit_s']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

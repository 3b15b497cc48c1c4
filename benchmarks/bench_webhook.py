"""Webhook latency and throughput on loopback: `kubegap serve` over TLS, two workers, keep-alive clients.

Run on demand (not part of the test suite):

    python benchmarks/bench_webhook.py                  # 100 and 500 req/s, 2x500, then max rate
    python benchmarks/bench_webhook.py --duration 20 --rates 100,250,500,1000
    python benchmarks/bench_webhook.py --wrk            # also a closed-loop run with Debian's wrk, if present
    python benchmarks/bench_webhook.py --wrk --install-wrk   # apt-get install -y wrk first
    python benchmarks/bench_webhook.py --rates 200 --stallers 16 --payloads create   # issue 17's case
    python benchmarks/bench_webhook.py --rates 1000 --duration 60 --payloads create  # twice the design load

With --stallers N, every step runs while N idle TLS connections (handshake done, no request) and N
connections trickling a request head a byte at a time are held open (tests/webhook/stallers.py). The
longest gap is the longest time in a step during which no review was answered successfully.

Open-loop load: requests are scheduled at a fixed rate and each latency is measured from its scheduled
send time, so a server that falls behind shows it in p99 instead of slowing the client down (no
coordinated omission). Client threads keep their TLS connections alive, as the API server does. The
load generator shares the machine's cores with the server, so the figures are pessimistic. Results are
printed and written to benchmarks/out/webhook-<time>.json.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import trustme
from webhook_payloads import payloads, renamed, variants

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
sys.path.insert(0, str(ROOT))
from kubegap import native  # noqa: E402
from kubegap.memo import CAPACITY  # noqa: E402
from tests.webhook.stallers import Stallers  # noqa: E402  (the same stalling clients as the tests)

# --- the server -----------------------------------------------------------------------------------------


class Server:
    def __init__(self, workdir: Path, workers: int, threads: int) -> None:
        ca = trustme.CA()
        leaf = ca.issue_cert("127.0.0.1")
        self.cert, self.key, self.ca = workdir / "tls.crt", workdir / "tls.key", workdir / "ca.crt"
        leaf.cert_chain_pems[0].write_to_path(str(self.cert))
        leaf.private_key_pem.write_to_path(str(self.key))
        ca.cert_pem.write_to_path(str(self.ca))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.log = (workdir / "serve.log").open("wb")
        command = [sys.executable, "-m", "kubegap", "serve", "--cert", str(self.cert), "--key", str(self.key),
                   "--bind", "127.0.0.1", "--port", str(self.port), "--workers", str(workers),
                   "--threads", str(threads), "--drain-seconds", "0", "--log-level", "warning"]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        self._wait_ready()

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"kubegap serve exited with {self.process.returncode}")
            try:
                connection = http.client.HTTPSConnection(
                    "127.0.0.1", self.port, context=self.context(), timeout=2
                )
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit("kubegap serve did not become ready")

    def cpu_seconds(self) -> float:
        """CPU time used so far by the server: the gunicorn master and its workers."""
        return sum(_cpu_seconds(pid) for pid in _tree(self.process.pid))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.log.close()


def _tree(pid: int) -> list[int]:
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = (task / "children").read_text().split() if (task / "children").exists() else []
        for child in children:
            pids += _tree(int(child))
    return pids


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


# --- load -----------------------------------------------------------------------------------------------


class OpenLoop:
    """`rate` requests per second for `duration` seconds over `connections` kept-alive TLS connections."""

    def __init__(
        self, server: Server, bodies: list[bytes], rate: float, duration: float, connections: int
    ) -> None:
        self.server, self.bodies, self.rate, self.duration = server, bodies, rate, duration
        self.total = int(rate * duration)
        self.latencies: list[float] = []  # from scheduled send time to response read
        self.errors: list[str] = []
        self._finished: list[float] = []
        self._answered: list[float] = []  # when each successful answer arrived
        self._next = 0
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(connections)]

    def run(self) -> dict[str, Any]:
        self._start = time.perf_counter() + 0.2
        for thread in self._threads:
            thread.start()
        for thread in self._threads:
            thread.join(self.duration * 10 + 60)
        elapsed = (max(self._finished) if self._finished else time.perf_counter()) - self._start
        result = summary(self.latencies, self.errors, elapsed, target=self.rate)
        end = max(self._finished, default=self._start)
        result["longest_gap_ms"] = round(longest_gap(self._start, [*self._answered, end]) * 1000, 2)
        return result

    def _slot(self) -> int | None:
        with self._lock:
            if self._next >= self.total:
                return None
            self._next += 1
            return self._next - 1

    def _run(self) -> None:
        # The client waits as long as the API server would (?timeout=10s); a server that stalls ends the
        # step in bounded time: what is not sent by 30 s after the step's end counts as an error unsent.
        connection = http.client.HTTPSConnection(
            "127.0.0.1", self.server.port, context=self.server.context(), timeout=10
        )
        headers = {"Content-Type": "application/json"}
        give_up = self._start + self.duration + 30
        while (slot := self._slot()) is not None:
            scheduled = self._start + slot / self.rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            if time.perf_counter() > give_up:
                with self._lock:
                    self.errors.append("not sent: the server stalled past the step")
                continue
            try:
                body = self.bodies[slot % len(self.bodies)]
                connection.request("POST", "/validate?timeout=10s", body=body, headers=headers)
                reply = connection.getresponse()
                data = reply.read()
                problem = (
                    None if reply.status == 200 and b'"uid":"c0ffee00' in data else f"HTTP {reply.status}"
                )
            except (OSError, http.client.HTTPException) as err:
                problem = f"{type(err).__name__}: {err}"
                connection.close()
            done = time.perf_counter()
            with self._lock:
                self.latencies.append(done - scheduled)
                if problem:
                    self.errors.append(problem)
                else:
                    self._answered.append(done)
                self._finished.append(done)
        connection.close()


def closed_loop(server: Server, bodies: list[bytes], duration: float, connections: int) -> dict[str, Any]:
    """As fast as `connections` kept-alive clients go: the maximum sustained rate."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + duration

    def client(offset: int) -> None:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", server.port, context=server.context(), timeout=30
        )
        headers = {"Content-Type": "application/json"}
        for sent in itertools.count(offset):
            if time.perf_counter() >= stop_at:
                break
            began = time.perf_counter()
            try:
                body = bodies[sent % len(bodies)]
                connection.request("POST", "/validate?timeout=10s", body=body, headers=headers)
                reply = connection.getresponse()
                reply.read()
                problem = None if reply.status == 200 else f"HTTP {reply.status}"
            except (OSError, http.client.HTTPException) as err:
                problem = f"{type(err).__name__}: {err}"
                connection.close()
            with lock:
                latencies.append(time.perf_counter() - began)
                if problem:
                    errors.append(problem)
        connection.close()

    threads = [threading.Thread(target=client, args=(i * 37,), daemon=True) for i in range(connections)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(duration + 60)
    return summary(latencies, errors, time.perf_counter() - started)


def summary(
    latencies: list[float], errors: list[str], elapsed: float, target: float | None = None
) -> dict[str, Any]:
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000 if ordered else float("nan")

    return {
        "target_rps": target,
        "requests": len(ordered),
        "achieved_rps": round(len(ordered) / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": round(pct(0.50), 2),
        "p90_ms": round(pct(0.90), 2),
        "p99_ms": round(pct(0.99), 2),
        "max_ms": round(ordered[-1] * 1000, 2) if ordered else None,
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2) if ordered else None,
        "errors": len(errors),
        "first_errors": sorted(set(errors))[:3],
    }


def longest_gap(start: float, finished: list[float]) -> float:
    """The longest time without a successful answer, from the start of the step to its end."""
    times = [start, *sorted(finished)]
    return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


def in_process(bodies: list[bytes], repeat: int = 300) -> dict[str, float]:
    """The review alone (decode + evaluate + answer), without HTTP or TLS, for comparison; with the
    collector's thresholds `kubegap serve` runs with (kubegap/cli.py)."""
    import gc

    from kubegap.cli import GC_THRESHOLDS
    from kubegap.config import Settings
    from kubegap.webhook.app import build_reviewer
    from kubegap.webhook.metrics import Metrics
    from kubegap.webhook.review import decode

    gc.set_threshold(*GC_THRESHOLDS)
    reviewer = build_reviewer(Settings(), Metrics())
    for body in bodies[-min(30, repeat) :]:
        reviewer.review(decode(body))
    times = []
    for index in range(repeat):
        body = bodies[index % len(bodies)]
        began = time.perf_counter()
        reviewer.review(decode(body))
        times.append(time.perf_counter() - began)
    times.sort()
    return {
        "median_ms": round(times[len(times) // 2] * 1000, 3),
        "p99_ms": round(times[int(0.99 * repeat)] * 1000, 3),
    }


def with_wrk(server: Server, body: bytes, workdir: Path, duration: float, connections: int) -> str:
    script = workdir / "post.lua"
    (workdir / "body.json").write_bytes(body)
    script.write_text(
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
        f'local f = io.open("{workdir / "body.json"}", "rb")\nwrk.body = f:read("*a")\nf:close()\n'
    )
    command = ["wrk", "-t1", f"-c{connections}", f"-d{int(duration)}s", "--timeout", "5s", "--latency",
               "-s", str(script), f"https://127.0.0.1:{server.port}/validate?timeout=10s"]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=duration + 60).stdout


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per load step (default 10)")
    parser.add_argument("--rates", default="100,500,1000", help="open-loop req/s (default 100,500,1000)")
    parser.add_argument("--connections", type=int, default=8, help="kept-alive connections (default 8)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--stallers", type=int, default=0, help="idle and trickling connections held (each)")
    parser.add_argument("--payloads", default="", help="comma-separated payload names (default all)")
    parser.add_argument(
        "--same",
        action="store_true",
        help="send one object made by a controller under other names (the pods of one Job) instead of "
        "distinct objects: what an engine that remembers identical objects (kubegap.memo) is best at",
    )
    parser.add_argument("--no-max", action="store_true", help="skip the closed-loop maximum-rate step")
    parser.add_argument("--wrk", action="store_true", help="also a closed-loop run with Debian's wrk")
    parser.add_argument("--install-wrk", action="store_true", help="apt-get install -y wrk before running")
    return parser.parse_args()


# Issue targets, printed beside each figure as a ratio: p99 at 500 req/s, server CPU per review, and the
# in-process review time (decode + evaluate + answer) of the 64-job JobSet.
P99_TARGET_MS = {"pytorchjob-16w-create": 10.0, "pytorchjob-update-50k": 15.0}
CPU_TARGET_MS = {"pytorchjob-16w-create": 1.5}
REVIEW_TARGET_MS = {"jobset-64-jobs-create": 5.0}


def _ratio(figure: float | None, target: float | None) -> str:
    return f" = {figure / target:.2f}x the {target:g} ms target" if figure is not None and target else ""


def _print_targets(name: str, step: dict[str, Any]) -> None:
    p99 = _ratio(step["p99_ms"], P99_TARGET_MS.get(name)) or " (no target)"
    cpu = _ratio(step["server_cpu_ms_per_request"], CPU_TARGET_MS.get(name)) or " (no target)"
    print(f"{name:22}   at 500 req/s: p99{p99}; server CPU{cpu}", flush=True)


def _bench(server: Server, body: bytes, args: argparse.Namespace, workdir: Path, name: str) -> dict[str, Any]:
    # Distinct objects by default, more of them than the webhook remembers (kubegap.memo), in a cycle.
    bodies = renamed(body, 2 * CAPACITY) if args.same else variants(body, 2 * CAPACITY)
    run: dict[str, Any] = {
        "bytes": len(body),
        "distinct_objects": len(bodies),
        "in_process": in_process(bodies, 300 if len(body) < 60_000 else 60),
    }
    alone = run["in_process"]
    print(
        f"{name:22} in process: median {alone['median_ms']} ms, p99 {alone['p99_ms']} ms"
        f"{_ratio(alone['median_ms'], REVIEW_TARGET_MS.get(name))}",
        flush=True,
    )
    OpenLoop(server, bodies, 50, 2, args.connections).run()  # warm-up: both workers, every connection
    stallers = Stallers(server.port, server.context, args.stallers, args.stallers) if args.stallers else None
    try:
        for rate in (float(r) for r in args.rates.split(",") if r):
            load = OpenLoop(server, bodies, rate, args.duration, args.connections)
            run[f"open_{int(rate)}"] = _measured(server, load.run)
            _print(name, f"{int(rate)} req/s", run[f"open_{int(rate)}"])
            if int(rate) == 500:
                _print_targets(name, run["open_500"])
    finally:
        if stallers:
            run["stallers"] = {"held": args.stallers, "handshakes_unanswered": stallers.unanswered}
            stallers.stop()
    if not args.no_max:
        run["max"] = _measured(server, partial(closed_loop, server, bodies, args.duration, args.connections))
        _print(name, "max", run["max"])
    if args.wrk and shutil.which("wrk"):
        run["wrk"] = with_wrk(server, body, workdir, args.duration, args.connections)
        print(run["wrk"])
    return run


def main() -> int:
    args = _arguments()
    if args.install_wrk:
        subprocess.run(["apt-get", "install", "-y", "wrk"], check=True)
    results: dict[str, Any] = {"cpus": os.cpu_count(), "runs": {}, **vars(args)}
    print(f"kubegap: {native.state().describe()}", flush=True)  # the server runs the same install
    workdir = Path(tempfile.mkdtemp(prefix="kubegap-bench-"))
    server = Server(workdir, args.workers, args.threads)
    try:
        chosen = [p for p in args.payloads.split(",") if p]
        for name, body in payloads().items():
            if not chosen or any(p in name for p in chosen):
                results["runs"][name] = _bench(server, body, args, workdir, name)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"webhook-{time.strftime('%Y%m%d-%H%M%S')}.json"
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {target}")
    return 0


def _measured(server: Server, step: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one load step and add the server's CPU time per request, a figure other load cannot skew."""
    before = server.cpu_seconds()
    result: dict[str, Any] = step()
    used = server.cpu_seconds() - before
    result["server_cpu_ms_per_request"] = (
        round(used / result["requests"] * 1000, 3) if result["requests"] else None
    )
    return result


def _print(name: str, step: str, result: dict[str, Any]) -> None:
    print(
        f"{name:22} {step:>9}: {result['achieved_rps']:7.1f} req/s  p50 {result['p50_ms']:8.2f} ms  "
        f"p99 {result['p99_ms']:8.2f} ms  max {result['max_ms']} ms  "
        f"longest gap {result.get('longest_gap_ms', '-')} ms  errors {result['errors']}  "
        f"server CPU {result['server_cpu_ms_per_request']} ms/req",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())

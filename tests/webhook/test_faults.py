"""Faults under load, end to end: the real `kubegap serve` (gunicorn, 2 workers x 4 evaluation threads, TLS)
on 127.0.0.1, with reviews arriving at a steady rate while something goes wrong. Each test runs a few
seconds; the deadlines asserted are the API server's `?timeout=`, a correctness bound, not a speed target.
What the clients saw is printed (`pytest -s`) and summed up in docs/webhook.md.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from .conftest import payload
from .load import Load, Outcome
from .server import Server, post_review, running
from .stallers import Stallers

pytestmark = pytest.mark.slow
ENFORCE = {"webhook": {"preset": "enforce", "onError": "allow"}}
THREADS = 2 * 4  # the server's evaluation threads: 2 workers, 4 each


def _report(name: str, outcomes: list[Outcome]) -> None:
    seen = Counter(str(o.status) if o.status else f"{o.stage} error" for o in outcomes)
    print(f"\n{name}: {len(outcomes)} reviews: {dict(seen)}; slowest {max(o.seconds for o in outcomes):.3f}s")


def test_idle_and_trickling_connections_hold_up_no_review(tmp_path: Path) -> None:
    """Issue 17: connections that finished the TLS handshake and send nothing, and ones that send a request
    head a byte at a time, each more than the server has threads, while reviews arrive at 200/s."""
    with running(tmp_path, ENFORCE, drain_seconds=0) as server:
        stallers = Stallers(
            server.port, server.certificates.client_context, idle=2 * THREADS, trickling=2 * THREADS
        )
        try:
            outcomes = Load(server, rate=200, seconds=3, timeout="5s").run()
        finally:
            stallers.stop()
    _report("idle and trickling connections", outcomes)
    assert stallers.unanswered == 0, "the server did not complete the stallers' handshakes"
    assert len(outcomes) == 600
    assert [o for o in outcomes if o.status != 200] == []
    assert all(o.allowed for o in outcomes)
    late = [o for o in outcomes if o.seconds >= 5.0]
    assert late == [], f"{len(late)} reviews answered after their ?timeout=5s"


def test_a_killed_worker_is_replaced_and_costs_only_its_own_connections(tmp_path: Path) -> None:
    with running(tmp_path, ENFORCE, drain_seconds=0) as server:
        before = _two_workers(server)
        assert len(before) == 2
        load = Load(server, rate=100, seconds=4).start()
        load.wait_for(100)
        os.kill(before[0], signal.SIGKILL)
        outcomes = load.join()
        after = _two_workers(server, other_than=before[0])
        reviewed = server.reviewed()
    _report("kill -9 of one worker", outcomes)
    assert len(after) == 2 and before[0] not in after, "the master did not replace the killed worker"
    failed = [o for o in outcomes if o.status != 200]
    assert all(o.status is None for o in failed), "a client got an HTTP error, not a closed connection"
    # Only the connections the killed worker held fail, each once; the client's next connection is served.
    assert len(failed) <= load.connections
    assert all(o.status == 200 for o in outcomes[-100:])
    assert {o.uid for o in outcomes if o.status == 200} <= reviewed


def _two_workers(server: Server, other_than: int = 0) -> list[int]:
    """The two workers' pids once both run (a server is ready when its first worker answers)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        workers = server.workers()
        if len(workers) == 2 and other_than not in workers:
            return workers
        time.sleep(0.1)
    return server.workers()


def test_sigterm_under_load_drops_no_review_in_flight(tmp_path: Path) -> None:
    with running(tmp_path, ENFORCE, drain_seconds=1.0) as server:
        load = Load(server, rate=100, seconds=4, connections=4).start()
        load.wait_for(100)
        signalled = time.monotonic()
        server.signal(signal.SIGTERM)
        outcomes = load.join()
        assert server.wait() == 0
        reviewed = server.reviewed()
    _report("SIGTERM", outcomes)
    answered = {o.uid for o in outcomes if o.status == 200}
    assert [o for o in outcomes if o.status not in (200, None)] == []
    assert reviewed <= answered, f"reviews taken in but never answered: {sorted(reviewed - answered)}"
    assert sum(o.status == 200 and o.sent > signalled + 0.2 for o in outcomes) > 0, (
        "nothing served in the drain"
    )
    # What fails is refused: sent after the worker stopped reading, it was never taken in.
    assert all(o.uid not in reviewed for o in outcomes if o.status is None)


SLOW_POLICIES = 120


def _slow_policies(directory: Path) -> list[str]:
    """Policies comparing every pair of containers: on a 14-container Pod each takes tens of milliseconds
    with the pure-Python CEL runtime, so together they take about 10 s, far past a deadline of a few
    seconds however fast the machine is at that moment (10 containers took 3.5-5 s, too near 3.6 s)."""
    directory.mkdir()
    expression = "object.spec.containers.all(a, object.spec.containers.all(b, a.name != b.name || a == b))"
    names = [f"pairs-{i:03d}" for i in range(SLOW_POLICIES)]
    for name in names:
        (directory / f"{name}.yaml").write_text(
            "apiVersion: kubegap.dev/v1alpha1\nkind: Policy\n"
            f"metadata: {{name: {name}}}\nspec:\n  title: {name}\n  severity: high\n  scope: workload\n"
            f'  appliesTo: "true"\n  remediation: none\n  validations:\n'
            f"    - {{name: distinct, expression: {json.dumps(expression)}}}\n"
        )
    return names


def test_a_slow_review_gets_the_on_error_decision_before_its_timeout(tmp_path: Path) -> None:
    policies = _slow_policies(tmp_path / "policies")
    config = {"policyDirs": [str(tmp_path / "policies")], "policies": policies, "celBackend": "cel-python"}
    review = payload("pod-create.json")
    containers = review["request"]["object"]["spec"]["containers"]
    review["request"]["object"]["spec"]["containers"] = [dict(containers[0], name=f"c{i}") for i in range(14)]
    answers: list[tuple[int, object, float]] = []

    def slow_review(server: Server) -> None:
        connection = server.connection(timeout=30)
        began = time.monotonic()
        status, reply = post_review(connection, review, timeout="4s")
        answers.append((status, reply, time.monotonic() - began))
        connection.close()

    with running(tmp_path, {**config, "webhook": {"onError": "deny"}}, drain_seconds=0) as server:
        clients = [threading.Thread(target=slow_review, args=(server,)) for _ in range(2)]
        for client in clients:
            client.start()
        health = server.get("/healthz")  # the event loop answers while both reviews are being judged
        for client in clients:
            client.join(30)
    assert health == (200, "ok\n")
    assert len(answers) == 2
    for status, reply, seconds in answers:
        assert status == 200 and isinstance(reply, dict)
        assert reply["response"]["allowed"] is False
        assert "evaluation did not finish before its deadline" in reply["response"]["status"]["message"]
        assert seconds < 4.0, f"answered after {seconds:.2f}s: the API server had given up at 4s"


def test_twice_the_design_load_gets_no_server_error(tmp_path: Path) -> None:
    """1,000 reviews a second, twice the design load, for a bounded 3 s: what is answered is a 200, never a
    5xx. On 2 shared cores the server saturates near 450/s, so reviews queue and some reach their own
    `?timeout=` in the client, as the API server would give up; the 60 s run with p99 is
    `benchmarks/bench_webhook.py --rates 1000 --duration 60` (figures in docs/webhook.md)."""
    with running(tmp_path, ENFORCE, drain_seconds=0) as server:
        outcomes = Load(server, rate=1000, seconds=3, connections=16, timeout="5s").run()
    _report("twice the design load", outcomes)
    answered = [o for o in outcomes if o.status is not None]
    assert answered, "no review was answered at all"
    assert [o.status for o in answered if o.status != 200] == []
    assert all(o.allowed for o in answered)

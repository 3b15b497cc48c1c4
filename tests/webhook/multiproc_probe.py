"""Run with PROMETHEUS_MULTIPROC_DIR set: a parent that seeds the series, then forked children that count,
as gunicorn's master and workers do. Prints the exposition text at each step as JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

from prometheus_client import multiprocess

from kubegap.webhook.metrics import DURATION, POLICIES, REQUESTS, Metrics

directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
metrics = Metrics(directory)
metrics.start_at_zero([("batch", "Job"), ("batch.volcano.sh", "Job")], [("nccl-timeout", "timeout-declared")])
metrics.set(POLICIES, 6)
children = []
for reviews in (2, 3):
    pid = os.fork()
    if pid == 0:
        for _ in range(reviews):
            metrics.inc(REQUESTS, ("denied", "Job.batch", "CREATE"))
            metrics.observe(DURATION, 0.01)
        metrics.set(POLICIES, 7)  # a live gauge of this child's own
        os._exit(0)
    os.waitpid(pid, 0)
    children.append(pid)
# A worker that has not reviewed anything yet: after_fork opens its own files up front.
pid = os.fork()
if pid == 0:
    metrics.after_fork()
    os._exit(0 if (Path(directory) / f"counter_{os.getpid()}.db").exists() else 1)
opened = os.waitpid(pid, 0)[1] == 0
texts = {"children ran": metrics.render()}
texts["opened after fork"] = "yes" if opened else "no"
for pid in children:
    multiprocess.mark_process_dead(pid, directory)
texts["children marked dead"] = metrics.render()
print(json.dumps(texts))

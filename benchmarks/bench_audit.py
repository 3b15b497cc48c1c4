"""Benchmark: `kubegap audit` over 10,000 and 50,000 objects served by the test API server (page size 500),
against the list-and-decode floor measured on the same server in the same run.

    python benchmarks/bench_audit.py [--sizes 10000,50000] [--page-size 500] [--jobs auto,1]
                                     [--templates shared,distinct]

The floor is what no audit can beat: every kind the audit lists, page by page over one keep-alive TLS
connection, each page decoded with json.loads, and nothing else (discovery is done before the clock starts).

The mix follows a GPU cluster: 40% Pods (half of them owned by a listed Job, so skipped as owned), 20%
Jobs, 4% PyTorchJobs, 2% JobSets, 2% Nodes and the rest spread over the other supported kinds. The server
runs in its own process; the audit runs as `python -m kubegap audit --format json --jobs N` in another,
and its wall time is reported with two memory figures: wait4's ru_maxrss, the largest single process of
the audit and its workers (Linux folds waited-for children into it), and the peak of their summed PSS,
sampled from /proc every 0.2 s (PSS splits the pages the forked workers share with the audit, so the sum
is the memory they take together). CPU is the audit's and its workers'. Prints figures; asserts nothing.

`--templates`: `shared` draws each pod template from 54 variants (GPUs, save interval, timeout, async
error handling), as a cluster holds one chart or pipeline's copies under many names and namespaces, which
the audit evaluates once each (kubegap.memo); `distinct` gives every object a template of its own (a run id
on its command line), so nothing is remembered and every object costs a full evaluation. Both by default.
Targets: at most 3x the floor at 50,000 objects (long term 1.5x); peak RSS growing < 20% from 10k to 50k.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test API server lives in tests/support

_OTHER = [
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "DaemonSet"),
    ("batch/v1", "CronJob"),
    ("ray.io/v1", "RayCluster"),
    ("ray.io/v1", "RayJob"),
    ("kubeflow.org/v1", "MPIJob"),
    ("kubeflow.org/v1", "TFJob"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
]


def _container(rng: random.Random, gpus: int, unique: int | None) -> dict[str, Any]:
    args = (
        f"torchrun --nnodes 4 --nproc-per-node {gpus} pretrain.py --save /ckpt "
        f"--save-interval {rng.choice([100, 500, 2000])} "
        f"--distributed-timeout-minutes {rng.choice([10, 30, 60])}"
    )
    if unique is not None:
        args += f" --run-id {unique}"
    env = [
        {"name": "NCCL_DEBUG", "value": "WARN"},
        {"name": "FI_PROVIDER", "value": "efa"},
        {"name": "TORCH_NCCL_ASYNC_ERROR_HANDLING", "value": rng.choice(["1", "3"])},
    ]
    limits: dict[str, Any] = {"cpu": "90", "memory": "800Gi"}
    if gpus:
        limits.update({"nvidia.com/gpu": gpus, "vpc.amazonaws.com/efa": 16})
    return {
        "name": "trainer",
        "image": "registry.example.com/train:24.05",
        "command": ["bash", "-c"],
        "args": [args],
        "env": env,
        "resources": {"limits": limits, "requests": limits},
    }


def _template(rng: random.Random, unique: int | None) -> dict[str, Any]:
    gpus = rng.choice([0, 1, 8, 8])
    return {
        "metadata": {"annotations": {"kubegap.dev/step-time": "2.0s"}},
        "spec": {"containers": [_container(rng, gpus, unique)], "restartPolicy": "Never"},
    }


def _spec(api: str, kind: str, rng: random.Random, unique: int | None) -> dict[str, Any]:
    t = _template(rng, unique)
    match kind:
        case "Pod":
            return dict(t["spec"])
        case "PyTorchJob" | "MPIJob" | "TFJob":
            key = {
                "PyTorchJob": "pytorchReplicaSpecs",
                "MPIJob": "mpiReplicaSpecs",
                "TFJob": "tfReplicaSpecs",
            }[kind]
            return {"runPolicy": {"backoffLimit": 3}, key: {"Worker": {"replicas": 4, "template": t}}}
        case "JobSet":
            return {
                "replicatedJobs": [
                    {
                        "name": "workers",
                        "replicas": 2,
                        "template": {"spec": {"parallelism": 2, "template": t}},
                    }
                ]
            }
        case "CronJob":
            return {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": t}}}
        case "RayCluster":
            return {
                "headGroupSpec": {"template": t},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": t}],
            }
        case "RayJob":
            return {"rayClusterSpec": {"headGroupSpec": {"template": t}}}
        case "LeaderWorkerSet":
            return {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": t}}
        case "TrainJob":
            return {
                "trainer": {
                    "image": "train:1",
                    "numNodes": 2,
                    "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}},
                }
            }
        case "Job" if api == "batch.volcano.sh/v1alpha1":
            return {"tasks": [{"name": "worker", "replicas": 2, "template": t}]}
        case _:
            return {"replicas": 2, "parallelism": 2, "template": t}


def _node(index: int, rng: random.Random) -> dict[str, Any]:
    gpus = {"nvidia.com/gpu": "8"}
    alloc = {"nvidia.com/gpu": "8" if rng.random() > 0.05 else "7"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"gpu-{index:05d}",
            "uid": str(uuid.uuid4()),
            "labels": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
        },
        "spec": {},
        "status": {"capacity": gpus, "allocatable": alloc, "conditions": []},
    }


def generate(count: int, path: Path, seed: int = 11, distinct: bool = False) -> None:
    """`count` objects; `distinct`: no two pod templates alike."""
    rng = random.Random(seed)
    plan = {
        ("v1", "Pod"): count * 40 // 100,
        ("batch/v1", "Job"): count * 20 // 100,
        ("kubeflow.org/v1", "PyTorchJob"): count * 4 // 100,
        ("jobset.x-k8s.io/v1alpha2", "JobSet"): count * 2 // 100,
        ("v1", "Node"): count * 2 // 100,
    }
    rest = count - sum(plan.values())
    for i, key in enumerate(_OTHER):
        plan[key] = rest // len(_OTHER) + (1 if i < rest % len(_OTHER) else 0)
    job_uids: list[str] = []
    serial = 0
    with path.open("w", encoding="utf-8") as out:
        for (api, kind), n in sorted(plan.items(), key=lambda item: item[0][1] == "Pod"):  # Jobs before Pods
            for i in range(n):
                if kind == "Node":
                    out.write(json.dumps(_node(i, rng)) + "\n")
                    continue
                uid = str(uuid.UUID(int=rng.getrandbits(128)))
                meta: dict[str, Any] = {
                    "name": f"{kind.lower()}-{i:05d}",
                    "namespace": f"team-{i % 40:02d}",
                    "uid": uid,
                }
                if kind == "Job" and api == "batch/v1":
                    job_uids.append(uid)
                if kind == "Pod" and i % 2 == 0 and job_uids:
                    owner = job_uids[i % len(job_uids)]
                    meta["ownerReferences"] = [
                        {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "name": "j",
                            "uid": owner,
                            "controller": True,
                        }
                    ]
                serial += 1
                spec = _spec(api, kind, rng, serial if distinct else None)
                obj = {"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec}
                out.write(json.dumps(obj) + "\n")


class _StubEngine:
    """One failing finding per object and no CEL: isolates the audit's own memory from the engine's."""

    def evaluate(self, obj: Any, context: Any = None, deadline: float | None = None) -> Any:
        from kubegap.evaluate import Evaluation
        from kubegap.findings import Finding, ObjectRef, Result, Severity

        ref = ObjectRef.of(obj)
        finding = Finding("stub", "always", Severity.HIGH, Result.FAIL, f"{ref.display()} fails", "none", ref)
        return Evaluation(ref, True, (finding,))


def _stub_child(kubeconfig: str, page_size: int) -> int:
    from kubegap.audit.reader import connect
    from kubegap.audit.retry import Api
    from kubegap.audit.runner import Auditor
    from kubegap.audit.scope import AuditScope

    result = Auditor(Api(connect(kubeconfig, None)), _StubEngine(), AuditScope(page_size=page_size)).run()
    print(
        json.dumps({"coverage": result.coverage.to_json(), "findings": [None] * result.spool.count})
    )  # the shape _summary reads
    return 0


def _floor_child(kubeconfig: str, page_size: int) -> int:
    """List and decode every page of every kind the audit lists, over one keep-alive TLS connection."""
    import base64
    import http.client
    import ssl
    from urllib.parse import urlencode, urlsplit

    import yaml

    from kubegap.audit.discovery import discover
    from kubegap.audit.reader import connect
    from kubegap.audit.retry import Api
    from kubegap.audit.runner import ordered_kinds

    config = yaml.safe_load(Path(kubeconfig).read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    served, _ = discover(Api(connect(kubeconfig, None)), ordered_kinds())
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    where = urlsplit(cluster["server"])
    headers = {"Authorization": f"Bearer {user['token']}", "Accept": "application/json"}
    objects = pages = 0
    start, cpu = time.perf_counter(), time.process_time()
    connection = http.client.HTTPSConnection(where.hostname or "", where.port, context=context)
    for kind in served:
        token = ""
        while True:
            query = {"limit": str(page_size), **({"continue": token} if token else {})}
            connection.request("GET", f"{kind.collection(None)}?{urlencode(query)}", headers=headers)
            doc = json.loads(connection.getresponse().read())
            objects, pages = objects + len(doc.get("items") or ()), pages + 1
            token = (doc.get("metadata") or {}).get("continue") or ""
            if not token:
                break
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"seconds": seconds, "cpu": cpu, "objects": objects, "pages": pages}))
    return 0


def floor(kubeconfig: Path, page_size: int, env: dict[str, str]) -> dict[str, Any]:
    command = [sys.executable, __file__, "--floor-child", str(kubeconfig), "--page-size", str(page_size)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _summary(report: Path) -> dict[str, Any]:
    """The report's coverage and finding count, read in a child process: Linux keeps a process's peak RSS
    across fork and exec, so a parent that parsed a large report would inflate the next audit's figure.
    An audit that crashed before writing its report gives empty totals (its exit code tells)."""
    code = (
        "import json, sys; d = json.load(open(sys.argv[1])); "
        "print(json.dumps({'coverage': d['coverage'], 'findings': len(d['findings'])}))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(report)], capture_output=True, text=True)
    if done.returncode:
        empty = dict.fromkeys(("seen", "evaluated", "skippedOwned"))
        return {"coverage": {"totals": empty, "complete": None}, "findings": None}
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _spin(seconds: float) -> int:
    end, loops = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        loops += 1
    return loops


def cores_free(seconds: float = 1.0) -> float:
    """How many cores two busy processes get together right now (1.0 to 2.0 on this 2-core machine, which
    other work shares): read beside each row, it says how much a second worker could have helped."""
    alone = _spin(seconds)
    pipes = [os.pipe() for _ in range(2)]
    for _, write in pipes:
        if os.fork() == 0:
            os.write(write, str(_spin(seconds)).encode())
            os._exit(0)
    together = 0
    for read, write in pipes:
        os.close(write)
        together += int(os.read(read, 64))
        os.close(read)
        os.wait()
    return round(together / alone, 2)


def _pss_kb(pid: int) -> int:
    """PSS of a process and its children (the audit's workers), 0 once gone."""
    total = 0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        for each in (pid, *map(int, children)):
            for line in Path(f"/proc/{each}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
    except (OSError, ValueError):
        pass  # a process that just ended
    return total


def _sample_pss(pid: int, peak: list[int], stop: threading.Event) -> None:
    while not stop.wait(0.2):
        peak[0] = max(peak[0], _pss_kb(pid))


def measure(
    count: int, page_size: int, work: Path, stub: bool = False, jobs: str = "auto", templates: str = "shared"
) -> dict[str, Any]:
    objects, kubeconfig = work / f"objects-{count}.jsonl", work / f"kubeconfig-{count}"
    generate(count, objects, distinct=templates == "distinct")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.apiserver",
            "--kubeconfig",
            str(kubeconfig),
            "--load",
            str(objects),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        assert server.stdout is not None
        ready = server.stdout.readline()
        if not ready.startswith("READY"):
            raise SystemExit(f"test API server did not start: {ready!r}")
        listed = floor(kubeconfig, page_size, env)
        report = work / f"audit-{count}.json"
        start = time.perf_counter()
        with report.open("w") as out:
            command = ["-m", "kubegap", "audit", "--kubeconfig", str(kubeconfig), "--format", "json",
                       "--page-size", str(page_size), "--allow-incomplete", "--jobs", jobs]  # fmt: skip
            if stub:
                command = [__file__, "--stub-child", str(kubeconfig), "--page-size", str(page_size)]
            audit = subprocess.Popen([sys.executable, *command], stdout=out, cwd=ROOT, env=env)
            peak, stop = [0], threading.Event()
            sampler = threading.Thread(target=_sample_pss, args=(audit.pid, peak, stop), daemon=True)
            sampler.start()
            _, status, usage = os.wait4(audit.pid, 0)
        wall = time.perf_counter() - start
        stop.set()
        sampler.join()
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)
    doc = _summary(report)
    totals = doc["coverage"]["totals"]
    return {
        "engine": "stub" if stub else "real",
        "templates": templates,
        "jobs": jobs,
        "objects": count,
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),  # the audit and its workers
        "floor_s": round(listed["seconds"], 2),
        "floor_cpu_s": round(listed["cpu"], 2),
        "x_floor": round(wall / listed["seconds"], 2),
        "objects_per_s": round(count / wall),
        "cores_free": cores_free(),  # measured right after the audit
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # the largest single process
        "peak_pss_sum_mb": round(peak[0] / 1024, 1),  # the audit and its workers together
        "seen": totals["seen"],
        "evaluated": totals["evaluated"],
        "skipped_owned": totals["skippedOwned"],
        "findings": doc["findings"],
        "complete": doc["coverage"]["complete"],
    }


def _say(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)
    print(
        f"{row['engine']} engine, {row['objects']:,} objects, {row['templates']} templates, "
        f"--jobs {row['jobs']}: audit {row['wall_s']} s, "
        f"floor {row['floor_s']} s = {row['x_floor']}x the floor (target <= 3x), peak RSS "
        f"{row['peak_rss_mb']} MB (largest process), {row['peak_pss_sum_mb']} MB (PSS, all processes); "
        f"CPU {row['cpu_s']} s; {row['cores_free']} cores free after it",
        flush=True,
    )


def _growth(rows: list[dict[str, Any]]) -> None:
    for engine, templates, jobs in dict.fromkeys((r["engine"], r["templates"], r["jobs"]) for r in rows):
        same = [r for r in rows if (r["engine"], r["templates"], r["jobs"]) == (engine, templates, jobs)]
        if len(same) >= 2:
            growth = same[-1]["peak_rss_mb"] / same[0]["peak_rss_mb"] - 1
            summed = same[-1]["peak_pss_sum_mb"] / max(same[0]["peak_pss_sum_mb"], 0.1) - 1
            sizes = f"{same[0]['objects']:,} -> {same[-1]['objects']:,}"
            print(
                f"{engine} engine, {templates} templates, --jobs {jobs}: peak RSS growth {sizes}: "
                f"{growth:+.1%} (summed PSS {summed:+.1%})"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--stub-engine", action="store_true", help="also measure with a stub engine (no CEL)")
    parser.add_argument(
        "--jobs", default="auto", help="the audit's --jobs; a list (auto,1) runs each in turn"
    )
    parser.add_argument(
        "--templates", default="shared,distinct", help="shared, distinct, or both (see above)"
    )
    parser.add_argument("--stub-child", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--floor-child", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stub_child:
        return _stub_child(args.stub_child, args.page_size)
    if args.floor_child:
        return _floor_child(args.floor_child, args.page_size)
    from kubegap import native

    print(f"kubegap: {native.state().describe()}", flush=True)  # the audits run the same install
    rows = []
    with tempfile.TemporaryDirectory(prefix="kubegap-bench-audit-") as tmp:
        for stub in (False, True) if args.stub_engine else (False,):
            for templates in args.templates.split(","):
                for size in (int(s) for s in args.sizes.split(",")):
                    for jobs in args.jobs.split(","):
                        rows.append(measure(size, args.page_size, Path(tmp), stub, jobs, templates))
                        _say(rows[-1])
    _growth(rows)
    out = ROOT / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "audit.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

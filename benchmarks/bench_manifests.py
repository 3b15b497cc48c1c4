"""Manifest reading speed: kubegap's guarded reader against a plain `yaml.load_all(CSafeLoader)`.

Run on demand: `python benchmarks/bench_manifests.py [--documents N] [--repeat R]`. Both sides read the same
bytes (a stream of PyTorchJob documents of about 2.6 KB each); the best of R runs is reported for each,
with the ratio. The target is a ratio of at most 1.3.
"""

from __future__ import annotations

import argparse
import gc
import io
import time
from collections.abc import Callable

import yaml

from kubegap.manifests import Reader

_DOCUMENT = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train-{i}
  namespace: research
  labels:
    app.kubernetes.io/name: llm-pretrain
    team: foundation-models
  annotations:
    kubegap.dev/step-time: "45s"
spec:
  runPolicy:
    cleanPodPolicy: None
    backoffLimit: 3
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          labels: {{role: master, run: "r-{i}"}}
        spec:
          priorityClassName: training-high
          serviceAccountName: trainer
          containers:
          - name: pytorch
            image: registry.example.com/train/llm:2024.06-cu124
            command: ["torchrun"]
            args: ["--nnodes=4", "--nproc-per-node=8", "train.py", "--save-interval=500", "--lr=3e-4"]
            env:
            - {{name: NCCL_DEBUG, value: WARN}}
            - {{name: NCCL_IB_TIMEOUT, value: "22"}}
            - {{name: TORCH_NCCL_ASYNC_ERROR_HANDLING, value: "1"}}
            - {{name: TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, value: "600"}}
            resources:
              limits: {{nvidia.com/gpu: 8, rdma/ib: 1, memory: 900Gi}}
              requests: {{cpu: "90", memory: 900Gi}}
            volumeMounts:
            - {{name: shm, mountPath: /dev/shm}}
            - {{name: ckpt, mountPath: /checkpoints}}
          volumes:
          - name: shm
            emptyDir: {{medium: Memory, sizeLimit: 256Gi}}
          - name: ckpt
            persistentVolumeClaim: {{claimName: ckpt-{i}}}
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        metadata:
          labels: {{role: worker, run: "r-{i}"}}
        spec:
          containers:
          - name: pytorch
            image: registry.example.com/train/llm:2024.06-cu124
            command: ["torchrun"]
            args: ["--nnodes=4", "--nproc-per-node=8", "train.py", "--save-interval=500", "--lr=3e-4"]
            env:
            - {{name: NCCL_DEBUG, value: WARN}}
            - {{name: NCCL_IB_TIMEOUT, value: "22"}}
            - {{name: TORCH_NCCL_ASYNC_ERROR_HANDLING, value: "1"}}
            resources:
              limits: {{nvidia.com/gpu: 8, rdma/ib: 1, memory: 900Gi}}
            volumeMounts:
            - {{name: shm, mountPath: /dev/shm}}
          volumes:
          - name: shm
            emptyDir: {{medium: Memory, sizeLimit: 256Gi}}
          nodeSelector:
            node.kubernetes.io/instance-type: p5.48xlarge
          tolerations:
          - {{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}
          - {{key: dedicated, operator: Equal, value: training, effect: NoSchedule}}
"""


def stream(documents: int) -> bytes:
    return "".join("---\n" + _DOCUMENT.format(i=i) for i in range(documents)).encode()


def bad_inputs() -> bytes:
    """One stream holding every kind of bad document the reader rejects, between valid ones."""
    pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
    laughs = ['l0: &l0 ["lol"]'] + [
        f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)
    ]
    bad = [
        "\n".join(laughs),
        "d: " + "[" * 5000 + "]" * 5000,
        "d: " + "[" * 150 + "]" * 150,
        "k:\n" + "".join("  " * i + "k:\n" for i in range(1, 200)) + "  " * 200 + "v",
        pod + "  name: q",
        pod + "x: !!python/object/apply:os.system [ls]",
        pod + "  namespace: '{{ .Release.Namespace }}'",
        pod + "spec: {{ .Values.spec | toYaml }}",
        "a: &a [*a]",
        "- not\n- an object",
        "a: [unclosed",
    ]
    return "".join(f"---\n{pod}---\n{text}\n" for text in bad).encode()


def ours(data: bytes) -> int:
    reader = Reader()
    count = sum(1 for doc in reader.read(["-"], io.BytesIO(data)) if doc.obj is not None)
    assert reader.documents == count
    return count


def plain(data: bytes) -> int:
    loader = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
    return sum(1 for doc in yaml.load_all(data, Loader=loader) if doc is not None)


def best(run: Callable[[bytes], int], data: bytes, repeat: int) -> tuple[float, int]:
    times: list[float] = []
    count = 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        count = run(data)
        times.append(time.perf_counter() - start)
    return min(times), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    data = stream(args.documents)
    mib = len(data) / 2**20
    if not yaml.__with_libyaml__:
        print("PyYAML has no libyaml here: both sides use the pure-Python parser")
    print(f"{args.documents} documents, {len(data) / args.documents / 1000:.2f} kB each, {mib:.2f} MiB")
    # Interleaved runs, best of each: the machine's background load hits both sides alike.
    plain_time, ours_time = float("inf"), float("inf")
    for _ in range(args.repeat):
        run_time, plain_count = best(plain, data, 1)
        plain_time = min(plain_time, run_time)
        run_time, ours_count = best(ours, data, 1)
        ours_time = min(ours_time, run_time)
    assert plain_count == ours_count == args.documents, (plain_count, ours_count)
    for label, seconds in (
        ("yaml.load_all(CSafeLoader)", plain_time),
        ("kubegap.manifests.Reader", ours_time),
    ):
        print(f"{label:28} {seconds * 1000:8.1f} ms  ({mib / seconds:.2f} MiB/s)")
    print(f"ratio: {ours_time / plain_time:.2f}x (target <= 1.30x)")
    hostile = bad_inputs()
    bad_time, _ = best(lambda data: len(list(Reader().read(["-"], io.BytesIO(data)))), hostile, args.repeat)
    label = f"bad-input set ({len(hostile) / 1024:.0f} KiB: alias bomb, 5,000-deep nesting, ...)"
    print(f"{label}: {bad_time * 1000:.1f} ms")


if __name__ == "__main__":
    main()

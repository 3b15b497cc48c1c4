"""How each kind bounds its run time and restarts failed runs (RULES.md §2 `checkpoint-interval`,
`restart-budget`): a table keyed by API group and kind."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubegap import raw
from kubegap.fieldpath import FieldPath, render

KUBEFLOW_JOBS = frozenset({"PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"})


@dataclass(frozen=True, slots=True)
class Restart:
    enabled: bool
    detail: str  # what was read, for the message
    path: FieldPath  # the deciding field, or its parent when unset


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0  # a malformed list is a finding, not a crash


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _job_restart(base: FieldPath) -> Callable[[Mapping[str, Any]], Restart]:
    def read(obj: Mapping[str, Any]) -> Restart:
        for field in ("backoffLimit", "backoffLimitPerIndex"):
            value = _int(raw.dig(obj, (*base, field)))
            if value is not None and value <= 0:
                return Restart(False, f"{render((*base, field))} is {value}", (*base, field))
        return Restart(True, "backoffLimit allows retries", base)

    return read


def _positive(*fields: FieldPath, unset_ok: bool = False) -> Callable[[Mapping[str, Any]], Restart]:
    def read(obj: Mapping[str, Any]) -> Restart:
        seen = []
        for field in fields:
            value = _int(raw.dig(obj, field))
            if value is None and unset_ok:
                return Restart(True, f"{render(field)} is unset (retries by default)", field[:-1])
            if value is not None and value > 0:
                return Restart(True, f"{render(field)} is {value}", field)
            seen.append(f"{render(field)} is {'unset' if value is None else value}")
        deciding = next((f for f in fields if raw.dig(obj, f) is not None), fields[0][:-1])
        return Restart(False, " and ".join(seen), deciding)

    return read


_RESTART: dict[tuple[str, str], Callable[[Mapping[str, Any]], Restart]] = {
    ("batch", "Job"): _job_restart(("spec",)),
    ("batch", "CronJob"): _job_restart(("spec", "jobTemplate", "spec")),
    ("jobset.x-k8s.io", "JobSet"): _positive(("spec", "failurePolicy", "maxRestarts")),
    ("batch.volcano.sh", "Job"): _positive(("spec", "maxRetry"), unset_ok=True),
    ("ray.io", "RayJob"): _positive(("spec", "backoffLimit")),
    **{
        ("kubeflow.org", kind): _positive(
            ("spec", "runPolicy", "backoffLimit"), ("spec", "elasticPolicy", "maxRestarts")
        )
        for kind in KUBEFLOW_JOBS
    },
}

# Where the run-time bound lives; several paths (JobSet's child Jobs) count only when all are set.
_DEADLINE: dict[tuple[str, str], Callable[[Mapping[str, Any]], list[FieldPath]]] = {
    ("batch", "Job"): lambda o: [("spec", "activeDeadlineSeconds")],
    ("batch", "CronJob"): lambda o: [("spec", "jobTemplate", "spec", "activeDeadlineSeconds")],
    ("trainer.kubeflow.org", "TrainJob"): lambda o: [("spec", "activeDeadlineSeconds")],
    ("kubeflow.org", "TrainJob"): lambda o: [("spec", "activeDeadlineSeconds")],
    ("ray.io", "RayJob"): lambda o: [("spec", "activeDeadlineSeconds")],
    ("jobset.x-k8s.io", "JobSet"): lambda o: [
        ("spec", "replicatedJobs", i, "template", "spec", "activeDeadlineSeconds")
        for i in range(_length(raw.dig(o, ("spec", "replicatedJobs"))))
    ],
    **{
        ("kubeflow.org", kind): (lambda o: [("spec", "runPolicy", "activeDeadlineSeconds")])
        for kind in KUBEFLOW_JOBS
    },
}


def restart(group: str, kind: str, obj: Mapping[str, Any]) -> Restart | None:
    """How failed runs restart; None where the kind has no such setting (not applicable)."""
    read = _RESTART.get((group, kind))
    return read(obj) if read else None


def deadline(group: str, kind: str, obj: Mapping[str, Any]) -> float | None:
    """The longest `activeDeadlineSeconds` of the run, in seconds; None when any part is unbounded."""
    read = _DEADLINE.get((group, kind))
    paths = read(obj) if read else []
    values = [_int(raw.dig(obj, p)) for p in paths]
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return float(max(v for v in values if v is not None))

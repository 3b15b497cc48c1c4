"""Evaluations of identical workloads, remembered by content.

A cluster holds many copies of one workload under other names: the pods of a Job, a ReplicaSet or a
DaemonSet (and the Jobs of a CronJob or a JobSet) differ in their names, uids, owners, nodes and status,
not in what kubegap reads. An evaluation depends only on what it reads, so the engine remembers the last
evaluations of objects a controller made (those with `ownerReferences`) by a digest of the rest, and gives
a remembered one again, told of the new object's reference, instead of evaluating it anew.

What the digest leaves out is what no workload fact reads (`tests/test_memo.py` evaluates every example
with each of these changed and expects the same results): the object's identity and bookkeeping in
`metadata`, its `status`, and where a Pod was placed (`spec.nodeName`, `spec.hostname`, which the
scheduler and the Job controller set per pod). An engine whose policies read the raw `object` never
remembers, since a policy may read any of those; nor are Nodes and DRA claims remembered (node facts read
the clock). The digest also holds the date, since an exemption can expire at midnight, and the ConfigMaps
the evaluation could read.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kubegap.findings import ObjectRef, moved_to

if TYPE_CHECKING:
    from kubegap.evaluate import Evaluation

CAPACITY = 256  # evaluations remembered: a few MB, the same at 10,000 objects as at 50,000
_IDENTITY = frozenset(
    {
        "name",
        "generateName",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
        "selfLink",
        "ownerReferences",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)
_PLACEMENT = frozenset({"nodeName", "hostname"})  # a Pod's, set per pod
_MAX_CONFIGMAPS = 8  # a context with more (lint's every ConfigMap of the input) is not worth a digest


def today() -> str:
    return datetime.datetime.now(datetime.UTC).date().isoformat()


class Memo:
    """The last `CAPACITY` evaluations by content digest; safe to share between threads."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[bytes, Evaluation] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def key(
        self, obj: Mapping[str, Any], configmaps: Mapping[tuple[str, str], Mapping[str, str]]
    ) -> bytes | None:
        """The digest of what an evaluation of `obj` reads; None where it is not remembered."""
        metadata = obj.get("metadata")
        # Only what a controller made (a Job's pods, a CronJob's Jobs) comes in copies; the digest of an
        # object written by hand would cost 0.1 ms per 10 KB for nothing.
        if not isinstance(metadata, Mapping) or not metadata.get("ownerReferences"):
            return None
        if len(configmaps) > _MAX_CONFIGMAPS:
            return None
        kept = {k: v for k, v in metadata.items() if k not in _IDENTITY}
        spec = obj.get("spec")
        if obj.get("kind") == "Pod" and isinstance(spec, Mapping) and not _PLACEMENT.isdisjoint(spec):
            spec = {k: v for k, v in spec.items() if k not in _PLACEMENT}
        rest = {k: v for k, v in obj.items() if k not in ("metadata", "spec", "status")}
        cms = sorted((f"{ns}/{name}", dict(data)) for (ns, name), data in configmaps.items())
        try:
            text = json.dumps([rest, kept, spec, cms, today()], default=repr)
        except (TypeError, ValueError, RecursionError):  # keys of mixed types, a cycle: evaluate it
            return None
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get(self, key: bytes, ref: ObjectRef) -> Evaluation | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            self.hits += 1
        if found.ref == ref:
            return found
        cost = replace(found.cost, ref=ref) if found.cost is not None else None
        return replace(found, ref=ref, results=moved_to(found.results, ref), cost=cost)

    def put(self, key: bytes, evaluation: Evaluation) -> None:
        with self._lock:
            self._kept[key] = evaluation
            if len(self._kept) > self.capacity:
                self._kept.popitem(last=False)

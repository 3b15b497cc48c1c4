"""Evaluations of identical workloads, remembered by content.

A cluster holds many copies of one workload under other names: the pods of a Job, a ReplicaSet or a
DaemonSet (and the Jobs of a CronJob or a JobSet) differ in their names, uids, owners, nodes and status,
not in what kubegap reads; one chart installed in many namespaces differs in its namespace too. An
evaluation depends only on what it reads, so the engine remembers its last evaluations by a digest of the
rest, and gives a remembered one again, told of the new object's reference, instead of evaluating anew.
Every engine remembers objects a controller made (those with `ownerReferences`); the audit, which reads
whole clusters, remembers every workload (`Memo(unowned=True)`).

What the digest leaves out is what no workload fact reads (`tests/test_memo.py` evaluates every example
with each of these changed and expects the same results): the object's identity and bookkeeping in
`metadata`, its `status`, and where a Pod was placed (`spec.nodeName`, `spec.hostname`, which the
scheduler and the Job controller set per pod). Its namespace is read only to find the ConfigMaps its
environment names (`configMapRef`, `configMapKeyRef`), so it is left out unless the object names one. An
engine whose policies read the raw `object` never remembers, since a policy may read any of those; nor are
Nodes and DRA claims remembered (node facts read the clock). The digest also holds the date, since an
exemption can expire at midnight, and the ConfigMaps the evaluation could read.
"""

from __future__ import annotations

import datetime
import hashlib
import marshal
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from kubegap import raw
from kubegap.findings import ObjectRef, moved_to
from kubegap.records import changed

if TYPE_CHECKING:
    from kubegap.evaluate import Evaluation

CAPACITY: Final = 256  # evaluations remembered: a few MB, the same at 10,000 objects as at 50,000
_IDENTITY: Final = frozenset(
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
_PLACEMENT: Final = frozenset({"nodeName", "hostname"})  # a Pod's, set per pod
# What begins both keys by which an environment names a ConfigMap (`configMapRef`, `configMapKeyRef`,
# kubegap.facts.env): a digest without it reads the same in every namespace. Any other text holding it
# only costs a miss.
_NAMES_CONFIGMAP: Final = b"configMap"
# What the digest hashes: marshal's version 2 writes each value by its type and content, with no
# references between equal objects (version 3 on writes those by reference count), so equal content
# gives equal bytes. It takes a sixth of the time `json.dumps` took (2 against 12 µs for a Job).
_MARSHAL: Final = 2
_MAX_CONFIGMAPS: Final = 8  # a context with more (lint's every ConfigMap of the input) is not worth a digest


def today() -> str:
    """The UTC date, made again only when the day changes (a Unix day is 86,400 seconds exactly)."""
    global _today
    now = time.time()
    day = int(now // 86400)
    if _today[0] != day:
        _today = (day, datetime.datetime.fromtimestamp(now, datetime.UTC).date().isoformat())
    return _today[1]


_today = (-1, "")


class Memo:
    """The last `CAPACITY` evaluations by content digest; safe to share between threads."""

    def __init__(self, capacity: int = CAPACITY, unowned: bool = False) -> None:
        self.capacity = capacity
        # Also objects no controller made. Off by default: the digest costs about 0.1 ms per 10 KB, and
        # what lint and the webhook see by hand rarely comes twice; an audit sees charts and pipelines'
        # copies across namespaces.
        self.unowned = unowned
        self._kept: OrderedDict[bytes, Evaluation] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def key(
        self, obj: Mapping[Any, Any], configmaps: Mapping[tuple[str, str], Mapping[str, str]]
    ) -> bytes | None:
        """The digest of what an evaluation of `obj` reads; None where it is not remembered."""
        metadata = obj.get("metadata")
        if not raw.is_mapping(metadata) or not (self.unowned or metadata.get("ownerReferences")):
            return None
        if len(configmaps) > _MAX_CONFIGMAPS:
            return None
        kept = {k: v for k, v in metadata.items() if k not in _IDENTITY and k != "namespace"}
        spec = obj.get("spec")
        if obj.get("kind") == "Pod" and raw.is_mapping(spec) and not _PLACEMENT.isdisjoint(spec):
            spec = {k: v for k, v in spec.items() if k not in _PLACEMENT}
        rest = {k: v for k, v in obj.items() if k not in ("metadata", "spec", "status")}
        cms = sorted((f"{ns}/{name}", dict(data)) for (ns, name), data in configmaps.items())
        try:
            data = marshal.dumps([rest, kept, spec, cms, today()], _MARSHAL)
            if _NAMES_CONFIGMAP in data:
                data += marshal.dumps(metadata.get("namespace"), _MARSHAL)
        except (TypeError, ValueError, RecursionError):  # keys of mixed types, a cycle, depth: evaluate it
            return None
        return hashlib.blake2b(data, digest_size=16).digest()

    def get(self, key: bytes, ref: ObjectRef) -> Evaluation | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            self.hits += 1
        if found.ref == ref:
            return found
        cost = changed(found.cost, ref=ref) if found.cost is not None else None
        return changed(found, ref=ref, results=moved_to(found.results, ref), cost=cost)

    def put(self, key: bytes, evaluation: Evaluation) -> None:
        with self._lock:
            self._kept[key] = evaluation
            if len(self._kept) > self.capacity:
                self._kept.popitem(last=False)

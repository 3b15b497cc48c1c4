"""The facts contract: every fact a policy can read, per scope, with its type, unit and meaning — and the
knob settings of the catalogue. This is the one place a fact or a setting is declared.

- A new fact: add a `fact(...)` to the record of its scope below (nested records for nested keys), then
  regenerate the reference: `python -m kubegap.facts.reference > docs/facts.md`.
- A new knob setting: add a `Setting` to `SETTINGS`; the knob catalogue schema takes its names from there.

Policies are checked against it when they load (`kubegap.facts.reads`): an expression that reads a fact
not declared here is refused with the nearest declared name. The bundled examples' gathered facts are
checked against it by tests/test_contract.py: no undeclared key, no wrong type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubegap.facts.declare import BOOL, DOUBLE, INT, STRING, ListOf, MapOf, Record, extend, fact, record

# Shared shapes.
WHERE = record(
    "a place in the object",
    fact("source", STRING, "what was read: the flag, variable or annotation and its value"),
    fact("path", STRING, "the field path it was read at"),
)
DURATION = record(
    "a duration",
    fact("seconds", DOUBLE, "the duration", "s"),
    fact("text", STRING, "the duration as people write it (`20m`), for messages"),
    *WHERE.fields,
)
_RESOURCE = record(
    "an extended resource",
    fact("name", STRING, "the resource name, e.g. nvidia.com/gpu"),
    fact("capacity", INT, "status.capacity (0 when absent or unreadable)", "devices"),
    fact("allocatable", INT, "status.allocatable (0 when absent or unreadable)", "devices"),
)

CHECKPOINT = record(
    "checkpoint facts",
    fact(
        "interval", DURATION, "the longest checkpoint interval of the accelerator containers", optional=True
    ),
    fact(
        "steps",
        record(
            "a step count",
            fact("steps", INT, "the longest step-based interval", "steps"),
            *WHERE.fields,
        ),
        "a step-based interval with no declared step time to turn it into time",
        optional=True,
    ),
    fact("disabled", WHERE, "a knob that switches checkpointing off", optional=True),
    fact(
        "unbounded",
        WHERE,
        "checkpointing on a schedule no time bound follows from (per epoch)",
        optional=True,
    ),
    fact("saveTime", DURATION, "the declared time one blocking checkpoint save takes", optional=True),
    fact(
        "trainerPath",
        STRING,
        "the first accelerator container, where a missing interval belongs",
        optional=True,
    ),
    fact("unresolvedText", STRING, "what the accelerator containers could not see, `; `-joined"),
)

# RULES.md v3: torchrun restarts and rendezvous (kubegap/facts/torchrun.py)
_TORCHRUN_OPTION = record(
    "a torchrun option",
    fact("value", STRING, "its value; absent when it cannot be seen", optional=True),
    fact("source", STRING, "the flag or PET_* variable and its value"),
    fact("path", STRING, "where it is set (the container's path for a variable)"),
    fact("fromFlag", BOOL, "set on the command line (a flag wins over PET_* and elasticPolicy)"),
)
TORCHRUN_CONTAINER = record(
    "torchrun's settings in one container",
    fact("standalone", BOOL, "--standalone: a single-node rendezvous"),
    fact("maxRestarts", _TORCHRUN_OPTION, "--max-restarts / PET_MAX_RESTARTS", optional=True),
    fact("backend", _TORCHRUN_OPTION, "--rdzv-backend / PET_RDZV_BACKEND", optional=True),
    fact("conf", _TORCHRUN_OPTION, "--rdzv-conf / PET_RDZV_CONF", optional=True),
    fact("nnodes", _TORCHRUN_OPTION, "--nnodes / PET_NNODES", optional=True),
)
TORCHRUN = record(
    "torchrun restarts over the training containers it starts",
    fact("inPlace", BOOL, "some torchrun restarts its workers in place (max restarts above 0, or unseen)"),
    fact("restartsReadable", BOOL, "every max-restarts value can be read"),
    fact("restartsSource", STRING, "where the (first in-place) max restarts come from"),
    fact(
        "waitsForLostNode",
        BOOL,
        "in-place restarts with a c10d/etcd rendezvous of a fixed node count on a multi-node workload",
    ),
    fact("joinTimeoutReadable", BOOL, "the join timeout can be read", optional=True),
    fact(
        "joinTimeoutSeconds",
        DOUBLE,
        "the longest rendezvous join timeout of those that wait",
        "s",
        optional=True,
    ),
    fact("joinTimeoutText", STRING, "joinTimeoutSeconds as people write it", optional=True),
    fact("joinTimeoutSource", STRING, "where the join timeout comes from, or the default", optional=True),
    fact("joinTimeoutPath", STRING, "the field that sets it", optional=True),
)
# RULES.md v3: disruption-budget (kubegap/facts/disruption.py)
DISRUPTIONS = record(
    "whether disruptions count against the restart budget",
    fact("ignored", BOOL, "disrupted pods (condition DisruptionTarget) use up no restart budget"),
    fact("detail", STRING, "what was read, for the message"),
    fact("path", STRING, "the deciding field"),
)
# RULES.md v3: nccl-transport (kubegap/facts/transport.py)
_WHOLE_NUMBER = (
    fact("text", STRING, "the value as written"),
    fact("readable", BOOL, "a whole number"),
    fact("value", INT, "the number (0 when not readable)"),
)
IB_TRANSPORT = record(
    "NCCL's InfiniBand transport settings",
    fact(
        "timeout",
        record(
            "NCCL_IB_TIMEOUT",
            *_WHOLE_NUMBER,
            fact("infinite", BOOL, "0 or 32 and above: no acknowledgement timeout"),
            fact("attemptText", STRING, "one wait, 4.096 µs · 2^value", optional=True),
            fact(
                "windowText",
                STRING,
                "the wait times the retry count: the time before an error",
                optional=True,
            ),
        ),
        "NCCL_IB_TIMEOUT, when set with a visible value",
        optional=True,
    ),
    fact(
        "retryCount",
        record("NCCL_IB_RETRY_CNT", *_WHOLE_NUMBER),
        "NCCL_IB_RETRY_CNT, when set with a visible value",
        optional=True,
    ),
)
# RULES.md v3: nccl-flight-recorder (kubegap/facts/recorder.py)
FLIGHT_RECORDER = record(
    "PyTorch's NCCL flight recorder",
    fact("on", BOOL, "the buffer size is above 0 and dump-on-timeout is on, both written"),
    fact("problem", STRING, "why it is not on, '' when it is"),
    fact("blockingWait", STRING, "the blocking-wait variable set to 1 or true, '' when none"),
    fact("file", STRING, "the dump file prefix ('' when it cannot be seen)"),
    fact("fileSource", STRING, "the variable that sets it, or `default`"),
    fact("fileWhere", STRING, "where the prefix lives: a volume, the container's filesystem, or unresolved"),
    fact("fileKept", BOOL, "on a writable volume that outlives the pod"),
    fact("fileUnresolved", BOOL, "kubegap cannot place the prefix (unseen or relative)"),
)

# RULES.md v3: checkpoint-recovery (kubegap/facts/persistence.py)
_SWITCH = record(
    "a switch",
    fact("on", BOOL, "switched on"),
    *WHERE.fields,
)
_STORAGE = record(
    "where checkpoints are written",
    fact("kind", STRING, "persistent, object-store, lost or unresolved"),
    fact("text", STRING, "the volume or storage, or why it cannot be placed"),
    *WHERE.fields,
)
_RESUME = record(
    "what a restart loads",
    fact("state", STRING, "latest (its own directory), elsewhere (another directory) or missing"),
    *WHERE.fields,
)
CONTAINER_RECOVERY = record(
    "a container's checkpoint recovery settings",
    fact("storage", _STORAGE, "the checkpoint directory's place", optional=True),
    fact("resume", _RESUME, "the resume setting, where the framework has one", optional=True),
    fact("async", _SWITCH, "asynchronous saves", optional=True),
    fact("onSignal", _SWITCH, "a save on SIGTERM", optional=True),
)
RECOVERY = extend(
    CONTAINER_RECOVERY,
    "checkpoint recovery of the training containers: the least safe of each",
    fact(
        "grace",
        DURATION,
        "the shortest terminationGracePeriodSeconds of training pods, with onSignal",
        optional=True,
    ),
    fact("graceUnresolved", STRING, "why a grace period cannot be read, with onSignal", optional=True),
)

WORKLOAD = record(
    "workload facts",
    fact("kind", STRING, "the object's kind"),
    fact("group", STRING, "the object's API group, empty for the core group"),
    fact("totalGpus", INT, "GPUs of all pods at their replica counts", "GPUs"),
    fact("gpuPods", INT, "pods that ask for a GPU", "pods"),
    fact("totalAccelerators", INT, "accelerators (GPUs included) of all pods", "devices"),
    fact("purpose", STRING, "training, benchmark, diagnostic, interactive or inference (RULES.md v2)"),
    fact("training", BOOL, "purpose is training"),
    fact("gpuWork", BOOL, "purpose is training, benchmark or diagnostic: the fast network path matters"),
    fact("distributed", BOOL, "more than one GPU in all"),
    fact("multiNode", BOOL, "more than one GPU pod"),
    fact("deadlineSeconds", DOUBLE, "the run-time bound (activeDeadlineSeconds)", "s", optional=True),
    fact(
        "restart",
        record(
            "restart facts",
            fact("enabled", BOOL, "failed runs are restarted"),
            fact("detail", STRING, "what was read, for the message"),
            fact("path", STRING, "the deciding field, or its parent when unset"),
        ),
        "how the kind restarts failed runs; absent for kinds without such a setting",
        optional=True,
    ),
    fact(
        "checkpoint", CHECKPOINT, "checkpoint facts of the accelerator containers, judged once per workload"
    ),
    fact("expectedRuntime", DURATION, "the declared run time (docs/cost-model.md)", optional=True),
    fact("torchrun", TORCHRUN, "torchrun's restarts and rendezvous; absent when no torchrun", optional=True),
    fact("disruptions", DISRUPTIONS, "Job, CronJob and JobSet only", optional=True),
    fact("recovery", RECOVERY, "checkpoint recovery (RULES.md v3)"),
)

TEMPLATE = record(
    "pod template facts",
    fact("role", STRING, "the replica, task or group name (Worker, head, Job)"),
    fact("path", STRING, "the pod template's field path"),
    fact("replicas", INT, "pods made from the template", "pods"),
    fact(
        "podLevel", BOOL, "a real pod template (false for a TrainJob's trainer, whose pod is the runtime's)"
    ),
    fact("gpusPerPod", INT, "GPUs per pod", "GPUs"),
    fact("acceleratorsPerPod", INT, "accelerators per pod, GPUs included", "devices"),
    fact("annotations", MapOf(STRING, "annotation keys"), "the template's annotations"),
    fact("resourceNames", ListOf(STRING), "extended and standard resource names its containers ask for"),
    fact("resourceNamesText", STRING, "resourceNames one per line, for `globs` parameters"),
    fact("hostNetwork", BOOL, "spec.hostNetwork is true"),
    fact("fabricDevices", BOOL, "a privileged container mounts the host's /dev/infiniband"),
    fact("resourceClaims", INT, "entries of spec.resourceClaims (DRA)", "claims"),
    fact("blanketToleration", STRING, "path of a toleration of every taint (Exists, no key), '' when none"),
    fact("toleratedKeys", ListOf(STRING), "taint keys tolerated with an effect that keeps pods away, sorted"),
    fact("toleratedKeysText", STRING, "toleratedKeys one per line, for `globs` parameters"),
    fact("toleratedKeyPaths", MapOf(STRING, "taint keys"), "the first toleration of each key (field path)"),
)

CONTAINER = record(
    "container facts",
    fact("name", STRING, "the container's name"),
    fact("path", STRING, "the container's field path"),
    fact("gpus", INT, "GPUs it asks for (limit, else request)", "GPUs"),
    fact("accelerators", INT, "accelerators it asks for, GPUs included", "devices"),
    fact(
        "env",
        MapOf(STRING, "variable names"),
        "the resolved environment; variables kubegap cannot read are left out",
    ),
    fact("envNames", ListOf(STRING), "every variable name, readable or not, sorted"),
    fact("envPaths", MapOf(STRING, "variable names"), "where each variable is set (field path)"),
    fact("envNamesText", STRING, "envNames one per line, for `globs` parameters"),
    fact("unresolved", ListOf(STRING), "sources kubegap cannot see that may set a value"),
    fact("unresolvedText", STRING, "unresolved, `; `-joined"),
    fact("startupProbe", BOOL, "a startup probe with a handler is set"),
    fact(
        "framework",
        record(
            "a launcher or framework",
            fact("name", STRING, "its name in the knob catalogue"),
            fact("defaultTimeout", DOUBLE, "its documented collective timeout", "s", optional=True),
            fact("defaultTimeoutText", STRING, "defaultTimeout as people write it", optional=True),
        ),
        "the launcher or framework recognised from the command line",
        optional=True,
    ),
    fact(
        "collectiveTimeout",
        extend(
            DURATION, "a duration", fact("default", BOOL, "the framework's default applies", optional=True)
        ),
        "the longest collective timeout set, else the recognised framework's default",
        optional=True,
    ),
    fact(
        "liveness",
        record(
            "a liveness probe",
            fact("windowSeconds", DOUBLE, "periodSeconds * failureThreshold + timeoutSeconds", "s"),
            fact("windowText", STRING, "windowSeconds as people write it"),
            fact("path", STRING, "the probe's field path"),
        ),
        "the liveness probe, when it has a handler",
        optional=True,
    ),
    fact("ibTransport", IB_TRANSPORT, "NCCL's InfiniBand transport settings (RULES.md v3)"),
    fact("flightRecorder", FLIGHT_RECORDER, "the NCCL flight recorder (RULES.md v3)"),
    fact(
        "torchrun", TORCHRUN_CONTAINER, "torchrun's own settings, when it starts the container", optional=True
    ),
    fact("recovery", CONTAINER_RECOVERY, "checkpoint recovery settings (RULES.md v3)", optional=True),
    fact(
        "ibHca",
        record(
            "NCCL_IB_HCA",
            fact("count", INT, "HCAs it lets NCCL use", "HCAs"),
            fact("text", STRING, "the value as written"),
            fact("path", STRING, "where it is set"),
        ),
        "NCCL_IB_HCA, when it is an exact or numbered list (RULES.md v3 gpu-nic-rails)",
        optional=True,
    ),
)

NODE = record(
    "node facts",
    fact("schedulable", BOOL, "not cordoned and no NoSchedule or NoExecute taint"),
    fact("gpuCapacity", INT, "GPUs in status.capacity", "GPUs"),
    fact("gpuResources", ListOf(_RESOURCE), "the GPU resources among `resources`"),
    fact("resources", ListOf(_RESOURCE), "extended resources (names with a `/`), sorted by name"),
    fact(
        "conditions",
        ListOf(
            record(
                "a condition",
                fact("type", STRING, "condition type"),
                fact("status", STRING, "True, False or Unknown"),
            )
        ),
        "status.conditions",
    ),
    fact("marks", ListOf(STRING), "every label, then every annotation, as key=value (line breaks as spaces)"),
    fact(
        "deepChecks",
        ListOf(
            record(
                "a timestamped deep-check result",
                fact("label", STRING, "the label that holds it"),
                fact("result", STRING, "the result word: PASS, ERR, …"),
                fact("ran", STRING, "when the check ran, YYYY-MM-DD HH:MM UTC"),
                fact("ageSeconds", DOUBLE, "its age when the facts were gathered", "s"),
            )
        ),
        "labels whose value is a timed result (IBM Autopilot's RESULT_YYYY-MM-DD_HH.MM.SSUTC[_tests])",
    ),
)
NODE_OBJECT = record(
    "facts of a Node",
    fact("kind", STRING, "Node"),
    fact("group", STRING, "empty: the core group"),
)

# RULES.md v3: gpu-nic-alignment (kubegap/facts/claim.py)
CLAIM = record(
    "DRA claim facts",
    fact("kind", STRING, "ResourceClaim or ResourceClaimTemplate"),
    fact("path", STRING, "the field path of the claim's devices"),
    fact(
        "requests",
        ListOf(
            record(
                "a device request",
                fact("name", STRING, "the request's name"),
                fact("classesText", STRING, "the device classes it may be served from, one per line"),
                fact(
                    "alignedClassesText",
                    STRING,
                    "the classes of the requests a pcieRoot constraint holds it with, one per line",
                ),
                fact("path", STRING, "the request's field path"),
            )
        ),
        "spec.devices.requests, in order",
    ),
)
CLAIM_OBJECT = record(
    "facts of a DRA claim",
    fact("kind", STRING, "ResourceClaim or ResourceClaimTemplate"),
    fact("group", STRING, "resource.k8s.io"),
)

# Cluster scopes (facts/cluster.py): judged by the audit over its Node and Pod lists (RULES.md §2 v3).
CLUSTER_NODE = extend(
    NODE,
    "a GPU node with the pods bound to it",
    fact("name", STRING, "the node's name"),
    fact("images", ListOf(STRING), "container images of the pods bound to it that have not finished, sorted"),
)
POOL = record(
    "a node pool: the GPU nodes sharing a value of the pool label",
    fact("name", STRING, "`<label>=<value>`, or `<label> unset`"),
    fact("nodes", INT, "GPU nodes in the pool", "nodes"),
    fact("spares", INT, "schedulable nodes with no node-policy failure and no unfinished GPU pod", "nodes"),
    fact("spareNodes", ListOf(STRING), "the first 10 spares' names, sorted"),
    fact("busy", INT, "nodes running an unfinished GPU pod", "nodes"),
    fact("unhealthy", INT, "nodes unschedulable or failing a node policy", "nodes"),
    fact("largestGang", INT, "the most nodes of the pool one gang's GPU pods are bound to", "nodes"),
    fact("largestGangName", STRING, "that gang, `namespace/name` (empty when none)"),
)
POOL_OBJECT = record(
    "facts of a node pool",
    fact("kind", STRING, "NodePool"),
    fact("group", STRING, "kubegap.dev"),
)

# The CEL variables each scope's expressions see, beside `object`, `params`, `paramsText` and `variables`.
SCOPES: Mapping[str, Mapping[str, Record]] = {
    "workload": {"facts": WORKLOAD},
    "template": {"facts": WORKLOAD, "template": TEMPLATE},
    "container": {"facts": WORKLOAD, "template": TEMPLATE, "container": CONTAINER},
    "node": {"facts": NODE_OBJECT, "node": NODE},
    "claim": {"facts": CLAIM_OBJECT, "claim": CLAIM},
    "cluster-node": {"facts": NODE_OBJECT, "node": CLUSTER_NODE},
    "pool": {"facts": POOL_OBJECT, "pool": POOL},
}


@dataclass(frozen=True, slots=True)
class Setting:
    """A knob setting of the catalogue (`setting:` in policies/knobs.yaml)."""

    name: str
    meaning: str
    fact: str | None  # where its value shows, as CEL reads it


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "collectiveTimeout",
        "how long a collective may hang before the rank is torn down",
        "container.collectiveTimeout",
    ),
    Setting("checkpointInterval", "time between checkpoints", "facts.checkpoint.interval"),
    Setting(
        "checkpointSteps", "steps between checkpoints (times stepTime: an interval)", "facts.checkpoint.steps"
    ),
    Setting("checkpointDisabled", "a value that switches checkpointing off", "facts.checkpoint.disabled"),
    Setting(
        "checkpointUnbounded",
        "checkpoints at a point no time bound follows from (per epoch)",
        "facts.checkpoint.unbounded",
    ),
    Setting("stepTime", "how long one training step takes, to turn steps into time", None),
    Setting("checkpointSaveTime", "how long one blocking checkpoint save takes", "facts.checkpoint.saveTime"),
    Setting("expectedRuntime", "how long the run is expected to take", "facts.expectedRuntime"),
    Setting("checkpointDir", "where checkpoints are written (a path)", "facts.recovery.storage"),
    Setting("checkpointLoad", "where a restart loads its checkpoint from (a path)", "facts.recovery.resume"),
    Setting("checkpointResume", "a switch: a restart loads the latest checkpoint", "facts.recovery.resume"),
    Setting("checkpointAsync", "a switch: saves do not block training", "facts.recovery.async"),
    Setting("checkpointOnSignal", "a switch: a checkpoint is saved on SIGTERM", "facts.recovery.onSignal"),
)


def setting_names() -> list[str]:
    return [s.name for s in SETTINGS]

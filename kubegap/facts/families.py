"""Declared shapes of the fact families a workload's scopes share (durations, checkpoint, torchrun,
transport, flight recorder, recovery), part of the facts contract (`kubegap.facts.contract`)."""

from __future__ import annotations

from kubegap.facts.declare import BOOL, DOUBLE, INT, STRING, extend, fact, record

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

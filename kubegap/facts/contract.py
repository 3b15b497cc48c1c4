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
)
NODE_OBJECT = record(
    "facts of a Node",
    fact("kind", STRING, "Node"),
    fact("group", STRING, "empty: the core group"),
)

# The CEL variables each scope's expressions see, beside `object`, `params`, `paramsText` and `variables`.
SCOPES: Mapping[str, Mapping[str, Record]] = {
    "workload": {"facts": WORKLOAD},
    "template": {"facts": WORKLOAD, "template": TEMPLATE},
    "container": {"facts": WORKLOAD, "template": TEMPLATE, "container": CONTAINER},
    "node": {"facts": NODE_OBJECT, "node": NODE},
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
)


def setting_names() -> list[str]:
    return [s.name for s in SETTINGS]

"""The facts contract: every fact a policy can read, per scope, with its type, unit and meaning — and the
knob settings of the catalogue. This is the one place a fact or a setting is declared.

- A new fact: add a `fact(...)` to the record of its scope (the workload scopes below, the shared families in
  `kubegap.facts.families`, Nodes, claims and cluster units in `kubegap.facts.objects`; nested records for
  nested keys), then regenerate the reference: `python -m kubegap.facts.reference > docs/facts.md`.
- A new knob setting: add a `Setting` to `SETTINGS` in `kubegap.facts.settings`; the knob catalogue schema
  takes its names from there.

Policies are checked against it when they load (`kubegap.facts.reads`): an expression that reads a fact
not declared here is refused with the nearest declared name. The bundled examples' gathered facts are
checked against it by tests/test_contract.py: no undeclared key, no wrong type.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubegap.facts.declare import BOOL, DOUBLE, INT, STRING, ListOf, MapOf, Record, extend, fact, record
from kubegap.facts.families import (
    CHECKPOINT,
    CONTAINER_RECOVERY,
    DISRUPTIONS,
    DURATION,
    FLIGHT_RECORDER,
    IB_TRANSPORT,
    RECOVERY,
    TORCHRUN,
    TORCHRUN_CONTAINER,
)
from kubegap.facts.objects import CLAIM, CLAIM_OBJECT, CLUSTER_NODE, NODE, NODE_OBJECT, POOL, POOL_OBJECT
from kubegap.facts.settings import SETTINGS, Setting, setting_names

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
    fact(
        "resourceNames",
        ListOf(STRING),
        "extended and standard resource names its containers ask for",
        globbed=True,
    ),
    fact("resourceNamesText", STRING, "resourceNames one per line, for `globs` parameters"),
    fact(
        "resources",
        ListOf(
            record(
                "an extended resource the pod requests",
                fact("name", STRING, "the resource name (with `/`), one of resourceNames"),
                fact("count", INT, "the pod's count, summed over its containers (not 0)", "devices"),
            )
        ),
        "the pod's extended resources, largest count first, then by name",
    ),
    fact("unreadableResources", ListOf(STRING), "extended resources whose count is not a whole number"),
    fact(
        "nics",
        record(
            "NICs the pod's annotations attach",
            fact("multus", INT, "entries of k8s.v1.cni.cncf.io/networks", "interfaces", optional=True),
            fact(
                "gke", INT, "non-default entries of networking.gke.io/interfaces", "interfaces", optional=True
            ),
            fact("unresolved", ListOf(STRING), "annotations kubegap cannot read, and why"),
        ),
        "Multus and GKE multi-network attachments (RULES.md v3 gpu-nic-rails)",
    ),
    fact(
        "pinnedLabels",
        MapOf(STRING, "node label keys"),
        "node labels with one possible value: nodeSelector, or `In` one value in every required"
        " nodeAffinity term",
    ),
    fact("ibHcaCounted", BOOL, "a container's NCCL_IB_HCA can be counted (has container.ibHca)"),
    fact("hostNetwork", BOOL, "spec.hostNetwork is true"),
    fact("fabricDevices", BOOL, "a privileged container mounts the host's /dev/infiniband"),
    fact("resourceClaims", INT, "entries of spec.resourceClaims (DRA)", "claims"),
    fact("blanketToleration", STRING, "path of a toleration of every taint (Exists, no key), '' when none"),
    fact(
        "toleratedKeys",
        ListOf(STRING),
        "taint keys tolerated with an effect that keeps pods away, sorted",
        globbed=True,
    ),
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
    fact("envNames", ListOf(STRING), "every variable name, readable or not, sorted", globbed=True),
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

# Per scope, the (variable, field) name lists a `globs` parameter is matched against (kubegap.globbed).
GLOBBED: Mapping[str, tuple[tuple[str, str], ...]] = {
    scope: tuple((name, f.name) for name, kind in variables.items() for f in kind.fields if f.globbed)
    for scope, variables in SCOPES.items()
}

__all__ = [
    "CLAIM",
    "CLAIM_OBJECT",
    "CLUSTER_NODE",
    "CONTAINER",
    "GLOBBED",
    "NODE",
    "NODE_OBJECT",
    "POOL",
    "POOL_OBJECT",
    "SCOPES",
    "SETTINGS",
    "TEMPLATE",
    "WORKLOAD",
    "Setting",
    "setting_names",
]

"""The kinds kubegap reads: one row per kind holds how it is found in a cluster (`KindInfo`), how its facts
are gathered (its pod templates, or a Node's own facts), whether it serves, how it restarts failed runs
and bounds its run time, and what docs/kinds.md says of it.

Adding a kind is one row here (plus its template reader in `kubegap.workloads` if none fits, and its entry
in the chart's `kubegap.kinds` list, which tests/test_kinds.py checks); then regenerate the reference:
`python -m kubegap.kinds > docs/kinds.md`. Kinds are matched by API group and kind, whatever the version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from kubegap import facts, raw, workloads
from kubegap.facts import claim, disruption, env, lifecycle
from kubegap.facts.knobs import Catalogue
from kubegap.fieldpath import FieldPath, render
from kubegap.workloads import KUBEFLOW_REPLICA_SPECS, KindInfo, Workload

# How an object of the kind becomes facts: (row, object, knob catalogue, ConfigMaps) -> facts.
Gather = Callable[["Kind", Mapping[str, Any], Catalogue, env.ConfigMaps], facts.ObjectFacts]


def _as_workload(
    row: Kind, obj: Mapping[str, Any], catalogue: Catalogue, configmaps: env.ConfigMaps
) -> facts.ObjectFacts:
    return facts.gather(obj, row.workload(obj), catalogue, configmaps)


def _as_node(
    row: Kind, obj: Mapping[str, Any], catalogue: Catalogue, configmaps: env.ConfigMaps
) -> facts.ObjectFacts:
    return facts.gather_node(obj, catalogue)


def _as_claim(
    row: Kind, obj: Mapping[str, Any], catalogue: Catalogue, configmaps: env.ConfigMaps
) -> facts.ObjectFacts:
    return claim.gather_claim(obj)


@dataclass(slots=True, unsafe_hash=True)
class Kind:
    info: KindInfo
    templates: workloads.Extract | None  # None: not a workload (a Node, a DRA claim)
    gather: Gather = _as_workload
    serving: bool = False  # apps/v1 kinds and LeaderWorkerSet: not training unless labelled so
    admitted: bool = True  # the chart's webhook intercepts it (Nodes: audit and lint only)
    restart: lifecycle.RestartReader | None = None
    deadline: tuple[FieldPath, ...] = ()  # activeDeadlineSeconds; `*`: every item of a list, all set
    disruptions: disruption.DisruptionReader | None = None  # Job, CronJob, JobSet: see facts/disruption
    roles: str = ""  # docs/kinds.md: the roles and their template paths
    pods: str = ""  # docs/kinds.md: pods per role
    upstream: str = ""  # docs/kinds.md: the upstream API types the paths were checked against

    def workload(self, obj: Mapping[str, Any]) -> Workload:
        assert self.templates is not None  # rows without templates gather their own facts
        info = self.info
        templates = self.templates(obj)
        return Workload(
            info.group, info.kind, self.serving, templates, self.restart, self.deadline, self.disruptions
        )


def _kind(api: str, plural: str, templates: workloads.Extract | None, **rest: Any) -> Kind:
    """One row; `api` is "<group>/<kind>@<version>[,<version>…]" with the group empty for core."""
    group_kind, _, versions = api.partition("@")
    group, _, kind = group_kind.rpartition("/")
    namespaced = rest.pop("namespaced", True)
    return Kind(KindInfo(group, kind, plural, namespaced, tuple(versions.split(","))), templates, **rest)


def _kubeflow(kind: str, versions: str, upstream: str, **rest: Any) -> Kind:
    field = KUBEFLOW_REPLICA_SPECS[kind]
    restart = rest.pop("restart", None) or lifecycle.kubeflow(kind, field)
    pods = "`replicas`, default 1; for the `Worker` role, `spec.elasticPolicy.maxReplicas` if larger"
    return _kind(
        f"kubeflow.org/{kind}@{versions}",
        f"{kind.lower()}s",
        partial(workloads.replica_map, field),
        restart=restart,
        deadline=(("spec", "runPolicy", "activeDeadlineSeconds"),),
        roles=f"each key of `spec.{field}` (`….<Role>.template`), in the order written",
        pods=rest.pop("pods", pods),
        upstream=upstream,
        **rest,
    )


_TRAINING_OPERATOR = (
    "kubeflow/training-operator `pkg/apis/kubeflow.org/v1/{}_types.go`, `common_types.go`, "
    "`defaulting_utils.go`"
)
_MPI_OPERATOR = (
    "kubeflow/mpi-operator `pkg/apis/kubeflow/v2beta1/types.go`, `default.go`; training-operator "
    "`mpi_types.go`"
)
_DEADLINE = (("spec", "activeDeadlineSeconds"),)
_CRON_JOB = ("spec", "jobTemplate", "spec")
_JOBSET_JOBS = ("spec", "replicatedJobs")
_RUNTIME_JOBS = ("spec", "template", *_JOBSET_JOBS)
_REPLICAS = ("spec", "replicas")
_JOBSET_DEADLINE = ((*_JOBSET_JOBS, "*", "template", "spec", "activeDeadlineSeconds"),)
_JOBSET_ROLES = "`replicatedJobs[i].name` (`spec.replicatedJobs[i].template.spec.template`)"
_TIMES = "\N{MULTIPLICATION SIGN}"  # for docs/kinds.md
_JOBSET_PODS = f"`replicas` (default 1) {_TIMES} `template.spec.parallelism` (default 1)"
_TRAIN_JOB_ROLES = (
    "`trainer` (`spec.trainer`, read as one container named `trainer`: `image`, `command`, `args`, `env`, "
    "and `resourcesPerNode` as its `resources`)"
)
_RAY_ROLES = "`head` (`spec.headGroupSpec.template`); `workerGroupSpecs[i].groupName` (`….template`)"
_RAY_PODS = "head 1; workers `replicas`, else `minReplicas`, else 1"
_APPS = "Kubernetes apps API"
_DRA = "kubernetes/api `resource/v1/types.go`, `resource/v1beta1/types.go`"
_LWS_ROLES = "`leader` (`spec.leaderWorkerTemplate.leaderTemplate`, if set); `worker` (`…workerTemplate`)"
_LWS_PODS = (
    f"leader: `spec.replicas` (default 1); worker: `spec.replicas` {_TIMES} (`size` - 1), or {_TIMES} "
    "`size` without a leaderTemplate (`size` default 1)"
)

KINDS: tuple[Kind, ...] = (
    _kind("/Pod@v1", "pods", workloads.pod, roles="`Pod` (the object itself)", pods="1",
          upstream="Kubernetes core API"),
    _kind("batch/Job@v1", "jobs", workloads.spec_template("Job", ("spec", "parallelism")),
          restart=lifecycle.job(("spec",)), deadline=_DEADLINE,
          disruptions=disruption.job(("spec",)), roles="`Job` (`spec.template`)",
          pods="`spec.parallelism`, default 1", upstream="Kubernetes batch API"),
    _kind("batch/CronJob@v1", "cronjobs",
          partial(workloads.single, "Job", (*_CRON_JOB, "template"), (*_CRON_JOB, "parallelism")),
          restart=lifecycle.job(_CRON_JOB), deadline=((*_CRON_JOB, "activeDeadlineSeconds"),),
          disruptions=disruption.job(_CRON_JOB),
          roles="`Job` (`spec.jobTemplate.spec.template`)", pods="`…jobTemplate.spec.parallelism`, default 1",
          upstream="Kubernetes batch API"),
    _kubeflow("PyTorchJob", "v1", _TRAINING_OPERATOR.format("pytorch")),
    _kubeflow("TFJob", "v1", _TRAINING_OPERATOR.format("tensorflow")),
    _kubeflow("XGBoostJob", "v1", _TRAINING_OPERATOR.format("xgboost")),
    _kubeflow("PaddleJob", "v1", _TRAINING_OPERATOR.format("paddlepaddle")),
    _kubeflow("JAXJob", "v1", _TRAINING_OPERATOR.format("jax")),
    _kubeflow("MPIJob", "v2beta1,v1", _MPI_OPERATOR, restart=lifecycle.MPIJOB, pods="`replicas`, default 1"),
    _kind("jobset.x-k8s.io/JobSet@v1alpha2", "jobsets", partial(workloads.replicated_jobs, _JOBSET_JOBS),
          restart=lifecycle.JOBSET, deadline=_JOBSET_DEADLINE, disruptions=disruption.JOBSET,
          roles=_JOBSET_ROLES, pods=_JOBSET_PODS,
          upstream="kubernetes-sigs/jobset `api/jobset/v1alpha2/jobset_types.go`"),
    _kind("trainer.kubeflow.org/TrainingRuntime@v1alpha1", "trainingruntimes",
          partial(workloads.replicated_jobs, _RUNTIME_JOBS), roles="as JobSet, under `spec.template.spec`",
          pods="as JobSet", upstream="kubeflow/trainer `pkg/apis/trainer/v1alpha1/trainingruntime_types.go`"),
    _kind("trainer.kubeflow.org/ClusterTrainingRuntime@v1alpha1", "clustertrainingruntimes",
          partial(workloads.replicated_jobs, _RUNTIME_JOBS), namespaced=False,
          roles="as JobSet, under `spec.template.spec`", pods="as JobSet",
          upstream="kubeflow/trainer `pkg/apis/trainer/v1alpha1/trainingruntime_types.go`"),
    _kind("trainer.kubeflow.org/TrainJob@v1alpha1", "trainjobs", workloads.train_job, deadline=_DEADLINE,
          roles=_TRAIN_JOB_ROLES, pods="`spec.trainer.numNodes`, default 1",
          upstream="kubeflow/trainer `pkg/apis/trainer/v1alpha1/trainjob_types.go`"),
    # The pre-release group of Kubeflow Trainer; its TrainJob has the same spec.trainer.
    _kind("kubeflow.org/TrainJob@v2alpha1", "trainjobs", workloads.train_job, deadline=_DEADLINE,
          roles=_TRAIN_JOB_ROLES, pods="`spec.trainer.numNodes`, default 1",
          upstream="training-operator `pkg/apis/kubeflow.org/v2alpha1/trainjob_types.go`"),
    _kind("batch.volcano.sh/Job@v1alpha1", "jobs", workloads.volcano,
          restart=lifecycle.positive(("spec", "maxRetry"), unset_ok=True),
          roles="`tasks[i].name` (`spec.tasks[i].template`)", pods="`replicas`, default 1",
          upstream="volcano-sh/apis `pkg/apis/batch/v1alpha1/job.go`; volcano-sh/volcano "
                   "`pkg/webhooks/admission/jobs/mutate/mutate_job.go`"),
    _kind("ray.io/RayCluster@v1", "rayclusters", partial(workloads.ray, ("spec",)), roles=_RAY_ROLES,
          pods=_RAY_PODS, upstream="ray-project/kuberay `ray-operator/apis/ray/v1/raycluster_types.go`"),
    _kind("ray.io/RayJob@v1", "rayjobs", partial(workloads.ray, ("spec", "rayClusterSpec")),
          restart=lifecycle.positive(("spec", "backoffLimit")), deadline=_DEADLINE,
          roles="as RayCluster, under `spec.rayClusterSpec` (none when the job runs on an existing cluster)",
          pods="as RayCluster", upstream="kuberay `ray-operator/apis/ray/v1/rayjob_types.go`"),
    _kind("leaderworkerset.x-k8s.io/LeaderWorkerSet@v1", "leaderworkersets", workloads.leader_worker_set,
          serving=True, roles=_LWS_ROLES, pods=_LWS_PODS,
          upstream="kubernetes-sigs/lws `api/leaderworkerset/v1/leaderworkerset_types.go`"),
    _kind("apps/Deployment@v1", "deployments", workloads.spec_template("Deployment", _REPLICAS), serving=True,
          roles="`Deployment` (`spec.template`)", pods="`spec.replicas`, default 1", upstream=_APPS),
    _kind("apps/StatefulSet@v1", "statefulsets", workloads.spec_template("StatefulSet", _REPLICAS),
          serving=True, roles="`StatefulSet` (`spec.template`)", pods="`spec.replicas`, default 1",
          upstream=_APPS),
    _kind("apps/ReplicaSet@v1", "replicasets", workloads.spec_template("ReplicaSet", _REPLICAS), serving=True,
          roles="`ReplicaSet` (`spec.template`)", pods="`spec.replicas`, default 1", upstream=_APPS),
    _kind("apps/DaemonSet@v1", "daemonsets", workloads.spec_template("DaemonSet", None), serving=True,
          roles="`DaemonSet` (`spec.template`)", pods="1", upstream=_APPS),
    _kind("/Node@v1", "nodes", None, gather=_as_node, namespaced=False, admitted=False,
          roles="none: a Node's own facts (capacity, conditions, taints)", upstream="Kubernetes core API"),
    # DRA claims: no pod template; their device requests are the `claim` scope (facts/claim.py).
    # resource.k8s.io is GA at v1 (Kubernetes 1.34); older servers serve v1beta2 or v1beta1.
    *(
        _kind(f"resource.k8s.io/{kind}@v1,v1beta2,v1beta1", f"{kind.lower()}s", None, gather=_as_claim,
              roles=f"none: the claim's device requests ({path})", upstream=_DRA)
        for kind, path in (
            ("ResourceClaim", "`spec.devices`"), ("ResourceClaimTemplate", "`spec.spec.devices`")
        )
    ),
)  # fmt: skip

_BY_KEY: Final[Mapping[tuple[str, str], Kind]] = {(k.info.group, k.info.kind): k for k in KINDS}

SUPPORTED_KINDS: Final[tuple[KindInfo, ...]] = tuple(k.info for k in KINDS)


def row_of(obj: Any) -> Kind | None:
    """The row of an object's API group and kind (any version); None for kinds kubegap ignores."""
    read = raw.mapping(obj)  # a dict, read without looking `get` up by name (compiled)
    api_version, kind = read.get("apiVersion"), read.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    group = api_version.rpartition("/")[0]  # "v1" is the core group ""; "batch/v1" is "batch"
    return _BY_KEY.get((group, kind))


def kind_info(obj: Mapping[str, Any]) -> KindInfo | None:
    row = row_of(obj)
    return None if row is None else row.info


def workload_of(obj: Mapping[str, Any]) -> Workload | None:
    """The workload view of a supported object; None for unsupported kinds (and Nodes, DRA claims)."""
    row = row_of(obj)
    return None if row is None or row.templates is None else row.workload(obj)


def gather(
    obj: Mapping[str, Any], catalogue: Catalogue, configmaps: env.ConfigMaps
) -> facts.ObjectFacts | None:
    """Everything the policies judge of one object; None for kinds kubegap ignores."""
    row = row_of(obj)
    return None if row is None else row.gather(row, obj, catalogue, configmaps)


def restart(group: str, kind: str, obj: Mapping[str, Any]) -> lifecycle.Restart | None:
    """How failed runs restart; None where the kind has no such setting (not applicable)."""
    row = _BY_KEY.get((group, kind))
    return row.restart(obj) if row is not None and row.restart is not None else None


def deadline(group: str, kind: str, obj: Mapping[str, Any]) -> float | None:
    """The longest `activeDeadlineSeconds` of the run, in seconds; None when any part is unbounded."""
    row = _BY_KEY.get((group, kind))
    return lifecycle.deadline(row.deadline, obj) if row is not None else None


def disruptions(group: str, kind: str, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """`facts.disruptions`: whether disrupted pods spare the restart budget; None for kinds without one."""
    row = _BY_KEY.get((group, kind))
    return row.disruptions(obj) if row is not None and row.disruptions is not None else None


_INTRO = """\
# Supported kinds

<!-- Generated from kubegap/kinds.py: python -m kubegap.kinds > docs/kinds.md -->

kubegap reads the pod templates inside each of these kinds. It matches a kind by **API group and kind,
whatever the version**; the versions listed are the ones whose field paths were checked against the
upstream API types. Each template becomes a *role*, which findings name together with the JSON path of the
field involved. The pod count of a role is what GPU totals and the "distributed" / "multi-node" facts are
built from. Serving kinds count as serving workloads unless labelled `kubegap.dev/workload: training`.
Any other kind is ignored and counted as "not applicable". Only `containers` are read; init containers
are not. The chart's admission webhook intercepts every kind but those marked "not admitted", which
`kubegap audit` and `kubegap lint` read.
"""


def _versions(info: KindInfo) -> str:
    return f"{'`' + info.group + '`' if info.group else 'core'} {', '.join(f'`{v}`' for v in info.versions)}"


def _deadline(row: Kind) -> str:
    paths = ["`" + render(p).replace("['*']", "[*]") + "`" for p in row.deadline]
    every = " (every one set)" if any("*" in p for p in row.deadline) else ""
    return ", ".join(paths) + every


def markdown() -> str:
    lines = [
        _INTRO,
        "| Kind | API group / versions | Resource | Roles (template path) | Pods per role | Serving "
        "| Run-time bound | Restarts failed runs | Upstream types checked |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in KINDS:
        info = row.info
        scope = ("" if info.namespaced else " (cluster-scoped)") + ("" if row.admitted else " (not admitted)")
        restart = row.restart.text if row.restart else ""
        cells = (
            info.kind, _versions(info), f"`{info.plural}`{scope}", row.roles, row.pods,
            "yes" if row.serving else "", _deadline(row) if row.deadline else "", restart, row.upstream,
        )  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")

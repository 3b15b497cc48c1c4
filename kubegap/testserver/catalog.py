"""The test API server's resource catalogue and its Status errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class Resource:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = WRITE_VERBS
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def builtin(self) -> bool:
        """Built-in types omit apiVersion/kind on list items; custom resources keep them (as upstream)."""
        return "." not in self.group or self.group in _BUILTIN

    def discovery(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.kind.lower(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        return entry


_BUILTIN = frozenset({"networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io", "resource.k8s.io"})


def _r(
    api: str,
    kind: str,
    plural: str,
    *,
    cluster: bool = False,
    short: str = "",
    read_only: bool = False,
    categories: str = "",
) -> Resource:
    group, _, version = api.rpartition("/")
    return Resource(
        group,
        version,
        kind,
        plural,
        not cluster,
        tuple(filter(None, short.split(","))),
        READ_VERBS if read_only else WRITE_VERBS,
        tuple(filter(None, categories.split(","))),
    )


# What a cluster with the training operators installed serves (kinds, plurals and short names as upstream).
DEFAULT_RESOURCES: tuple[Resource, ...] = (
    _r("v1", "Pod", "pods", short="po", categories="all"),
    _r("v1", "Node", "nodes", cluster=True, short="no"),
    _r("v1", "Namespace", "namespaces", cluster=True, short="ns"),
    _r("v1", "ConfigMap", "configmaps", short="cm"),
    _r("v1", "Secret", "secrets"),
    _r("batch/v1", "Job", "jobs", categories="all"),
    _r("batch/v1", "CronJob", "cronjobs", short="cj", categories="all"),
    _r("apps/v1", "Deployment", "deployments", short="deploy", categories="all"),
    _r("apps/v1", "StatefulSet", "statefulsets", short="sts", categories="all"),
    _r("apps/v1", "ReplicaSet", "replicasets", short="rs", categories="all"),
    _r("apps/v1", "DaemonSet", "daemonsets", short="ds", categories="all"),
    _r("kubeflow.org/v1", "PyTorchJob", "pytorchjobs"),
    _r("kubeflow.org/v1", "TFJob", "tfjobs"),
    _r("kubeflow.org/v1", "XGBoostJob", "xgboostjobs"),
    _r("kubeflow.org/v1", "PaddleJob", "paddlejobs"),
    _r("kubeflow.org/v1", "JAXJob", "jaxjobs"),
    _r("kubeflow.org/v2beta1", "MPIJob", "mpijobs"),  # mpi-operator v2 serves v2beta1 only
    _r("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets"),
    _r("trainer.kubeflow.org/v1alpha1", "TrainJob", "trainjobs"),
    _r("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", "trainingruntimes"),
    _r("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", "clustertrainingruntimes", cluster=True),
    _r("batch.volcano.sh/v1alpha1", "Job", "jobs", short="vcjob,vj"),
    _r("ray.io/v1", "RayCluster", "rayclusters"),
    _r("ray.io/v1", "RayJob", "rayjobs"),
    _r("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "leaderworkersets", short="lws"),
    _r("resource.k8s.io/v1", "ResourceClaim", "resourceclaims"),  # DRA, GA in Kubernetes 1.34
    _r("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates"),
    _r("wgpolicyk8s.io/v1alpha2", "PolicyReport", "policyreports", short="polr"),
    _r("wgpolicyk8s.io/v1alpha2", "ClusterPolicyReport", "clusterpolicyreports", cluster=True, short="cpolr"),
)


class ApiError(Exception):
    """An error the server answers with a Status body."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        continue_token: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details = dict(details or {})
        self.continue_token = continue_token

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.continue_token:
            body["metadata"]["continue"] = self.continue_token
        if self.details:
            body["details"] = self.details
        return body

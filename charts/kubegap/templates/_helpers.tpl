{{/* Names, labels and shared fragments. */}}

{{- define "kubegap.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kubegap.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Names of the parts; each stays within 63 characters (Service names are DNS labels). */}}
{{- define "kubegap.webhookName" -}}{{ include "kubegap.fullname" . | trunc 55 | trimSuffix "-" }}-webhook{{- end -}}
{{- define "kubegap.auditName" -}}{{ include "kubegap.fullname" . | trunc 57 | trimSuffix "-" }}-audit{{- end -}}
{{- define "kubegap.configName" -}}{{ include "kubegap.fullname" . | trunc 56 | trimSuffix "-" }}-config{{- end -}}
{{- define "kubegap.tlsSecretName" -}}{{ include "kubegap.webhookName" . }}-tls{{- end -}}
{{- define "kubegap.caSecretName" -}}{{ include "kubegap.webhookName" . }}-ca{{- end -}}
{{- define "kubegap.servingCertName" -}}{{ include "kubegap.webhookName" . }}-serving{{- end -}}

{{- define "kubegap.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kubegap.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "kubegap.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubegap.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kubegap.image" -}}
{{- $image := .Values.image -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- end -}}

{{/* DNS names of the webhook Service, for the serving certificate. */}}
{{- define "kubegap.dnsNames" -}}
{{- $svc := include "kubegap.webhookName" . -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toYaml -}}
{{- end -}}

{{/*
The kinds kubegap reads (its supported kinds: Pod, batch, Kubeflow, JobSet, Trainer, Volcano, Ray,
LeaderWorkerSet, apps, DRA claims). The webhook intercepts every kind but Node; the audit reads all of them.
tests/test_kinds.py checks this list against the kinds table, kubegap/kinds.py.
*/}}
{{- define "kubegap.kinds" -}}
- {group: "", resource: pods, namespaced: true}
- {group: batch, resource: jobs, namespaced: true}
- {group: batch, resource: cronjobs, namespaced: true}
- {group: kubeflow.org, resource: pytorchjobs, namespaced: true}
- {group: kubeflow.org, resource: tfjobs, namespaced: true}
- {group: kubeflow.org, resource: xgboostjobs, namespaced: true}
- {group: kubeflow.org, resource: paddlejobs, namespaced: true}
- {group: kubeflow.org, resource: jaxjobs, namespaced: true}
- {group: kubeflow.org, resource: mpijobs, namespaced: true}
- {group: kubeflow.org, resource: trainjobs, namespaced: true}
- {group: jobset.x-k8s.io, resource: jobsets, namespaced: true}
- {group: trainer.kubeflow.org, resource: trainingruntimes, namespaced: true}
- {group: trainer.kubeflow.org, resource: clustertrainingruntimes, namespaced: false}
- {group: trainer.kubeflow.org, resource: trainjobs, namespaced: true}
- {group: batch.volcano.sh, resource: jobs, namespaced: true}
- {group: ray.io, resource: rayclusters, namespaced: true}
- {group: ray.io, resource: rayjobs, namespaced: true}
- {group: leaderworkerset.x-k8s.io, resource: leaderworkersets, namespaced: true}
- {group: apps, resource: deployments, namespaced: true}
- {group: apps, resource: statefulsets, namespaced: true}
- {group: apps, resource: replicasets, namespaced: true}
- {group: apps, resource: daemonsets, namespaced: true}
- {group: resource.k8s.io, resource: resourceclaims, namespaced: true}
- {group: resource.k8s.io, resource: resourceclaimtemplates, namespaced: true}
- {group: "", resource: nodes, namespaced: false, auditOnly: true}
{{- end -}}

{{/* Resources per API group: {group: [resource, ...]}, optionally only namespaced or cluster-scoped ones. */}}
{{- define "kubegap.resourcesByGroup" -}}
{{- $byGroup := dict -}}
{{- range include "kubegap.kinds" .root | fromYamlArray -}}
{{- if and (or $.audit (not .auditOnly)) (or (eq $.scope "*") (eq $.scope (ternary "Namespaced" "Cluster" .namespaced))) -}}
{{- $_ := set $byGroup .group (append (get $byGroup .group | default list) .resource) -}}
{{- end -}}
{{- end -}}
{{- toYaml $byGroup -}}
{{- end -}}

{{/* The volume that puts config.yaml, extra policies/knobs and (webhook) TLS files under /etc/kubegap. */}}
{{- define "kubegap.configVolume" -}}
- name: etc-kubegap
  projected:
    # Group-readable for fsGroup; a projected volume (not subPath) so that replaced files reach the pod.
    defaultMode: 0440
    sources:
      - configMap:
          name: {{ include "kubegap.configName" .root }}
          items:
            - {key: config.yaml, path: config.yaml}
            {{- range $id, $_ := .root.Values.config.extraPolicies }}
            - {key: {{ printf "policy.%s.yaml" $id | quote }}, path: {{ printf "policies/%s/policy.yaml" $id | quote }}}
            {{- end }}
            {{- range $name, $_ := .root.Values.config.extraKnobs }}
            - {key: {{ printf "knobs.%s.yaml" $name | quote }}, path: {{ printf "knobs/%s.yaml" $name | quote }}}
            {{- end }}
      {{- if .tls }}
      - secret:
          name: {{ include "kubegap.tlsSecretName" .root }}
          items:
            - {key: tls.crt, path: tls/tls.crt}
            - {key: tls.key, path: tls/tls.key}
      {{- end }}
- name: tmp
  emptyDir:
    medium: Memory
    sizeLimit: 64Mi
{{- end -}}

{{- define "kubegap.volumeMounts" -}}
- {name: etc-kubegap, mountPath: /etc/kubegap, readOnly: true}
- {name: tmp, mountPath: /tmp}
{{- end -}}

{{- define "kubegap.podSecurity" -}}
{{- with .Values.podSecurityContext -}}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}

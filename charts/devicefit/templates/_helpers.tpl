{{/*
Object names derive from the release's full name, so that the release
"devicefit" (the README's `helm install devicefit ...`) renders exactly the
names of the kustomize base in manifests/: devicefit-scheduler,
devicefit:metrics-reader, devicefit-pod-requests, ... Usual Helm rule: the
release name when it contains the chart name, else <release>-<chart>.
*/}}
{{- define "devicefit.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 42 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 42 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 42 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The scheduler's Deployment, ServiceAccount, ClusterRole and lease. */}}
{{- define "devicefit.schedulerName" -}}
{{- include "devicefit.fullname" . }}-scheduler
{{- end -}}

{{- define "devicefit.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
app.kubernetes.io/name is devicefit-scheduler whatever the release is
called, and cannot be overridden: the ServiceMonitor takes the job label
from it (jobLabel), and the alerts and the dashboard select
job="devicefit-scheduler".
*/}}
{{- define "devicefit.name" -}}
devicefit-scheduler
{{- end -}}

{{/* Standard labels of every object (Helm's and the Kubernetes recommended labels). */}}
{{- define "devicefit.labels" -}}
helm.sh/chart: {{ include "devicefit.chart" . }}
app.kubernetes.io/name: {{ include "devicefit.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: devicefit
{{- end -}}

{{/*
Selector of the scheduler's pods: the same two labels as the kustomize
base, without app.kubernetes.io/instance. A selector is immutable, so this
keeps the Deployment, Service, PodDisruptionBudget and topology spread of
a cluster moved from `make deploy` to the chart selecting the same pods;
there is one devicefit per cluster anyway (its ClusterRole, admission
policy and scheduler name are cluster-wide).
*/}}
{{- define "devicefit.selectorLabels" -}}
app.kubernetes.io/name: {{ include "devicefit.name" . }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "devicefit.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The scheduler names of every profile: the admission policy matches them all. */}}
{{- define "devicefit.profileNames" -}}
{{- $names := list .Values.schedulerName -}}
{{- range .Values.extraProfiles -}}
{{- $names = append $names .schedulerName -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/*
The KubeSchedulerConfiguration (manifests/scheduler-config.yaml explains the
choices behind the defaults). The lease is the Deployment's name in the
release namespace: rbac-leader-election.yaml grants exactly that lease.
*/}}
{{- define "devicefit.schedulerConfig" -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: {{ .Values.leaderElection.enabled }}
  resourceName: {{ include "devicefit.schedulerName" . }}
  resourceNamespace: {{ .Release.Namespace }}
  {{- with .Values.leaderElection.leaseDuration }}
  leaseDuration: {{ . }}
  {{- end }}
  {{- with .Values.leaderElection.renewDeadline }}
  renewDeadline: {{ . }}
  {{- end }}
  {{- with .Values.leaderElection.retryPeriod }}
  retryPeriod: {{ . }}
  {{- end }}
{{- with .Values.percentageOfNodesToScore }}
percentageOfNodesToScore: {{ . }}
{{- end }}
profiles:
  - schedulerName: {{ .Values.schedulerName }}
    plugins:
      {{- toYaml .Values.plugins | nindent 6 }}
    pluginConfig:
      - name: DeviceFit
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: DeviceFitArgs
          {{- with .Values.deviceFitArgs }}
          {{- toYaml . | nindent 10 }}
          {{- end }}
      - name: DevicePack
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: DevicePackArgs
          {{- with .Values.devicePackArgs }}
          {{- toYaml . | nindent 10 }}
          {{- end }}
      {{- with .Values.extraPluginConfig }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
  {{- with .Values.extraProfiles }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/*
The device resources of DeviceFit's args as CEL list literals, {"names":
"[...]", "prefixes": "[...]"}: deviceFitArgs.deviceResources (a name ending
in * is a prefix) or, when unset, the scheduler's defaults
(devices.DefaultResourcePatterns). Both admission policies read them.
*/}}
{{- define "devicefit.deviceResources" -}}
{{- $patterns := .Values.deviceFitArgs.deviceResources | default (list "nvidia.com/gpu" "nvidia.com/gpu.shared" "nvidia.com/mig-*" "amd.com/gpu" "aws.amazon.com/neuron" "aws.amazon.com/neuroncore" "aws.amazon.com/neurondevice" "google.com/tpu" "gpu.intel.com/i915" "gpu.intel.com/xe" "habana.ai/gaudi") -}}
{{- $names := list -}}
{{- $prefixes := list -}}
{{- range $patterns -}}
{{- if hasSuffix "*" . -}}
{{- $prefixes = append $prefixes (printf "'%s'" (trimSuffix "*" .)) -}}
{{- else -}}
{{- $names = append $names (printf "'%s'" .) -}}
{{- end -}}
{{- end -}}
{{- dict "names" (printf "[%s]" (join ", " $names)) "prefixes" (printf "[%s]" (join ", " $prefixes)) | toJson -}}
{{- end -}}

{{/*
What the cluster serves decides two optional parts, so that one chart
installs on every supported minor (Chart.yaml's kubeVersion). Each helper is
"true" when its part is rendered, empty otherwise; NOTES.txt says what was
left out and why. .Capabilities.APIVersions lists group/version/Kind from
the API server's discovery on install and upgrade; `helm template` knows
only --api-versions (and group/versions of helm's own client, no Kind), so
it renders these parts only when told, e.g. --api-versions
admissionregistration.k8s.io/v1/MutatingAdmissionPolicy.

The routing policy: admissionregistration.k8s.io/v1 MutatingAdmissionPolicy
is served by default from Kubernetes 1.36; on 1.35 the object would be
refused and fail the whole install.
*/}}
{{- define "devicefit.routingPolicy" -}}
{{- if and .Values.routingPolicy.enabled (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy") -}}
true
{{- end -}}
{{- end -}}

{{/*
Pod groups: scheduling.k8s.io/v1beta1 PodGroup is served only from
Kubernetes 1.37, and only when kube-apiserver enables it
(--runtime-config=scheduling.k8s.io/v1beta1=true; beta APIs are off by
default). Without it the gates of the flag (deployment.yaml) point the
scheduler at PodGroups the server does not serve; and on 1.35, the minor
the scheduler then emulates, TopologyAwareWorkloadScheduling (alpha since
1.36) does not exist yet, so the flag is refused and the scheduler does not
start.
*/}}
{{- define "devicefit.podGroups" -}}
{{- if and .Values.podGroups.enabled (.Capabilities.APIVersions.Has "scheduling.k8s.io/v1beta1/PodGroup") -}}
true
{{- end -}}
{{- end -}}

{{/* The server's minor as NOTES.txt names it, e.g. v1.35 (GKE reports minor "35+"). */}}
{{- define "devicefit.kubeMinor" -}}
v{{ .Capabilities.KubeVersion.Major }}.{{ trimSuffix "+" .Capabilities.KubeVersion.Minor }}
{{- end -}}

{{/* Labels of the defragmenter's objects (manifests/components/defragmenter's name). */}}
{{- define "devicefit.defragmenterLabels" -}}
{{ include "devicefit.labels" . | replace "app.kubernetes.io/name: devicefit-scheduler" "app.kubernetes.io/name: devicefit-defragmenter" }}
{{- end -}}

{{/*
The DefragmenterConfiguration (manifests/components/defragmenter's
defragmenter-config.yaml explains each field). The lease is the
defragmenter's Deployment name in the release namespace, which its Role
grants.
*/}}
{{- define "devicefit.defragmenterConfig" -}}
{{- $d := .Values.defragmenter -}}
apiVersion: devicefit.io/v1alpha1
kind: DefragmenterConfiguration
schedulerConfigFile: /etc/devicefit/scheduler-config.yaml
schedulerName: {{ .Values.schedulerName }}
dryRun: {{ $d.dryRun }}
interval: {{ $d.interval }}
pending:
  after: {{ $d.pending.after }}
  maxMoves: {{ $d.pending.maxMoves }}
{{- if gt (int $d.freeNodes.count) 0 }}
freeNodes:
  count: {{ $d.freeNodes.count }}
  resource: {{ $d.freeNodes.resource }}
  {{- with $d.freeNodes.product }}
  product: {{ . | quote }}
  {{- end }}
{{- end }}
optIn:
  {{- with $d.optIn.namespaces }}
  namespaces: {{ toJson . }}
  {{- end }}
  {{- with $d.optIn.podSelector }}
  podSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
budget:
  movesPerHour: {{ $d.budget.movesPerHour }}
  concurrentMoves: {{ $d.budget.concurrentMoves }}
moveTimeout: {{ $d.moveTimeout }}
leaderElection:
  leaderElect: true
  resourceNamespace: {{ .Release.Namespace }}
  resourceName: {{ include "devicefit.fullname" . }}-defragmenter
{{- end -}}

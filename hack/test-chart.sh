#!/usr/bin/env bash
# Renders the Helm chart for each supported Kubernetes minor, as `helm
# install` there would, and checks what each rendering must and must not
# contain: make test-chart runs it after `helm lint`.
#
#   hack/test-chart.sh HELM CHART     e.g. hack/test-chart.sh bin/helm charts/devicefit
#
# Why each minor is named here: `helm template` asks no cluster. Its
# .Capabilities.KubeVersion is --kube-version (default: the minor of its own
# client-go, 1.37 for helm v4.3.1 built here) and its .Capabilities.APIVersions
# are the group/versions of its own client's scheme, never a kind, plus
# --api-versions. `helm install` reads both from the server's discovery,
# which lists every served kind as group/version/Kind. So each minor gets
# --kube-version and the kinds that a server of that minor with default
# feature gates and runtime-config serves, of those the chart asks about
# (_helpers.tpl "devicefit.routingPolicy", "devicefit.podGroups"):
#
#   admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy   1.35 and later
#   admissionregistration.k8s.io/v1 MutatingAdmissionPolicy     1.36 and later
#   scheduling.k8s.io/v1beta1 PodGroup                          1.37, and only when kube-apiserver
#                                                               turns the beta API on (off by default)
#
# helm template never prints NOTES.txt. The checks run on a copy of the
# chart with one more template, which renders NOTES.txt (through tpl, so
# with the chart's helpers and the same capabilities) as YAML comments
# "# NOTES: ...", which helm template prints.
set -euo pipefail

helm=${1:?usage: hack/test-chart.sh HELM CHART}
chart=${2:?usage: hack/test-chart.sh HELM CHART}

# Chart.yaml's kubeVersion: helm's own refusal must name it.
range='>=1.35.0-0 <1.39.0-0'

vap=admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy,admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding
map=admissionregistration.k8s.io/v1/MutatingAdmissionPolicy,admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding
podgroup=scheduling.k8s.io/v1beta1/PodGroup
all_on=serviceMonitor.enabled=true,prometheusRule.enabled=true,podGroups.enabled=true,defragmenter.enabled=true

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$chart" "$tmp/chart"
# .Files reads no file under templates/: the copy keeps NOTES.txt beside Chart.yaml too.
cp "$chart/templates/NOTES.txt" "$tmp/chart/NOTES.txt"
cat >"$tmp/chart/templates/zz-test-chart-notes.yaml" <<'EOF'
{{- /* hack/test-chart.sh: NOTES.txt as YAML comments, which helm template prints. */}}
{{- range splitList "\n" (tpl (.Files.Get "NOTES.txt") .) }}
# NOTES: {{ . }}
{{- end }}
EOF

failed=0
fail() {
  echo "FAIL: $*" >&2
  failed=1
}

# render CASE ARGS...: helm template of the copy into $tmp/CASE.yaml; a
# refusal fails the case.
render() {
  local name=$1
  shift
  echo "$helm template devicefit $chart -n devicefit-system $*"
  if ! "$helm" template devicefit "$tmp/chart" -n devicefit-system "$@" >"$tmp/$name.yaml" 2>"$tmp/$name.err"; then
    fail "$name: helm template failed: $(cat "$tmp/$name.err")"
  fi
}

# refused CASE KUBE_VERSION: helm refuses the minor and names the range.
refused() {
  local name=$1 version=$2
  echo "$helm template devicefit $chart -n devicefit-system --kube-version $version"
  if "$helm" template devicefit "$tmp/chart" -n devicefit-system --kube-version "$version" >/dev/null 2>"$tmp/$name.err"; then
    fail "$name: Kubernetes $version was rendered, want it refused: outside $range"
  elif ! grep -qF "chart requires kubeVersion: $range which is incompatible with Kubernetes v$version" "$tmp/$name.err"; then
    fail "$name: refused, but the message does not name the range $range and v$version: $(cat "$tmp/$name.err")"
  else
    echo "  refused: $(head -n1 "$tmp/$name.err")"
  fi
}

# has CASE WHAT REGEX / hasnt CASE WHAT REGEX: an extended regular
# expression that must (not) match a line of the rendering.
has() {
  grep -qE -- "$3" "$tmp/$1.yaml" || fail "$1: no $2 (want a line matching '$3')"
}
hasnt() {
  local line
  if line=$(grep -m1 -E -- "$3" "$tmp/$1.yaml"); then
    fail "$1: $2, which must not be there: '$line'"
  fi
}

# The scheduler and its admission policy, on every minor.
always() {
  has "$1" "Deployment" '^kind: Deployment$'
  has "$1" "ValidatingAdmissionPolicy" '^kind: ValidatingAdmissionPolicy$'
}
routing() {
  has "$1" "MutatingAdmissionPolicy" '^kind: MutatingAdmissionPolicy$'
  has "$1" "MutatingAdmissionPolicyBinding" '^kind: MutatingAdmissionPolicyBinding$'
  hasnt "$1" "a NOTES line on the routing policy" '^# NOTES: routing policy not installed'
}
no_routing() {
  hasnt "$1" "a MutatingAdmissionPolicy" '^kind: MutatingAdmissionPolicy'
}
pod_groups() {
  has "$1" "feature gates flag" '^ *- --feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true$'
  has "$1" "PodGroup RBAC" 'resources: \["podgroups"\]'
  hasnt "$1" "a NOTES line on pod groups" '^# NOTES: pod groups not enabled'
}
no_pod_groups() {
  hasnt "$1" "the feature gates flag" '^ *- --feature-gates'
  hasnt "$1" "PodGroup RBAC" 'resources: \["podgroups'
}

# 1.34 and older, and 1.39 and newer: refused by helm's kubeVersion check.
refused 1.34 1.34.4
refused 1.39 1.39.0

# 1.35: no MutatingAdmissionPolicy v1, no PodGroup; NOTES say both, with
# the server's minor and what to do instead.
render 1.35 --kube-version 1.35.4 --api-versions "$vap" --set "$all_on"
always 1.35
no_routing 1.35
no_pod_groups 1.35
has 1.35 "NOTES line on the routing policy" '^# NOTES: routing policy not installed: this cluster \(Kubernetes v1\.35\) does not serve$'
has 1.35 "NOTES line on the routing policy" '^# NOTES: admissionregistration\.k8s\.io/v1 MutatingAdmissionPolicy \(Kubernetes 1\.36 and later\);$'
has 1.35 "NOTES line on the routing policy" '^# NOTES: device pods must name spec\.schedulerName: devicefit$'
has 1.35 "NOTES line on pod groups" '^# NOTES: pod groups not enabled: this cluster \(Kubernetes v1\.35\) does not serve$'
has 1.35 "ServiceMonitor (enabled)" '^kind: ServiceMonitor$'
has 1.35 "PrometheusRule (enabled)" '^kind: PrometheusRule$'

# 1.35 with the defaults: podGroups is off, so NOTES say nothing of it.
render 1.35-defaults --kube-version 1.35.4 --api-versions "$vap"
no_routing 1.35-defaults
has 1.35-defaults "NOTES line on the routing policy" '^# NOTES: routing policy not installed'
hasnt 1.35-defaults "a NOTES line on pod groups" 'pod groups not enabled'

# 1.35 with the routing policy turned off: nothing to say about it.
render 1.35-no-routing --kube-version 1.35.4 --api-versions "$vap" --set routingPolicy.enabled=false
no_routing 1.35-no-routing
hasnt 1.35-no-routing "a NOTES line on the routing policy" 'routing policy not installed'

# 1.36: the routing policy; still no PodGroup.
render 1.36 --kube-version 1.36.3 --api-versions "$vap,$map" --set "$all_on"
always 1.36
routing 1.36
no_pod_groups 1.36
has 1.36 "NOTES line on pod groups" '^# NOTES: pod groups not enabled: this cluster \(Kubernetes v1\.36\) does not serve$'

# 1.37 with default runtime-config: scheduling.k8s.io/v1beta1 is off.
render 1.37 --kube-version 1.37.2 --api-versions "$vap,$map" --set "$all_on"
always 1.37
routing 1.37
no_pod_groups 1.37
has 1.37 "NOTES line on pod groups" '^# NOTES: pod groups not enabled: this cluster \(Kubernetes v1\.37\) does not serve$'

# 1.37 with scheduling.k8s.io/v1beta1 on: everything.
render 1.37-workload --kube-version 1.37.2 --api-versions "$vap,$map,$podgroup" --set "$all_on"
always 1.37-workload
routing 1.37-workload
pod_groups 1.37-workload

# 1.38, one minor newer than the scheduler: installs as 1.37 does.
render 1.38 --kube-version 1.38.0 --api-versions "$vap,$map" --set "$all_on"
always 1.38
routing 1.38

if [[ $failed != 0 ]]; then
  echo "test-chart: FAILED (renderings kept in $tmp)" >&2
  trap - EXIT
  exit 1
fi
echo "test-chart: the chart renders what each supported minor serves"

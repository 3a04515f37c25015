#!/usr/bin/env bash
# Prints the directory of the prometheus-operator CRDs (ServiceMonitor,
# PrometheusRule, ...) the e2e tests install: example/prometheus-operator-crd
# of the operator's Go module, fetched through the Go module proxy into the
# module cache. The module is not a dependency of devicefit and stays out of
# go.mod: the download runs outside the module.
#
#   hack/prometheus-operator-crds.sh [version]   (default v0.76.0)
set -euo pipefail

version=${1:-v0.76.0}
module=github.com/prometheus-operator/prometheus-operator

go=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
json=$(cd "${work}" && GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=mod" "${go}" mod download -json "${module}@${version}")
dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"${json}")
if [[ -z ${dir} ]]; then
  echo "prometheus-operator-crds: go mod download ${module}@${version} gave no Dir:" >&2
  echo "${json}" >&2
  exit 1
fi
crds=${dir}/example/prometheus-operator-crd
for f in monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheusrules.yaml; do
  if [[ ! -f ${crds}/${f} ]]; then
    echo "prometheus-operator-crds: ${crds}/${f} not found" >&2
    exit 1
  fi
done
echo "${crds}"

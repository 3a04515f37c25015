#!/usr/bin/env bash
# Keeps the helm tools module (hack/tools/helm) on the main module's
# versions of every module both graphs hold, by replace directives in its
# go.mod, so that bin/helm reuses the packages the main module's vet and
# build already compiled (k8s.io/api, apimachinery, client-go, kubectl,
# cli-runtime, golang.org/x/*: about 700 of helm's 945 packages) instead of
# compiling a second set at helm's own versions (helm 4.3.1 asks k8s.io
# v0.37.1 and newer golang.org/x/*). Go's build cache shares a compiled
# package only when its module version, its dependencies and its flags are
# the same, hence also no -trimpath in the Makefile's helm build.
#
# Not aligned: go.opentelemetry.io/*. helm's otel/sdk/log needs the semconv
# package of otel 1.45, which the main module's 1.44 lacks; only the few
# k8s.io packages that import otel are compiled twice.
#
#   hack/align-helm-module.sh           rewrite the replace directives
#   hack/align-helm-module.sh --verify  exit 1 when one is missing or stale
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

helm_mod=hack/tools/helm
skip='^go\.opentelemetry\.io/'

# versions MODULE_DIR: "path version" of every module in its graph, the
# replacement's version where a replace applies.
versions() {
  (cd "$1" && go list -m -f '{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' all)
}

declare -A main_version
while read -r path version; do
  main_version[${path}]=${version}
done < <(versions .)

stale=()
while read -r path version; do
  [[ ${path} =~ ${skip} ]] && continue
  want=${main_version[${path}]:-}
  [[ -z ${want} || ${want} == "${version}" ]] && continue
  stale+=("${path} ${version} ${want}")
done < <(versions "${helm_mod}")

if [[ ${1:-} == --verify ]]; then
  if ((${#stale[@]} > 0)); then
    echo "hack/tools/helm is not on the main module's versions (run hack/align-helm-module.sh):" >&2
    printf '  %s\n' "${stale[@]/%/ (helm, main)}" >&2
    exit 1
  fi
  exit 0
fi

for s in "${stale[@]}"; do
  read -r path _ want <<<"${s}"
  (cd "${helm_mod}" && go mod edit -replace "${path}=${path}@${want}")
done
(cd "${helm_mod}" && go mod tidy)
echo "aligned ${#stale[@]} modules of ${helm_mod}"

#!/usr/bin/env bash
# Regenerates the deepcopy, conversion and defaulting code of pkg/apis
# (zz_generated.*.go) with k8s.io/code-generator, as upstream kube-scheduler
# (pkg/scheduler/apis/config) and sigs.k8s.io/scheduler-plugins (apis/config)
# do. The generators are `tool` entries of go.mod, so their version moves with
# the pinned k8s.io/* modules and `go tool` builds them once into Go's cache.
#
# They are called directly rather than through code-generator's
# kube_codegen.sh: its gen_helpers has no way to pass --skip-unsafe, which
# conversion-gen needs here (see below), and it `go install`s the generators,
# validation-gen among them, from code-generator's own go.mod into GOBIN
# instead of using the versions pinned here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly BOILERPLATE=hack/boilerplate.go.txt
readonly APIS=pkg/apis

# Input packages are found by their +k8s: tags (as kube_codegen.sh finds
# them), so a new API version needs no edit here.
pkgs_with_tag() {
  grep -rl --include='*.go' --exclude='zz_generated.*' -E "^// \+k8s:$1=" "${APIS}" |
    xargs -r -n1 dirname | LC_ALL=C sort -u | sed 's|^|./|'
}

mapfile -t deepcopy < <(pkgs_with_tag deepcopy-gen)
mapfile -t conversion < <(pkgs_with_tag conversion-gen)
mapfile -t defaulter < <(pkgs_with_tag defaulter-gen)

# Stale output goes first: a type or package that lost its tags must not keep
# generated code, and the generators do not need it to load the packages.
find "${APIS}" -name 'zz_generated.*.go' -delete

if ((${#deepcopy[@]})); then
  go tool deepcopy-gen --go-header-file "${BOILERPLATE}" \
    --output-file zz_generated.deepcopy.go "${deepcopy[@]}"
fi
# --skip-unsafe: by default conversion-gen reinterprets slices of identical
# layout with unsafe.Pointer, so the internal args would share the v1 args'
# backing arrays. The conversions have always copied (conversion_test.go
# checks it): a plugin that keeps or edits its args must not reach into the
# decoded object. The args are converted once per profile, so the copy is free.
if ((${#conversion[@]})); then
  go tool conversion-gen --go-header-file "${BOILERPLATE}" --skip-unsafe \
    --output-file zz_generated.conversion.go "${conversion[@]}"
fi
if ((${#defaulter[@]})); then
  go tool defaulter-gen --go-header-file "${BOILERPLATE}" \
    --output-file zz_generated.defaults.go "${defaulter[@]}"
fi

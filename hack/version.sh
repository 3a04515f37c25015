#!/usr/bin/env bash
# Prints devicefit's version, or the -ldflags that stamp it into a binary.
#
#   hack/version.sh version        devicefit's own version, e.g. v0.1.0-dev+3f2a1bc4d5e6
#   hack/version.sh ldflags        -X flags for devicefit's binaries
#   hack/version.sh kube-ldflags   -X flags for the upstream tools (kube-apiserver, kubectl)
#   hack/version.sh kube-ldflags hack/tools/kube-1.35
#                                  the same for the release that module pins (test/e2e/skew)
#
# Why devicefit's binaries report "v1.37.2+devicefit.<version>" rather than
# devicefit's version alone: k8s.io/component-base/version.gitVersion is not
# just a label. The scheduler's compatibility machinery parses it as the
# *Kubernetes* binary version and derives the feature-gate emulation version
# from it (k8s.io/apiserver/pkg/util/compatibility.DefaultBuildEffectiveVersion).
# A bare "v0.1.0" would make the scheduler emulate Kubernetes 0.1, where every
# versioned feature gate is off. Keeping the Kubernetes version as the semver
# core and devicefit's version as build metadata (the pattern of k3s and rke2,
# "v1.28.2+k3s1") gives correct gates and an honest --version.
set -euo pipefail

# The release devicefit is working towards; used when the history has no tag.
readonly BASE_VERSION=v0.1.0

cd "$(dirname "${BASH_SOURCE[0]}")/.."

git_() { git -c safe.directory='*' "$@" 2>/dev/null; }

have_head() { git_ rev-parse --verify -q HEAD >/dev/null; }

# tree_state follows `git describe --dirty`: tracked changes make the tree
# dirty, untracked files do not.
tree_state() {
  if ! have_head; then
    echo dirty
    return
  fi
  git_ update-index -q --refresh || true
  if git_ diff-index --quiet HEAD --; then echo clean; else echo dirty; fi
}

devicefit_version() {
  local v
  if v=$(git_ describe --tags --match 'v[0-9]*' --dirty); then
    echo "${v}"
    return
  fi
  local sha=unknown
  if have_head; then
    sha=$(git_ rev-parse --short=12 HEAD)
  fi
  v="${BASE_VERSION}-dev+${sha}"
  if [[ $(tree_state) == dirty ]]; then
    v+=".dirty"
  fi
  echo "${v}"
}

git_commit() {
  if have_head; then git_ rev-parse HEAD; else echo unknown; fi
}

# build_date is the commit time, not the wall clock: the same commit then
# yields the same ldflags, so Go's cache does not relink on every `make`
# (see reproducible-builds.org, SOURCE_DATE_EPOCH).
build_date() {
  local epoch="${SOURCE_DATE_EPOCH:-}"
  if [[ -z ${epoch} ]] && have_head; then
    epoch=$(git_ log -1 --format=%ct HEAD)
  fi
  if [[ -n ${epoch} ]]; then
    date -u -d "@${epoch}" +%Y-%m-%dT%H:%M:%SZ
  else
    date -u +%Y-%m-%dT%H:%M:%SZ
  fi
}

# kube_version [MODULE_DIR]: the k8s.io/kubernetes release of the main
# module, or of one of the hack/tools/kube-<minor> modules.
kube_version() {
  (cd "${1:-.}" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
}

# x_flags VERSION [COMMIT TREE DATE] stamps both version packages:
# component-base (what --version, /version and the feature gates read) and
# client-go (its user agent). Fields not given keep the packages' defaults.
x_flags() {
  local version=$1 commit=${2:-} tree=${3:-} date=${4:-} major minor pkg
  major=$(sed -E 's/^v([0-9]+)\..*/\1/' <<<"${version}")
  minor=$(sed -E 's/^v[0-9]+\.([0-9]+).*/\1/' <<<"${version}")
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    printf -- '-X %s.gitVersion=%s ' "${pkg}" "${version}"
    printf -- '-X %s.gitMajor=%s ' "${pkg}" "${major}"
    printf -- '-X %s.gitMinor=%s ' "${pkg}" "${minor}"
    [[ -n ${commit} ]] && printf -- '-X %s.gitCommit=%s ' "${pkg}" "${commit}"
    [[ -n ${tree} ]] && printf -- '-X %s.gitTreeState=%s ' "${pkg}" "${tree}"
    [[ -n ${date} ]] && printf -- '-X %s.buildDate=%s ' "${pkg}" "${date}"
  done
  echo
}

case "${1:-version}" in
  version)
    devicefit_version
    ;;
  ldflags)
    dv=$(devicefit_version)
    # Semver build metadata is dot-separated [0-9A-Za-z-]: fold devicefit's
    # own '+' into a dot.
    x_flags "$(kube_version)+devicefit.${dv//+/.}" "$(git_commit)" "$(tree_state)" "$(build_date)"
    ;;
  kube-ldflags)
    # Upstream tools report the Kubernetes release they are built from. The
    # module graph knows no upstream commit, and a date would relink them on
    # every devicefit commit for nothing.
    x_flags "$(kube_version "${2:-}")" "" clean
    ;;
  *)
    echo "usage: $0 [version|ldflags|kube-ldflags]" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# Fails when the generated code of pkg/apis (zz_generated.*.go) is not what
# hack/update-codegen.sh writes from the current types and +k8s: tags, and
# prints the difference. As scheduler-plugins' hack/verify-codegen.sh: the
# tree is regenerated in place, compared with a copy taken before, and put
# back as it was, so verifying never edits the working tree.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly APIS=pkg/apis
before=$(mktemp -d)
trap 'rm -rf "${before}"' EXIT
cp -a "${APIS}/." "${before}/"

restore() {
  rm -rf "${APIS}"
  mkdir -p "${APIS}"
  cp -a "${before}/." "${APIS}/"
}

if ! hack/update-codegen.sh; then
  restore
  echo "verify-codegen: hack/update-codegen.sh failed" >&2
  exit 1
fi

rc=0
diff -Naupr "${before}" "${APIS}" || rc=$?
restore
if ((rc != 0)); then
  echo "verify-codegen: ${APIS} is out of date: run make generate (hack/update-codegen.sh) and commit the result" >&2
  exit 1
fi
echo "verify-codegen: ${APIS} is up to date"

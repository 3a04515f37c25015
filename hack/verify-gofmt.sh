#!/usr/bin/env bash
# Fails, listing the files, when any Go file of the repository is not gofmt'd.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# find rather than `git ls-files`: new files count before they are committed.
mapfile -t files < <(find . -path ./.git -prune -o -path ./bin -prune -o -name '*.go' -type f -print)
if ((${#files[@]} == 0)); then
  exit 0
fi
unformatted=$(gofmt -l "${files[@]}")
if [[ -n ${unformatted} ]]; then
  echo "These files are not gofmt'd (run: gofmt -w <file>):" >&2
  echo "${unformatted}" >&2
  exit 1
fi

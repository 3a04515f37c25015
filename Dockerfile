# syntax=docker/dockerfile:1
#
# The devicefit scheduler image: one static binary on distroless, non-root.
#
#   docker build -t ghcr.io/devicefit/devicefit-scheduler:v0.1.0 --build-arg VERSION=v0.1.0 .
#
# Build args:
#   VERSION            devicefit's version (v0.1.0). The build context has no
#                      .git (see .dockerignore), so without it the binary says
#                      v0.1.0-dev+unknown.dirty (hack/version.sh's fallback).
#   GIT_COMMIT         full commit hash, for --version (optional).
#   SOURCE_DATE_EPOCH  build date, as seconds since the epoch (optional; the
#                      commit time keeps builds reproducible).
# --version prints Kubernetes v1.37.2+devicefit.<VERSION>: the Kubernetes
# version must stay the semver core (see hack/version.sh).

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
# Set by BuildKit from --platform (empty with the legacy builder: native).
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=""
ARG GIT_COMMIT=""
ARG SOURCE_DATE_EPOCH=""
WORKDIR /src

# Modules first, so that source changes reuse the download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY . .
# The ldflags hack/version.sh prints, or, given VERSION, the same -X flags with
# that version (version.sh reads it from git, which the context does not have).
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build <<'SH'
#!/usr/bin/env bash
set -euo pipefail
if [[ -n ${VERSION} ]]; then
  kube=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
  gitversion="${kube}+devicefit.${VERSION//+/.}"
  major=$(sed -E 's/^v([0-9]+)\..*/\1/' <<<"${kube}")
  minor=$(sed -E 's/^v[0-9]+\.([0-9]+).*/\1/' <<<"${kube}")
  ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+="-X ${pkg}.gitVersion=${gitversion} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor} "
    ldflags+="-X ${pkg}.gitCommit=${GIT_COMMIT:-unknown} -X ${pkg}.gitTreeState=clean "
    if [[ -n ${SOURCE_DATE_EPOCH} ]]; then
      ldflags+="-X ${pkg}.buildDate=$(date -u -d "@${SOURCE_DATE_EPOCH}" +%Y-%m-%dT%H:%M:%SZ) "
    fi
  done
else
  ldflags=$(hack/version.sh ldflags)
fi
CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-$(go env GOARCH)} \
  go build -trimpath -ldflags "${ldflags}" -o /out/devicefit-scheduler ./cmd/scheduler
# The defragmenter ships in the same image (manifests/components/defragmenter
# runs it with command: /devicefit-defragmenter): one image to mirror and pin.
CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-$(go env GOARCH)} \
  go build -trimpath -ldflags "${ldflags}" -o /out/devicefit-defragmenter ./cmd/devicefit-defragmenter
SH

# static-debian12: CA certificates, /etc/passwd with nonroot (65532), tzdata;
# no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/devicefit-scheduler /devicefit-scheduler
COPY --from=build /out/devicefit-defragmenter /devicefit-defragmenter
USER 65532:65532
ENTRYPOINT ["/devicefit-scheduler"]

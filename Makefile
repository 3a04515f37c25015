# devicefit: build, test, verify and run locally.
#
# Everything is built from the module graph with the Go toolchain: no prebuilt
# binary is downloaded. Go's own build cache makes repeated builds cheap; the
# upstream tools are also make-level file targets keyed on go.mod/go.sum, so
# they are not even re-checked until the pinned versions change.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build
MAKEFLAGS += --no-builtin-rules

GO ?= go
BIN := bin

# Extra flags, e.g. `make test-unit GOTESTFLAGS=-race` or
# `make run LOCALUP_FLAGS=--keep`.
GOTESTFLAGS ?=
LOCALUP_FLAGS ?=
UNIT_TIMEOUT ?= 20m
INTEGRATION_TIMEOUT ?= 60m

# Recursive (=) on purpose: git and `go list` run only when a recipe needs them.
DEVICEFIT_LDFLAGS = $(shell hack/version.sh ldflags)
KUBE_LDFLAGS = $(shell hack/version.sh kube-ldflags)

# Commands other than the scheduler are built as bin/<dir name>.
COMMANDS := $(filter-out scheduler,$(sort $(notdir $(patsubst %/,%,$(dir $(wildcard cmd/*/*.go))))))
TOOLS := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kubectl

.PHONY: all build scheduler commands tools test test-unit test-integration run \
	verify verify-gofmt verify-vet verify-tidy clean help

all: build tools

help: ## show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 20

build: scheduler commands ## bin/devicefit-scheduler and every other cmd/

# Phony: Go decides what is stale, and a finished binary whose build ID still
# matches is left alone.
scheduler: ## bin/devicefit-scheduler, version-stamped
	$(GO) build -ldflags '$(DEVICEFIT_LDFLAGS)' -o $(BIN)/devicefit-scheduler ./cmd/scheduler

commands:
	@for c in $(COMMANDS); do \
		echo "$(GO) build -ldflags '<version>' -o $(BIN)/$$c ./cmd/$$c"; \
		$(GO) build -ldflags '$(DEVICEFIT_LDFLAGS)' -o $(BIN)/$$c ./cmd/$$c; \
	done

tools: $(TOOLS) ## bin/etcd, bin/kube-apiserver, bin/kubectl from the module graph

# go build leaves an up-to-date binary untouched; the touch marks it newer than
# go.mod so that make stops asking.
$(BIN)/etcd: go.mod go.sum
	$(GO) build -o $@ go.etcd.io/etcd/server/v3
	@touch $@

$(BIN)/kube-apiserver: go.mod go.sum
	$(GO) build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-apiserver
	@touch $@

$(BIN)/kubectl: go.mod go.sum
	$(GO) build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kubectl
	@touch $@

test: test-unit test-integration ## all tests

# Also runs the committed fuzz seed corpora (testdata/fuzz).
test-unit: ## unit tests of pkg/ and cmd/
	$(GO) test -timeout $(UNIT_TIMEOUT) $(GOTESTFLAGS) ./pkg/... ./cmd/...

# In-process etcd and kube-apiserver; needs no binary from bin/.
test-integration: ## integration tests against a real apiserver
	$(GO) test -timeout $(INTEGRATION_TIMEOUT) $(GOTESTFLAGS) ./test/integration/...

run: build tools ## the local run: control plane, GPU fleet, scheduler, workload
	$(BIN)/localup --bin-dir $(BIN) --config manifests/scheduler-config.yaml $(LOCALUP_FLAGS)

verify: verify-gofmt verify-vet verify-tidy ## gofmt, go vet, go mod tidy

verify-gofmt:
	hack/verify-gofmt.sh

verify-vet:
	$(GO) vet ./...

verify-tidy:
	$(GO) mod tidy -diff

clean: ## remove bin/ and local-run leftovers
	rm -rf $(BIN)
	rm -rf "$${TMPDIR:-/tmp}"/devicefit-localup-*

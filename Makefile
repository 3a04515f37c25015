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

# Extra flags, e.g. `make test-unit GOTESTFLAGS=-v` or
# `make run LOCALUP_FLAGS=--keep`.
GOTESTFLAGS ?=
# Unit and integration tests run under the race detector (it needs cgo, so
# gcc): the plugins share a node cache between PreFilter and the parallel
# Filter/Score goroutines, and the metrics collector reads informer listers.
# A cold race build adds ~10 minutes on 2 cores (.ci/run: 1499 s in all
# from an empty cache); `make test-unit RACE=` skips it for a quick local run.
RACE ?= -race
LOCALUP_FLAGS ?=
UNIT_TIMEOUT ?= 20m
INTEGRATION_TIMEOUT ?= 60m
E2E_TIMEOUT ?= 30m
FAULTS_TIMEOUT ?= 30m
# The newest prometheus-operator the module proxy serves here; only its CRDs
# are used (test-e2e), it is not a Go dependency.
PROMETHEUS_OPERATOR_VERSION ?= v0.76.0

# Recursive (=) on purpose: git and `go list` run only when a recipe needs them.
DEVICEFIT_LDFLAGS = $(shell hack/version.sh ldflags)
KUBE_LDFLAGS = $(shell hack/version.sh kube-ldflags)

# Commands other than the scheduler are built as bin/<dir name>.
COMMANDS := $(filter-out scheduler,$(sort $(notdir $(patsubst %/,%,$(dir $(wildcard cmd/*/*.go))))))
TOOLS := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler $(BIN)/kubectl

.PHONY: all build scheduler commands tools skew-tools test test-chart test-unit test-integration test-e2e test-faults \
	fuzz prometheus manifests deploy krew undeploy image run verify verify-gofmt verify-vet verify-tidy verify-codegen generate clean help replay replay-report replay-charts

all: build tools

help: ## show the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 20

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

tools: $(TOOLS) ## bin/etcd, bin/kube-apiserver, bin/kube-controller-manager, bin/kube-scheduler, bin/kubectl from the module graph

# go build leaves an up-to-date binary untouched; the touch marks it newer than
# go.mod so that make stops asking.
$(BIN)/etcd: go.mod go.sum
	$(GO) build -o $@ go.etcd.io/etcd/server/v3
	@touch $@

$(BIN)/kube-apiserver: go.mod go.sum
	$(GO) build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-apiserver
	@touch $@

# The e2e day-2 tests need controllers: evicted pods recreated by their
# ReplicaSet, PodDisruptionBudget status kept by the disruption controller.
$(BIN)/kube-controller-manager: go.mod go.sum
	$(GO) build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-controller-manager
	@touch $@

# The upstream scheduler beside devicefit (test/e2e/coexistence, the local
# run): the packages are devicefit-scheduler's, so it costs a link.
$(BIN)/kube-scheduler: go.mod go.sum
	$(GO) build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-scheduler
	@touch $@

$(BIN)/kubectl: go.mod go.sum
	$(GO) build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kubectl
	@touch $@

# Older control planes for the skew tests (test/e2e/skew) and `make run
# KUBE_VERSION=1.35`: kube-apiserver, kube-controller-manager and etcd of
# the release that hack/tools/kube-<minor> pins (hack/kube-version-module.sh
# writes it), so that the main module keeps one Kubernetes. They share few
# compiled packages with the main module (another k8s.io release), so a cold
# build costs about what the main module's tools cost; after that nothing
# until that go.mod changes. The newest supported minor is the main module's
# own bin/ tools.
KUBE_SKEW_VERSIONS := 1.35 1.36
SKEW_TOOLS := $(foreach v,$(KUBE_SKEW_VERSIONS),$(addprefix $(BIN)/kube-$(v)/,etcd kube-apiserver kube-controller-manager))

skew-tools: $(SKEW_TOOLS) ## bin/kube-<minor>/ control planes of the older supported minors

$(BIN)/kube-%/etcd: hack/tools/kube-%/go.mod hack/tools/kube-%/go.sum
	cd hack/tools/kube-$* && $(GO) build -o $(abspath $@) go.etcd.io/etcd/server/v3
	@touch $@

$(BIN)/kube-%/kube-apiserver: hack/tools/kube-%/go.mod hack/tools/kube-%/go.sum
	cd hack/tools/kube-$* && $(GO) build -ldflags '$(shell hack/version.sh kube-ldflags hack/tools/kube-$*)' \
		-o $(abspath $@) k8s.io/kubernetes/cmd/kube-apiserver
	@touch $@

$(BIN)/kube-%/kube-controller-manager: hack/tools/kube-%/go.mod hack/tools/kube-%/go.sum
	cd hack/tools/kube-$* && $(GO) build -ldflags '$(shell hack/version.sh kube-ldflags hack/tools/kube-$*)' \
		-o $(abspath $@) k8s.io/kubernetes/cmd/kube-controller-manager
	@touch $@

# helm (charts/devicefit, test-chart) comes from a tools module of its own,
# so helm's other dependencies stay out of the main module's go.mod; the
# version is read from that go.mod so that `helm version` reports it.
# hack/align-helm-module.sh keeps that module on the main module's versions
# of what both use (k8s.io/* v0.37.2, golang.org/x/*, ...; verify-tidy
# checks it), and the build has no -trimpath, so bin/helm reuses the
# packages `go vet ./...` compiled. Unaligned, a cold build took 634 s on 2
# cores other builds were also using (2026-12-02); only test-chart and
# test-e2e need it, not build or run.
HELM_MOD := hack/tools/helm
$(BIN)/helm: $(HELM_MOD)/go.mod $(HELM_MOD)/go.sum
	cd $(HELM_MOD) && $(GO) build \
		-ldflags "-X helm.sh/helm/v4/internal/version.version=$$($(GO) list -m -f '{{.Version}}' helm.sh/helm/v4)" \
		-o $(abspath $@) helm.sh/helm/v4/cmd/helm
	@touch $@

test: test-chart test-unit test-integration test-e2e test-faults test-perf-short ## all tests

# The Helm chart (charts/devicefit), statically: lint with the schema
# (values.schema.json), with its defaults and with everything on, then
# render it for each supported Kubernetes minor with the API versions a
# server of that minor serves, and check what each gets (the routing policy
# from 1.36, pod groups where scheduling.k8s.io/v1beta1 is on, NOTES on what
# was left out) and that helm refuses 1.34 naming the supported range
# (hack/test-chart.sh). A few seconds; test/e2e compares the rendering with
# the kustomize base and installs it. helm's own files (cache, config) stay
# under bin/.
CHART := charts/devicefit
HELM_ENV = HELM_CACHE_HOME=$(abspath $(BIN))/helm-home/cache HELM_CONFIG_HOME=$(abspath $(BIN))/helm-home/config \
	HELM_DATA_HOME=$(abspath $(BIN))/helm-home/data
HELM_ALL_ON := --set serviceMonitor.enabled=true,prometheusRule.enabled=true,podGroups.enabled=true,defragmenter.enabled=true

test-chart: $(BIN)/helm ## helm lint --strict, and helm template of charts/devicefit for each supported Kubernetes minor
	$(HELM_ENV) $(BIN)/helm lint --strict $(CHART)
	$(HELM_ENV) $(BIN)/helm lint --strict $(CHART) $(HELM_ALL_ON)
	$(HELM_ENV) hack/test-chart.sh $(BIN)/helm $(CHART)

# Also runs the committed fuzz seed corpora (testdata/fuzz).
test-unit: ## unit tests of pkg/, internal/, cmd/ and the bench report (race detector on)
	$(GO) test $(RACE) -timeout $(UNIT_TIMEOUT) $(GOTESTFLAGS) ./pkg/... ./internal/... ./cmd/... ./test/perf/benchsummary

# In-process etcd and kube-apiserver; needs no binary from bin/.
test-integration: ## integration tests against a real apiserver (race detector on)
	$(GO) test $(RACE) -timeout $(INTEGRATION_TIMEOUT) $(GOTESTFLAGS) ./test/integration/...

# The built binaries end to end: manifests/ with components/routing applied
# (on the real prometheus-operator CRDs), the scheduler under the manifests'
# identity, a real Prometheus scraping it; charts/devicefit rendered against
# them and installed with the README's helm install (TestHelmInstall starts a
# second, short-lived control plane: the first holds the base's objects,
# which helm must not adopt); test/e2e/day2 adds kube-controller-manager for
# kubectl devicefit defrag --apply; test/e2e/skew installs the kustomize
# base and the chart on every supported control-plane minor with its
# default gates (bin/kube-<minor>/, skew-tools) and writes what each showed
# to bin/skew-report.md. -p 1: one test package at a time on
# small machines. PROMETHEUS_OPERATOR_CRDS may name a CRD
# directory instead of the one fetched through the module proxy. -count=1:
# Go's test cache cannot see what the binaries and kubectl read (manifests/),
# so a cached pass could hide a broken manifest.
test-e2e: build tools skew-tools $(BIN)/helm prometheus ## end-to-end tests with bin/, the manifests, the Helm chart and a real Prometheus
	@crds="$${PROMETHEUS_OPERATOR_CRDS:-$$(hack/prometheus-operator-crds.sh $(PROMETHEUS_OPERATOR_VERSION))}"; \
	echo "DEVICEFIT_BIN_DIR=$(abspath $(BIN)) PROMETHEUS_OPERATOR_CRDS=$$crds $(GO) test -p 1 -count=1 -timeout $(E2E_TIMEOUT) $(GOTESTFLAGS) ./test/e2e ./test/e2e/day2 ./test/e2e/coexistence ./test/e2e/skew"; \
	DEVICEFIT_BIN_DIR="$(abspath $(BIN))" PROMETHEUS_OPERATOR_CRDS="$$crds" DEVICEFIT_SKEW_REPORT="$(abspath $(BIN))/skew-report.md" \
		$(GO) test -p 1 -count=1 -timeout $(E2E_TIMEOUT) $(GOTESTFLAGS) ./test/e2e ./test/e2e/day2 ./test/e2e/coexistence ./test/e2e/skew

# Fault injection with the built binaries (test/e2e/faults, a control plane
# of its own): leader failover with SIGKILL (2000 pods, the takeover time in
# the log), kube-apiserver stopped and restarted on the same etcd, the
# scheduler stopped and killed with pods in flight, device churn (unhealthy
# GPU, deleted node, relabelled product, MIG single to mixed), each ending
# with the same invariant checker. -v: the takeover time and each check's
# summary are t.Log lines.
test-faults: build tools prometheus ## fault tests: failover, apiserver and scheduler restarts, device churn
	@crds="$${PROMETHEUS_OPERATOR_CRDS:-$$(hack/prometheus-operator-crds.sh $(PROMETHEUS_OPERATOR_VERSION))}"; \
	echo "DEVICEFIT_BIN_DIR=$(abspath $(BIN)) PROMETHEUS_OPERATOR_CRDS=$$crds $(GO) test -count=1 -v -timeout $(FAULTS_TIMEOUT) $(GOTESTFLAGS) ./test/e2e/faults"; \
	DEVICEFIT_BIN_DIR="$(abspath $(BIN))" PROMETHEUS_OPERATOR_CRDS="$$crds" \
		$(GO) test -count=1 -v -timeout $(FAULTS_TIMEOUT) $(GOTESTFLAGS) ./test/e2e/faults

# scheduler_perf (test/perf, docs/performance.md): upstream's benchmark
# harness with the devicefit plugins in its out-of-tree registry, the upstream
# default profile against the devicefit profile on the same GPU fleet, in one
# run. It starts etcd from PATH, hence bin/etcd. test-perf-short runs the
# 500-node workloads (label short) as a correctness check: every pod bound,
# no device overcommitted, no devicefit pod on devices its annotations
# reject, no throughput threshold. bench runs the 5000-node workloads (label
# performance, BENCH_LABELS) and the plugins' micro-benchmarks, writes
# scheduler_perf's JSON data items (and .dat, and with PERF_FLAGS=-perf-cpuprofile
# CPU profiles) into bench/, and prints one table that ends with the
# devicefit/default throughput ratio of BENCH_RATIO (GPUFleet/5000Nodes_10000Pods).
.PHONY: test-perf-short bench
PERF_FLAGS ?=
BENCH_LABELS ?= performance
# Each case runs in a process of its own, so that one case's heap and caches
# do not slow the next (issue 39); BENCH_CASES= runs every workload
# BENCH_LABELS selects in one process (e.g. BENCH_LABELS=batching).
BENCH_CASES ?= GPUFleet_Default/5000Nodes_10000Pods GPUFleet_DeviceFit/5000Nodes_10000Pods \
	GPUFleetChurn_Default/5000Nodes_5000Pods GPUFleetChurn_DeviceFit/5000Nodes_5000Pods \
	DRAFleet_Default/1000Nodes_1500Pods DRAFleet_DeviceFit/1000Nodes_1500Pods \
	GPUFleet_Default/15000Nodes_10000Pods GPUFleet_DeviceFit/15000Nodes_10000Pods \
	GPUFleetChurn_Default/15000Nodes_5000Pods GPUFleetChurn_DeviceFit/15000Nodes_5000Pods
# The workload whose devicefit/default throughput ratio ends the table.
BENCH_RATIO ?= GPUFleet/5000Nodes_10000Pods
BENCH_DIR := bench
PERF_SHORT_DIR := $(BIN)/perf-short
PERF_TIMEOUT ?= 180m
# KUBE_CACHE_MUTATION_DETECTOR=false: client-go's DeepEqual checks are off in
# production and would dominate the profile (scheduler_perf's README).
PERF_ENV = PATH="$(abspath $(BIN)):$$PATH" KUBE_CACHE_MUTATION_DETECTOR=false
# The go test output (klog of apiserver and scheduler) goes to a log file;
# the terminal gets the test and benchmark verdicts.
PERF_PROGRESS = grep --line-buffered -E '^(--- FAIL|FAIL|ok |PASS|BenchmarkPerfScheduling/)' | sed -u -E 's/^(BenchmarkPerfScheduling[^ \t]*)[ \t].*/done: \1/'

test-perf-short: $(BIN)/etcd ## scheduler_perf 500-node workloads, both profiles: correctness check, no threshold
	@rm -rf $(PERF_SHORT_DIR); mkdir -p $(PERF_SHORT_DIR)
	@echo "cd test/perf && go test -count=1 . -run TestNoSpreadConfigs -bench BenchmarkPerfScheduling -benchtime=1x -perf-scheduling-label-filter=short -data-items-dir=$(PERF_SHORT_DIR) (log: $(PERF_SHORT_DIR)/go-test.log)"
	@cd test/perf && $(PERF_ENV) $(GO) test -count=1 -timeout 30m $(GOTESTFLAGS) . \
		-run '^TestNoSpreadConfigs$$' -bench '^BenchmarkPerfScheduling$$' -benchtime=1x \
		-perf-scheduling-label-filter=short -data-items-dir=$(abspath $(PERF_SHORT_DIR)) $(PERF_FLAGS) 2>&1 \
		| tee $(abspath $(PERF_SHORT_DIR))/go-test.log | $(PERF_PROGRESS) \
		|| { echo "test-perf-short failed; the end of $(PERF_SHORT_DIR)/go-test.log:"; tail -n 60 $(abspath $(PERF_SHORT_DIR))/go-test.log; exit 1; }
	@echo "test-perf-short passed. 500 nodes are a correctness run: the throughput figures below are noise."
	$(GO) run ./test/perf/benchsummary -ratio GPUFleet/500Nodes -dra-ratio DRAFleet/200Nodes $(PERF_SHORT_DIR)/*.json

bench: $(BIN)/etcd ## scheduler_perf 5000- and 15000-node comparison, each case in its own process, + micro-benchmarks: table, JSON in bench/, the devicefit/default ratio
	@mkdir -p $(BENCH_DIR); touch $(BENCH_DIR)/.start
	$(GO) test -run '^$$' -bench 'Score|Filter|StrandingWorkload' -benchmem ./pkg/plugins/devicepack ./pkg/plugins/devicefit 2>&1 | tee $(BENCH_DIR)/micro.txt
	$(GO) test -run '^$$' -bench Collect -benchmem ./pkg/metrics 2>&1 | tee -a $(BENCH_DIR)/micro.txt
	$(GO) test -run '^$$' -bench Replay -benchtime 3x ./pkg/replay 2>&1 | tee -a $(BENCH_DIR)/micro.txt
	cd test/perf && $(GO) test -c -o $(abspath $(BIN))/perf.test .
	@rm -f $(BENCH_DIR)/go-test.log
	@for c in $(if $(BENCH_CASES),$(BENCH_CASES),all); do \
		case $$c in all) filter='^BenchmarkPerfScheduling$$';; \
			*) filter="^BenchmarkPerfScheduling\$$/^$${c%%/*}\$$/^$${c#*/}\$$";; esac; \
		echo "cd test/perf && $(BIN)/perf.test -test.run '^$$' -test.bench '$$filter' -test.benchtime=1x -perf-scheduling-label-filter=$(BENCH_LABELS) -data-items-dir=$(BENCH_DIR) $(PERF_FLAGS) (log: $(BENCH_DIR)/go-test.log)"; \
		( cd test/perf && $(PERF_ENV) $(abspath $(BIN))/perf.test -test.count=1 -test.timeout $(PERF_TIMEOUT) \
			-test.run '^$$' -test.bench "$$filter" -test.benchtime=1x \
			-perf-scheduling-label-filter=$(BENCH_LABELS) -data-items-dir=$(abspath $(BENCH_DIR)) $(PERF_FLAGS) 2>&1 ) \
			| tee -a $(abspath $(BENCH_DIR))/go-test.log | $(PERF_PROGRESS); \
		if [ $${PIPESTATUS[0]} -ne 0 ]; then echo "bench failed; the end of $(BENCH_DIR)/go-test.log:"; tail -n 60 $(abspath $(BENCH_DIR))/go-test.log; exit 1; fi; \
	done
	@echo
	$(GO) run ./test/perf/benchsummary -micro $(BENCH_DIR)/micro.txt -ratio $(BENCH_RATIO) \
		$$(find $(BENCH_DIR) -maxdepth 1 -newer $(BENCH_DIR)/.start \( -name 'BenchmarkPerfScheduling_*.json' -o -name '*-cpu.prof' \) | sort)

# bench-gangs (issue 14, docs/placement.md): the GangMix pair (label
# gangmix, generated in test/perf/gangmix_test.go): seeds 42-46 of a job mix
# of single pods and gangs arriving in 8 waves over 10 NVLink cliques (each
# wave 0.3x the fleet's GPUs, each job leaving 1-4 waves later), after 25%,
# 50% and 100% of the waves, under the upstream default profile and
# devicefit; the gang table: GPUs allocated and in gangs,
# groups placed, whole domains, stranded devices, pods/s. Then the
# CliqueFleet/360Nodes_60Gangs pair, three runs per profile, timed from the
# first PodGroup to the last bind (test/perf/bindspan_test.go).
.PHONY: bench-gangs
BENCH_GANGS_DIR := $(BENCH_DIR)/gangs
bench-gangs: $(BIN)/etcd ## scheduler_perf GangMix: seeds 42-46, upstream default vs devicefit, the gang table
	@rm -rf $(BENCH_GANGS_DIR); mkdir -p $(BENCH_GANGS_DIR)
	@echo "cd test/perf && go test -count=1 . -run '^$$' -bench BenchmarkPerfScheduling -benchtime=1x -perf-scheduling-label-filter=gangmix -data-items-dir=$(BENCH_GANGS_DIR) (log: $(BENCH_GANGS_DIR)/go-test.log)"
	@cd test/perf && $(PERF_ENV) $(GO) test -count=1 -timeout 40m $(GOTESTFLAGS) . \
		-run '^$$' -bench '^BenchmarkPerfScheduling$$' -benchtime=1x \
		-perf-scheduling-label-filter=gangmix -data-items-dir=$(abspath $(BENCH_GANGS_DIR)) $(PERF_FLAGS) 2>&1 \
		| tee $(abspath $(BENCH_GANGS_DIR))/go-test.log | $(PERF_PROGRESS) \
		|| { echo "bench-gangs failed; the end of $(BENCH_GANGS_DIR)/go-test.log:"; tail -n 60 $(abspath $(BENCH_GANGS_DIR))/go-test.log; exit 1; }
	$(GO) run ./test/perf/benchsummary -gangs $(BENCH_GANGS_DIR)/*.json

# Coverage-guided fuzzing, one target after another (go test runs one -fuzz
# target at a time); the seed corpora alone run in test-unit. A crash leaves
# its input in the package's testdata/fuzz/<target>/: commit it as a seed.
FUZZTIME ?= 30s
FUZZ_TARGETS := ./pkg/devices:FuzzParseSelector ./pkg/devices:FuzzProductPattern \
	./pkg/devices:FuzzDescribe ./pkg/devices:FuzzPodDemand \
	./pkg/apis/config:FuzzDeviceFitArgs ./pkg/apis/config:FuzzDevicePackArgs

fuzz: ## fuzz every target for FUZZTIME each (default 30s)
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "$(GO) test $$pkg -run '^$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME)"; \
		log=$$(mktemp); \
		if $(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) > $$log 2>&1; then \
			tail -n 3 $$log; rm -f $$log; \
		else \
			grep -v '^fuzz: elapsed' $$log | tail -n 40; rm -f $$log; exit 1; \
		fi; \
	done

prometheus: ## prometheus and promtool on PATH (apt-get install prometheus when missing)
	hack/install-prometheus.sh

# Deployment (manifests/, README "Deploy to a cluster"). IMG replaces the
# image of the kustomize base through a generated overlay in bin/deploy, so
# manifests/ itself is never edited; KUBECTL defaults to the one built from
# the pinned module graph, run against the current kubeconfig context.
# MANIFEST_COMPONENTS names the components of manifests/components/ the
# overlay adds to the base, which installs on the oldest supported minor:
# routing (the MutatingAdmissionPolicy, admissionregistration.k8s.io/v1,
# served by default from Kubernetes 1.36) unless told otherwise. On a 1.35
# cluster: make deploy MANIFEST_COMPONENTS= (device pods then name
# spec.schedulerName themselves); with node ownership: MANIFEST_COMPONENTS="routing
# node-ownership".
IMG ?=
KUBECTL ?= $(BIN)/kubectl
DEPLOY_DIR := $(BIN)/deploy
MANIFEST_COMPONENTS ?= routing

manifests: $(BIN)/kubectl ## render manifests/ with MANIFEST_COMPONENTS (image IMG if set) into bin/manifests.yaml
	@mkdir -p $(DEPLOY_DIR)
	@for c in $(MANIFEST_COMPONENTS); do \
	  if [[ ! -f manifests/components/$$c/kustomization.yaml ]]; then \
	    echo "manifests: no component manifests/components/$$c (MANIFEST_COMPONENTS=$(MANIFEST_COMPONENTS))" >&2; exit 2; \
	  fi; \
	done
	@{ echo "# Generated by make manifests: manifests/ with the image set to IMG and MANIFEST_COMPONENTS."; \
	  echo "apiVersion: kustomize.config.k8s.io/v1beta1"; \
	  echo "kind: Kustomization"; \
	  echo "resources: [../../manifests]"; \
	  components="$(strip $(foreach c,$(MANIFEST_COMPONENTS),../../manifests/components/$(c)))"; \
	  if [[ -n "$$components" ]]; then echo "components: [$${components// /, }]"; fi; \
	  if [[ -n "$(IMG)" ]]; then \
	    img="$(IMG)"; name="$${img%:*}"; tag="$${img##*:}"; \
	    if [[ "$$name" == "$$img" || "$$tag" == */* ]]; then name="$$img"; tag=latest; fi; \
	    echo "images: [{name: ghcr.io/devicefit/devicefit-scheduler, newName: $$name, newTag: $$tag}]"; \
	  fi; } > $(DEPLOY_DIR)/kustomization.yaml
	$(BIN)/kubectl kustomize $(DEPLOY_DIR) > $(BIN)/manifests.yaml
	@echo "manifests: $(BIN)/manifests.yaml ($$(grep -c '^kind:' $(BIN)/manifests.yaml) objects; components: $(or $(strip $(MANIFEST_COMPONENTS)),none))"

deploy: manifests ## kubectl apply --server-side the manifests to the current context (IMG=registry/image:tag, MANIFEST_COMPONENTS= on 1.35)
	$(KUBECTL) apply --server-side --field-manager=devicefit -f $(BIN)/manifests.yaml
	$(KUBECTL) -n devicefit-system rollout status deployment/devicefit-scheduler --timeout=5m

undeploy: manifests ## delete what deploy created from the current context
	$(KUBECTL) delete --ignore-not-found -f $(BIN)/manifests.yaml

image: ## the container image (Dockerfile) as IMG, with docker or podman
	@if [[ -z "$(IMG)" ]]; then echo "image: set IMG=registry/devicefit-scheduler:tag"; exit 2; fi
	$${CONTAINER_TOOL:-docker} build --build-arg VERSION="$$(hack/version.sh version)" -t $(IMG) .

# Release archives of the kubectl plugin for krew (.krew.yaml): one per
# platform, each the static binary and README.md. Cross-compiling the plugin
# four times takes minutes; not part of build or test.
KREW_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
KREW_DIR := $(BIN)/krew
krew: ## kubectl-devicefit release archives for krew in bin/krew/ (VERSION=vX.Y.Z, default hack/version.sh)
	@version="$${VERSION:-$$(hack/version.sh version)}"; rm -rf $(KREW_DIR); mkdir -p $(KREW_DIR); \
	for p in $(KREW_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; dir=$(KREW_DIR)/$$os-$$arch; mkdir -p $$dir; \
		echo "GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -o $$dir/kubectl-devicefit ./cmd/kubectl-devicefit"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(DEVICEFIT_LDFLAGS)' -o $$dir/kubectl-devicefit ./cmd/kubectl-devicefit; \
		cp README.md $$dir/; \
		tar -C $$dir -czf $(KREW_DIR)/kubectl-devicefit_$${version}_$${os}_$${arch}.tar.gz kubectl-devicefit README.md; \
	done; \
	cd $(KREW_DIR) && sha256sum *.tar.gz

# KUBE_VERSION=1.35 (or 1.36) runs the local run's control plane of that
# minor from bin/kube-<minor>/ (skew-tools, only that minor's three
# binaries); empty or the newest, bin/'s own. localup refuses any other.
KUBE_VERSION ?=
RUN_SKEW_TOOLS = $(if $(filter $(KUBE_VERSION),$(KUBE_SKEW_VERSIONS)),$(addprefix $(BIN)/kube-$(KUBE_VERSION)/,etcd kube-apiserver kube-controller-manager))

run: build tools $(RUN_SKEW_TOOLS) ## the local run: control plane (KUBE_VERSION=1.35: of that minor), GPU fleet, scheduler, workload
	$(BIN)/localup --bin-dir $(BIN) --config manifests/scheduler-config.yaml $(if $(KUBE_VERSION),--kube-version $(KUBE_VERSION)) $(LOCALUP_FLAGS)

# Trace replay (cmd/replay, docs/placement.md). The Alibaba GPU trace v2023
# is not part of the repository (research use only); it is looked for next to
# the clone.
REPLAY_TRACES ?= ../shared/traces/alibaba-gpu-v2023
REPLAY_NODES ?= $(REPLAY_TRACES)/openb_node_list_gpu_node.csv
REPLAY_PODS ?= $(REPLAY_TRACES)/openb_pod_list_multigpu50.csv
REPLAY_FLAGS ?=
REPLAY_FALLBACK := pkg/replay/testdata/mixed.yaml
# default is FGD's headline trace: gpuspec10 without its gpu_spec column
# (replay variant --no-products), made here instead of read.
REPORT_WORKLOADS ?= default multigpu20 multigpu30 multigpu40 multigpu50 gpuspec05 gpuspec10
# The workloads replayed again with the fleet's GPUs in DRA ResourceSlices
# (--devices dra; upstream DynamicResources allocates, about 15x slower).
REPORT_DRA_WORKLOADS ?= multigpu50 gpuspec10
# The workloads replayed a third time with fractional pods as shares of
# shared DRA GPUs (--fractional dra-shares, KEP-5075; allocation in
# milli-GPU, FGD's published setting), beside FGD's own figures
# (REPORT_FGD). The share* and cpu* workloads are variants of the default
# trace drawn per seed (replay variant, REPORT_VARIANTS), the shapes of the
# FGD paper's gpushare and cpu traces: share060 makes 60% of the GPU pods
# fractional; cpu035 keeps 0.35 and cpu220 draws 2.2 times the CPU-only
# pods (FGD's cpu050 has 375 of the default's 1088, cpu250 2356).
# REPORT_SHARES_POLICIES: upstream's NodeResourcesFit scores DRA-backed
# nvidia.com/gpu by walking every allocated share for every device
# (v1.37.2), which makes mostallocated alone take minutes per seed
# (docs/placement.md); add it by hand.
REPORT_SHARES_WORKLOADS ?= default gpuspec05 gpuspec10 multigpu20 multigpu30 multigpu40 multigpu50 share040 share060 share100 cpu035 cpu220
REPORT_SHARES_POLICIES ?= default,devicefit
# REPORT_SHARES_ORDER: fgd replays, for each seed, the very arrival sequence
# FGD's simulator builds for that seed (replay --order fgd), so the
# summary's FGD column is the same arrivals, seed by seed; shuffle is the
# replay's own draw of the same shape (docs/placement.md).
REPORT_SHARES_ORDER ?= fgd
REPORT_VARIANTS ?= share040:--fractional-share=0.4 share060:--fractional-share=0.6 share100:--fractional-share=1 cpu035:--cpu-pods=0.35 cpu220:--cpu-pods=2.2
REPORT_FGD ?= $(REPLAY_TRACES)/fgd-expected-results/analysis_allo_discrete.csv
REPORT_SEEDS ?= 42 43 44 45 46
REPORT_DIR := docs/replay
REPORT_WORK := $(BIN)/replay-report

$(BIN)/replay: FORCE
	$(GO) build -ldflags '$(DEVICEFIT_LDFLAGS)' -o $@ ./cmd/replay

replay: $(BIN)/replay ## one replay: REPLAY_PODS (default the shared multigpu50 trace), REPLAY_NODES, REPLAY_FLAGS
	@if [[ -f "$(REPLAY_NODES)" && -f "$(REPLAY_PODS)" ]]; then \
		echo "$(BIN)/replay --nodes $(REPLAY_NODES) --pods $(REPLAY_PODS) $(REPLAY_FLAGS)"; \
		$(BIN)/replay --nodes "$(REPLAY_NODES)" --pods "$(REPLAY_PODS)" $(REPLAY_FLAGS); \
	else \
		echo "replay: $(REPLAY_NODES) or $(REPLAY_PODS) not found (the trace is not in the repository);"; \
		echo "replay: replaying the made-up scenario $(REPLAY_FALLBACK) instead"; \
		$(BIN)/replay --nodes $(REPLAY_FALLBACK) --pods $(REPLAY_FALLBACK) $(REPLAY_FLAGS); \
	fi

# The defragmentation budget tables and chart of docs/defragmentation.md
# (issue 40): the replay with its defragmenter in the loop, per mode
# (fractional as DRA shares, whole GPUs), trace, move budget and seed
# (DEFRAG_MODES, DEFRAG_TRACES, DEFRAG_BUDGETS, REPORT_SEEDS), into
# bin/replay-defrag/ (budgets.svg beside the JSON). Resumes where a stopped
# run left off. 0.5-4 minutes per fractional run on 2 cores, seconds per
# whole-GPU run.
DEFRAG_MODES ?= fractional whole
DEFRAG_TRACES ?= default multigpu50
DEFRAG_BUDGETS ?= 1 0 0.1 0.5 2
.PHONY: replay-defrag
replay-defrag: $(BIN)/replay ## the move-budget tables and chart (needs ../shared/traces/alibaba-gpu-v2023)
	MODES="$(DEFRAG_MODES)" TRACES="$(DEFRAG_TRACES)" BUDGETS="$(DEFRAG_BUDGETS)" SEEDS="$(REPORT_SEEDS)" \
		hack/replay-defrag.sh $(BIN)/replay "$(REPLAY_TRACES)" $(BIN)/replay-defrag

# The soak (issue 25, docs/performance.md "Soak"): SOAK_ARRIVALS pod
# arrivals, and the departures that keep 80-90% of the devices taken, through
# the deployed profile on a generated SOAK_NODES-node fleet; fails when the
# live heap of the last tenth exceeds the first tenth's by more than 10%, or
# its CPU time per arrival by more than 20%. Not in CI (~32 min on 2 cores);
# make test runs a short one (TestSoakClassesStayBounded).
SOAK_NODES ?= 1000
SOAK_ARRIVALS ?= 1000000
.PHONY: soak
soak: $(BIN)/replay ## 1M arrivals and departures, 1000 nodes: live heap and CPU per pod must not grow
	$(BIN)/replay soak --nodes $(SOAK_NODES) --arrivals $(SOAK_ARRIVALS)

# The charts of docs/replay drawn again from the JSON next to them (replay
# svg): a change of the chart's layout needs no trace and no replay.
replay-charts: $(BIN)/replay ## redraw docs/replay/*-seed42.svg from their JSON
	@for j in $(REPORT_DIR)/*-seed42.json; do \
		svg=$${j%.json}.svg; [[ -f $$svg ]] || continue; \
		echo "$(BIN)/replay svg $$j $$svg"; $(BIN)/replay svg $$j $$svg; \
	done

# Every workload and seed, one after another (each replay uses every core);
# the JSON of seed 42 and its chart go to docs/replay/, the others stay in
# bin/replay-report/ for the summary table. About 10 minutes on 2 cores, and
# 50 more for the DRA mode (REPORT_DRA_WORKLOADS= skips it; measured before
# the replay committed allocations, 2026-12-02, which made it faster), and
# about 5 per workload and seed for the shares mode (REPORT_SHARES_WORKLOADS=
# skips it), most of it mostallocated's.
replay-report: ## the runs behind docs/placement.md (needs ../shared/traces/alibaba-gpu-v2023)
	@if [[ ! -d "$(REPLAY_TRACES)" ]]; then \
		echo "replay-report: $(REPLAY_TRACES) not found. The Alibaba GPU trace v2023 is not part of"; \
		echo "replay-report: this repository; put its CSV files there (or set REPLAY_TRACES) to regenerate"; \
		echo "replay-report: docs/replay/. Nothing to do."; \
		exit 0; \
	fi; \
	echo "$(GO) build -o $(BIN)/replay ./cmd/replay"; \
	$(GO) build -ldflags '$(DEVICEFIT_LDFLAGS)' -o $(BIN)/replay ./cmd/replay; \
	mkdir -p $(REPORT_DIR) $(REPORT_WORK)/variants; \
	$(BIN)/replay variant --pods "$(REPLAY_TRACES)/openb_pod_list_gpuspec10.csv" --no-products \
		--out $(REPORT_WORK)/variants/default.csv || exit 1; \
	for s in $(REPORT_SEEDS); do \
		for v in $(REPORT_VARIANTS); do \
			$(BIN)/replay variant --pods $(REPORT_WORK)/variants/default.csv --seed $$s $${v#*:} \
				--out $(REPORT_WORK)/variants/seed$$s/$${v%%:*}.csv || exit 1; \
		done; \
	done; \
	trace() { \
		local f=$(REPORT_WORK)/variants/seed$$2/$$1.csv; \
		[[ -f $$f ]] || f=$(REPORT_WORK)/variants/$$1.csv; \
		[[ -f $$f ]] || f="$(REPLAY_TRACES)/openb_pod_list_$$1.csv"; \
		echo "$$f"; \
	}; \
	for w in $(REPORT_WORKLOADS); do \
		for s in $(REPORT_SEEDS); do \
			out=$(REPORT_WORK)/$$w-seed$$s; \
			svg=(); [[ $$s == 42 ]] && svg=(--svg $(REPORT_DIR)/$$w-seed42.svg); \
			echo "replay-report: $$w seed $$s"; \
			$(BIN)/replay --nodes "$(REPLAY_NODES)" --pods "$$(trace $$w $$s)" \
				--fractional round-up --tune 1.3 --order shuffle --seed $$s --timing --quiet \
				--json $$out.json --failed-pods $$out-failed.csv "$${svg[@]}" $(REPLAY_FLAGS) > $$out.txt; \
			[[ $$s == 42 ]] && cp $$out.json $(REPORT_DIR)/$$w-seed42.json; \
		done; \
	done; \
	for w in $(REPORT_DRA_WORKLOADS); do \
		for s in $(REPORT_SEEDS); do \
			out=$(REPORT_WORK)/$$w-dra-seed$$s; \
			echo "replay-report: $$w seed $$s, --devices dra"; \
			$(BIN)/replay --nodes "$(REPLAY_NODES)" --pods "$$(trace $$w $$s)" \
				--fractional round-up --tune 1.3 --order shuffle --seed $$s --timing --quiet --devices dra \
				--json $$out.json --failed-pods $$out-failed.csv $(REPLAY_FLAGS) > $$out.txt; \
			[[ $$s == 42 ]] && cp $$out.json $(REPORT_DIR)/$$w-dra-seed42.json; \
		done; \
	done; \
	for w in $(REPORT_SHARES_WORKLOADS); do \
		for s in $(REPORT_SEEDS); do \
			out=$(REPORT_WORK)/$$w-shares-seed$$s; \
			echo "replay-report: $$w seed $$s, --fractional dra-shares --devices dra"; \
			$(BIN)/replay --nodes "$(REPLAY_NODES)" --pods "$$(trace $$w $$s)" \
				--fractional dra-shares --tune 1.3 --order $(REPORT_SHARES_ORDER) --seed $$s --timing --quiet --devices dra \
				--policies $(REPORT_SHARES_POLICIES) \
				--json $$out.json --failed-pods $$out-failed.csv $(REPLAY_FLAGS) > $$out.txt; \
			[[ $$s == 42 ]] && cp $$out.json $(REPORT_DIR)/$$w-shares-seed42.json; \
		done; \
	done; \
	results=(); declare -A seen; \
	for w in $(REPORT_WORKLOADS) $(REPORT_DRA_WORKLOADS) $(REPORT_SHARES_WORKLOADS); do \
		[[ -n "$${seen[$$w]:-}" ]] && continue; seen[$$w]=1; \
		for list in "$(REPORT_WORKLOADS):" "$(REPORT_DRA_WORKLOADS):-dra" "$(REPORT_SHARES_WORKLOADS):-shares"; do \
			[[ " $${list%:*} " == *" $$w "* ]] || continue; \
			for s in $(REPORT_SEEDS); do results+=($(REPORT_WORK)/$$w$${list##*:}-seed$$s.json); done; \
		done; \
	done; \
	fgd=(); [[ -f "$(REPORT_FGD)" ]] && fgd=(--fgd "$(REPORT_FGD)"); \
	$(BIN)/replay summary "$${fgd[@]}" "$${results[@]}" > $(REPORT_DIR)/summary.md; \
	echo; echo "Unallocated devices at 100% arrived (round-up, tune 1.3, seed 42):"; \
	for w in $(REPORT_WORKLOADS) $(patsubst %,%-dra,$(REPORT_DRA_WORKLOADS)) $(patsubst %,%-shares,$(REPORT_SHARES_WORKLOADS)); do \
		[[ -f $(REPORT_WORK)/$$w-seed42.txt ]] || continue; \
		echo "  $$w:"; \
		awk '$$2 == "100" { printf "    %-14s unallocated %6s%%  fragmented %5s%%  failed pods %s\n", $$1, $$4, $$5, $$6 }' $(REPORT_WORK)/$$w-seed42.txt; \
	done; \
	echo; echo "Over seeds $(REPORT_SEEDS) ($(REPORT_DIR)/summary.md):"; cat $(REPORT_DIR)/summary.md

verify: verify-gofmt verify-vet verify-tidy verify-codegen ## gofmt, go vet, go mod tidy, generated code

verify-gofmt:
	hack/verify-gofmt.sh

verify-vet:
	$(GO) vet ./...

# The helm tools module too: its go.sum must stay complete for $(BIN)/helm,
# and its versions the main module's (hack/align-helm-module.sh); and the
# older control planes' modules (hack/tools/kube-<minor>).
verify-tidy:
	$(GO) mod tidy -diff
	cd $(HELM_MOD) && $(GO) mod tidy -diff
	for v in $(KUBE_SKEW_VERSIONS); do (cd hack/tools/kube-$$v && $(GO) mod tidy -diff); done
	hack/align-helm-module.sh --verify

# The deepcopy, conversion and defaulting code of pkg/apis
# (zz_generated.*.go) comes from k8s.io/code-generator, a tool of go.mod, as
# upstream kube-scheduler's does. `go tool` builds the three generators into
# Go's cache on first use (about 1 minute on 2 cores from an empty GOCACHE);
# then verify-codegen takes about 15 s, each generator type-checking pkg/apis
# and its dependencies from source.
generate: ## regenerate pkg/apis/**/zz_generated.*.go and manifests/components/routing/routing-policy.yaml
	hack/update-codegen.sh
	$(GO) run ./cmd/kubectl-devicefit routing-policy --config manifests/scheduler-config.yaml > manifests/components/routing/routing-policy.yaml

verify-codegen: ## fail, showing the diff, when pkg/apis/**/zz_generated.*.go are stale
	hack/verify-codegen.sh

FORCE:

clean: ## remove bin/ and the temp dirs kept by failed local runs and e2e tests
	rm -rf $(BIN)
	rm -rf "$${TMPDIR:-/tmp}"/devicefit-localup-* "$${TMPDIR:-/tmp}"/devicefit-e2e-*

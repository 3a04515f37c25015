// Package e2e runs devicefit end to end with the built binaries of bin/:
// etcd and kube-apiserver on 127.0.0.1 (internal/controlplane), the
// manifests/ kustomize base with components/routing (what `make deploy`
// applies; bin/ is Kubernetes 1.37) applied with bin/kubectl, bin/devicefit-scheduler
// running with the manifests' configuration and RBAC identity, and a real
// Prometheus scraping it. No kubelet and no controller-manager run: nodes are
// API objects whose status the tests write, pods are bound, never started.
//
// Run it with `make test-e2e`, which builds the binaries, installs Prometheus
// (hack/install-prometheus.sh), fetches the prometheus-operator CRDs
// (hack/prometheus-operator-crds.sh) and passes their locations:
//
//	DEVICEFIT_BIN_DIR         bin/ with etcd, kube-apiserver, kubectl, devicefit-scheduler
//	PROMETHEUS_OPERATOR_CRDS  the operator's example/prometheus-operator-crd directory
//	DEVICEFIT_MANIFESTS       optional: a kustomize directory to test, as it is, instead of manifests/ with components/routing
//
// Layout:
//   - main_test.go         TestMain: one control plane for the package, manifests applied once
//   - kubectl_test.go      bin/kubectl with the admin kubeconfig
//   - manifests_test.go    CRDs, kustomize build, apply; TestManifestsApply
//   - objects_test.go      namespaces, tokens, pods: helpers for every test
//   - podsecurity_test.go  TestPodSecurityRestricted
//   - scheduler_test.go    the scheduler under the manifests' identity; TestSchedulerWithManifestsRBAC
//   - fleet_test.go        the simulated GPU fleet and the scenario's pods
//   - secureport_test.go   TestSecurePortRefusesAnonymous
//   - prometheus_test.go   a real Prometheus; TestPrometheusScrapesScheduler
//   - rules_test.go        TestPrometheusRulesPromtool
//   - inventory_test.go    kubectl devicefit inventory against the gauges
//   - explain_test.go      kubectl devicefit explain against the scheduler's messages
//   - snapshot_test.go     kubectl devicefit snapshot through bin/replay
//
// What other e2e packages need too (kubectl, the manifests' install, the
// ServiceAccount identity, the deployed configuration, device pods, GFD
// labels) lives in internal/e2eutil; the functions here wrap it.
//
// Shared fixtures (the scheduler, the scenario) start on first use, so any
// test runs alone too: go test ./test/e2e/ -run TestPrometheus (with the
// variables above set). A new test that needs the applied manifests calls
// requireManifests(t); renderedObjects(t, kind) gives the kustomize output;
// devicePod and createPods (with metav1.DryRunAll for admission checks) make
// pods for the devicefit scheduler in a newNamespace(t).
package e2e

import (
	"context"
	"sync"
	"testing"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
)

// suite is the state the whole package shares.
type suite struct {
	// What TestMain started, and short names for it.
	env           e2eutil.Env
	binDir        string
	crdDir        string
	manifests     string // the kustomize base, manifests/ of the repository
	kustomization string // what TestMain builds and applies: the base with components/routing
	dir           string // the control plane's directory: logs, kubeconfigs, certificates
	cp            *controlplane.ControlPlane

	// The kustomize build and its apply, done once in TestMain.
	crdsErr   error
	rendered  []byte
	objects   []object
	renderErr error
	applyOut  string
	applyErr  error

	schedOnce sync.Once
	sched     *scheduler
	schedErr  error

	scenarioOnce sync.Once
	scenario     *scenarioResult
	scenarioErr  error
}

var s suite

func TestMain(m *testing.M) {
	s.env.Main(m, e2eutil.Options{
		Name:   "test/e2e",
		Target: "make test-e2e",
		// The base installs on the oldest supported minor; bin/'s
		// kube-apiserver serves admissionregistration.k8s.io/v1
		// MutatingAdmissionPolicy, so the routing policy is tested too
		// (routing_test.go), and the chart, which renders it where it is
		// served, is compared with both (helm_test.go).
		Components: []string{"routing"},
		Setup: func(ctx context.Context) error {
			e := &s.env
			s.binDir, s.crdDir, s.manifests, s.dir, s.cp = e.BinDir, e.CRDDir, e.Manifests, e.Dir, e.CP
			s.kustomization = e.Kustomization
			// Failures here are reported by TestManifestsApply; the tests
			// that need the applied manifests fail with the same error
			// (requireManifests).
			setupManifests(ctx)
			return nil
		},
	})
}

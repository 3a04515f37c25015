// Package e2eutil is what the end-to-end test packages (test/e2e,
// test/e2e/day2 and test/e2e/faults) share on top of internal/controlplane,
// in the manner of upstream's test/integration/framework: small named
// helpers that fail the test themselves (t.Helper) and clean up after it
// (t.Cleanup).
//
//   - main.go: Env.Main, a package's whole TestMain: one control plane from DEVICEFIT_BIN_DIR, the manifests, controllers, Setup
//   - schedulerprocess.go: Env.StartScheduler and Env.RunScheduler: bin/devicefit-scheduler as the manifests run it
//   - scheduler.go: the deployed KubeSchedulerConfiguration, rendered for a process here
//   - apiserver.go: RestartAPIServer: kube-apiserver stopped and started again on the same etcd
//   - nodes.go: Node: a simulated node of a test fleet, registered Ready
//   - pods.go: DevicePod, CreatePods
//   - testing.go: TestContext (a logger writing to t.Log), CreateNamespace
//   - manifests.go, kubectl.go, identity.go: the install, bin/kubectl, the ServiceAccount's identity
//
// What the API server holds after a run (DRA state, over-commitment, which
// scheduler bound a pod) is checked by internal/clustercheck, which the
// local run uses too.
//
// A new e2e package is a TestMain of a few lines:
//
//	var env e2eutil.Env
//
//	func TestMain(m *testing.M) {
//		env.Main(m, e2eutil.Options{Name: "test/e2e/x", Target: "make test-e2e", InstallManifests: true})
//	}
//
// and its tests start what they need: env.RunScheduler(t, e2eutil.SchedulerOptions{Name: "x"}).
//
// It is a normal package, not a _test.go file, so that several test
// packages can import it; nothing outside the tests should.
package e2eutil

import v1 "k8s.io/api/core/v1"

// The environment `make test-e2e` and `make test-faults` pass to the tests.
const (
	// BinDirEnv names bin/ with etcd, kube-apiserver, kubectl and
	// devicefit-scheduler.
	BinDirEnv = "DEVICEFIT_BIN_DIR"
	// CRDDirEnv names the prometheus-operator's example/prometheus-operator-crd.
	CRDDirEnv = "PROMETHEUS_OPERATOR_CRDS"
	// ManifestsEnv optionally names a kustomize directory to test instead of
	// manifests/, as it is: Options.Components are not added to it.
	ManifestsEnv = "DEVICEFIT_MANIFESTS"
)

// What manifests/ deploys, and the tests rely on.
const (
	SystemNamespace    = "devicefit-system"
	SchedulerSA        = "devicefit-scheduler"
	SchedulerConfigMap = "devicefit-scheduler-config"
	SchedulerConfigKey = "scheduler-config.yaml"
	SchedulerDeploy    = "devicefit-scheduler"
	SchedulerName      = "devicefit"

	ResourceGPU = v1.ResourceName("nvidia.com/gpu")
)

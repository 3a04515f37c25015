// Package e2eutil is what the end-to-end test packages (test/e2e and
// test/e2e/faults) share on top of internal/controlplane: bin/kubectl, the
// kustomize base manifests/ installed on the prometheus-operator CRDs, the
// identity of the ServiceAccount the manifests create, the
// KubeSchedulerConfiguration their Deployment mounts, and GPU nodes and
// device pods as the tests make them.
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
	// manifests/.
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

// Package skew runs devicefit as deployed on every supported control-plane
// minor (support.Range: 1.35, 1.36 and 1.37 for this build), each with its
// default feature gates and --runtime-config, as managed clusters run them:
// kube-apiserver, kube-controller-manager and etcd of that release
// (bin/kube-<minor>/ from hack/tools/kube-<minor>, `make skew-tools`; the
// newest minor is bin/'s own), devicefit-scheduler and kubectl of bin/.
//
// For each minor, on a control plane of its own:
//   - kustomize_test.go  the base (plus the components that minor serves)
//     applied with kubectl, the scheduler started as the Deployment runs it,
//     its time to ready, and one pod per device feature placed, or refused
//     with its message where that minor does not serve the feature;
//   - helm_test.go       the chart installed with helm against the live
//     server (its .Capabilities), what it left out said in NOTES, the
//     scheduler started from the release and one GPU pod bound;
//   - served_test.go     the served-API check: a gate turned on by hand whose
//     API the oldest minor does not serve is turned off, not waited for.
//
// The table of what each minor serves (features_test.go) is the README's
// support table; DEVICEFIT_SKEW_REPORT names a file the measured table is
// written to (make test-e2e: bin/skew-report.md).
package skew

import (
	"fmt"
	"os"
	"testing"

	"github.com/devicefit/devicefit/internal/e2eutil"
)

// ReportEnv names the file the measured table is written to ("": none).
const ReportEnv = "DEVICEFIT_SKEW_REPORT"

var env struct {
	binDir, crdDir, report string
}

func TestMain(m *testing.M) {
	env.binDir, env.crdDir, env.report = os.Getenv(e2eutil.BinDirEnv), os.Getenv(e2eutil.CRDDirEnv), os.Getenv(ReportEnv)
	if env.binDir == "" {
		fmt.Fprintf(os.Stderr, "test/e2e/skew: SKIP: %s is not set. These tests run bin/ and bin/kube-<minor>/: run `make test-e2e`.\n", e2eutil.BinDirEnv)
		os.Exit(0)
	}
	if env.crdDir == "" {
		fmt.Fprintf(os.Stderr, "test/e2e/skew: %s is set but %s is not: run `make test-e2e`, which sets both\n", e2eutil.BinDirEnv, e2eutil.CRDDirEnv)
		os.Exit(1)
	}
	code := m.Run()
	if err := writeReport(env.report); err != nil {
		fmt.Fprintf(os.Stderr, "test/e2e/skew: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

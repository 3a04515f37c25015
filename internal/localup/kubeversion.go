package localup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/devicefit/devicefit/pkg/support"
)

// The control plane's Kubernetes minor (--kube-version). The binaries' own
// minor is bin/'s (make tools); an older supported one is the release
// hack/tools/kube-<minor> pins, built into bin/kube-<minor>/ (make
// skew-tools), as test/e2e/skew runs it. Only etcd, kube-apiserver and
// kube-controller-manager change with it: devicefit-scheduler reads the
// server's version and emulates its minor by itself (pkg/support), the
// upstream kube-scheduler beside it is told to (--emulated-version), and
// kubectl-devicefit is a client. No scheduler is then newer than the API
// server, as the version skew policy requires.

// NewestKubeVersion is --kube-version's default: the minor bin/ is built
// from, e.g. "1.37".
func NewestKubeVersion() string {
	_, newest := support.Range()
	return minorString(newest)
}

func minorString(v *version.Version) string { return fmt.Sprintf("%d.%d", v.Major(), v.Minor()) }

// kubeMinor is --kube-version parsed: a supported minor, major.minor only;
// "" is the newest.
func kubeMinor(s string) (*version.Version, error) {
	oldest, newest := support.Range()
	if s == "" {
		return newest, nil
	}
	v, err := version.ParseGeneric(s)
	if err != nil || strings.TrimPrefix(s, "v") != minorString(v) {
		return nil, fmt.Errorf("--kube-version %q: want a Kubernetes minor, %s", s, support.RangeString())
	}
	if v.LessThan(oldest) || v.GreaterThan(newest) {
		return nil, fmt.Errorf("--kube-version %s: this build supports control planes %s", s, support.RangeString())
	}
	return v, nil
}

// Validate checks the options that can be checked before anything starts.
func (o Options) Validate() error {
	v, err := kubeMinor(o.KubeVersion)
	if err != nil {
		return err
	}
	if _, newest := support.Range(); o.Workload && v.LessThan(newest) {
		// runWorkload turns on the Workload API the v1.37 scheduler lists
		// (scheduling.k8s.io/v1beta1), which older servers do not have.
		return fmt.Errorf("--workload needs the Workload API scheduling.k8s.io/v1beta1 of Kubernetes %s: leave --kube-version out", minorString(newest))
	}
	return nil
}

// controlPlaneBinDir is where etcd, kube-apiserver and kube-controller-manager
// of --kube-version are, under binDir (absolute or as given): binDir itself
// for the newest minor, binDir/kube-<minor> for an older one; and that
// minor.
func (o Options) controlPlaneBinDir(binDir string) (string, *version.Version, error) {
	v, err := kubeMinor(o.KubeVersion)
	if err != nil {
		return "", nil, err
	}
	if _, newest := support.Range(); !v.LessThan(newest) {
		return binDir, v, nil
	}
	dir := filepath.Join(binDir, "kube-"+minorString(v))
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", nil, fmt.Errorf("Kubernetes %s: %w: build it with `make skew-tools` (or run `make run KUBE_VERSION=%s`)",
				minorString(v), err, minorString(v))
		}
	}
	return dir, v, nil
}

// checkServerMinor: the API server started is the minor asked for (a
// kube-apiserver built without hack/version.sh's ldflags reports v0.0.0).
func checkServerMinor(c *support.Cluster, want *version.Version, binDir string) error {
	if minorString(c.Version) != minorString(want) {
		return fmt.Errorf("%s reports %s, not a %s release: build it with `make` (hack/version.sh kube-ldflags)",
			filepath.Join(binDir, "kube-apiserver"), c.GitVersion, minorString(want))
	}
	return nil
}

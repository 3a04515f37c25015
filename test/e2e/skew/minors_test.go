package skew

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/devicefit/devicefit/pkg/support"
)

// minor is one supported control-plane minor and where its binaries are.
type minor struct {
	version *version.Version
	// binDir holds its etcd, kube-apiserver and kube-controller-manager.
	binDir string
}

func (m minor) String() string { return fmt.Sprintf("%d.%d", m.version.Major(), m.version.Minor()) }

// supportedMinors are support.Range's minors, oldest first.
func supportedMinors() []minor {
	oldest, newest := support.Range()
	var out []minor
	for v := oldest; !v.GreaterThan(newest); v = version.MajorMinor(v.Major(), v.Minor()+1) {
		m := minor{version: v, binDir: env.binDir}
		if v.LessThan(newest) {
			m.binDir = filepath.Join(env.binDir, "kube-"+m.String())
		}
		out = append(out, m)
	}
	return out
}

// require fails the test when a binary of m is missing, with the target
// that builds it: a skipped minor would be a support claim nothing checked.
func (m minor) require(t *testing.T) {
	t.Helper()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(m.binDir, b)); err != nil {
			t.Fatalf("Kubernetes %s: %v: build it with `make skew-tools` (make test-e2e does)", m, err)
		}
	}
}

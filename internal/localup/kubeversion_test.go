package localup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devicefit/devicefit/pkg/support"
)

func TestControlPlaneBinDir(t *testing.T) {
	oldest, newest := support.Range()
	bin := t.TempDir()
	older := filepath.Join(bin, "kube-"+minorString(oldest))
	if err := os.MkdirAll(older, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if err := os.WriteFile(filepath.Join(older, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		kubeVersion string
		want        string // "" with err
		err         string
	}{
		{kubeVersion: "", want: bin},
		{kubeVersion: minorString(newest), want: bin},
		{kubeVersion: minorString(oldest), want: older},
		{kubeVersion: "v" + minorString(oldest), want: older},
		// Built by nobody here: the error names the target that builds it.
		{kubeVersion: minorString(oldest.AddMinor(1)), err: "make skew-tools"},
		{kubeVersion: minorString(oldest.SubtractMinor(1)), err: "supports control planes " + support.RangeString()},
		{kubeVersion: minorString(newest.AddMinor(1)), err: "supports control planes " + support.RangeString()},
		{kubeVersion: minorString(oldest) + ".4", err: "want a Kubernetes minor"},
		{kubeVersion: "latest", err: "want a Kubernetes minor"},
	} {
		t.Run(tc.kubeVersion, func(t *testing.T) {
			got, minor, err := Options{KubeVersion: tc.kubeVersion}.controlPlaneBinDir(bin)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("controlPlaneBinDir = %s, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("bin dir %s, want %s", got, tc.want)
			}
			if tc.kubeVersion != "" && "v"+minorString(minor) != "v"+strings.TrimPrefix(tc.kubeVersion, "v") {
				t.Errorf("minor %s, want %s", minorString(minor), tc.kubeVersion)
			}
		})
	}
}

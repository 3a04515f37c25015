package e2e

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSnapshotReplays: `kubectl devicefit snapshot -o FILE` writes the
// scenario's cluster in the replay's YAML format; bin/replay reads it and
// replays every pod of it, in creation order, under the default and the
// deployed devicefit profile. What the format cannot carry (the AMD node's
// amd.com/gpu) is said on stderr.
func TestSnapshotReplays(t *testing.T) {
	_, sc := sharedScenario(t)
	ctx := testContext(t, 2*time.Minute)
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	_, errOut, err := devicefitPlugin().Run(ctx, nil, "snapshot", "-o", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "amd.com/gpu of 1 nodes left out") {
		t.Errorf("snapshot's stderr does not name the AMD devices it leaves out: %q", errOut)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, "replay"), "--nodes", file, "--pods", file,
		"--tune", "0", "--order", "trace", "--policies", "default,devicefit",
		"--devicefit-config", filepath.Join(s.manifests, "scheduler-config.yaml"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("replay of the snapshot: %v\n%s", err, out)
	}
	// The fleet's 7 nodes, and every pod of the cluster: the scenario's
	// and those other tests left pending (none asks for another device
	// resource).
	pods, err := s.cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) < len(sc.pods) {
		t.Fatalf("%d pods in the cluster, fewer than the scenario's %d", len(pods.Items), len(sc.pods))
	}
	want := regexp.MustCompile(`fleet fleet\.yaml: 7 nodes, \d+ nvidia\.com/gpu; pods fleet\.yaml: (\d+) `)
	m := want.FindSubmatch(out)
	if m == nil {
		t.Fatalf("replay output lacks %q:\n%s", want, out)
	}
	if got := string(m[1]); got != strconv.Itoa(len(pods.Items)) {
		t.Errorf("replayed %s pods, the cluster has %d:\n%s", got, len(pods.Items), out)
	}
	t.Logf("replay of the snapshot:\n%s", out)
}

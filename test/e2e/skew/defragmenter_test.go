package skew

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/devicefit/devicefit/internal/e2eutil"
)

// checkDefragmenter runs bin/devicefit-defragmenter as the defragmenter
// component deploys it on minor m, in a dry run asking for both A100 40GB
// nodes whole-free. The fleet's two packing pods are bare pods on one of
// them, which may not move: the pass must list that minor's cluster (a
// snapshot with nothing refused by the component's RBAC or unserved),
// replay it with the scheduler's profile and find no plan, and say why.
// It returns the report's cell.
func checkDefragmenter(t *testing.T, m minor, cl *cluster, sched *e2eutil.Scheduler) string {
	t.Helper()
	ctx := e2eutil.TestContext(t, 2*time.Minute)
	start := time.Now()
	d := cl.env.RunDefragmenter(t, ctx, e2eutil.DefragmenterName, sched.Config.Path, func(cfg map[string]interface{}) {
		cfg["interval"] = "1s"
		cfg["dryRun"] = true
		cfg["pending"] = map[string]interface{}{"enabled": false}
		cfg["freeNodes"] = map[string]interface{}{"count": 2, "resource": "nvidia.com/gpu", "product": productA100x40}
	})
	leased := time.Since(start)
	d.WaitMetrics(t, ctx, `devicefit_defragmenter_plans_total{outcome="no_plan",trigger="free_nodes"}`)
	if metrics := d.Metrics(t, ctx); strings.Contains(metrics, `outcome="error"`) {
		t.Errorf("Kubernetes %s: a defragmenter pass failed (its log: %s)", m, d.Process.LogPath)
	}
	data, err := os.ReadFile(d.Process.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	for _, want := range []string{"No moves leave the nodes whole-free", "can be left whole-free: the others hold pods that may not move"} {
		if !strings.Contains(log, want) {
			t.Errorf("Kubernetes %s: the defragmenter's log (%s) lacks %q", m, d.Process.LogPath, want)
		}
	}
	if strings.Contains(log, "Plans will not see a kind") {
		t.Errorf("Kubernetes %s: the defragmenter left a kind out of its plans (its log: %s)", m, d.Process.LogPath)
	}
	return fmt.Sprintf("lease %.1fs, dry-run pass: no plan", leased.Seconds())
}

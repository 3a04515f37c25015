package faults

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
)

// TestAPIServerRestart: two scheduler replicas, as the manifests' Deployment
// runs them; 400 device pods stream in; once 100 are bound, kube-apiserver
// is stopped (SIGTERM: it stops listening at once, then takes its grace to
// exit) and started again on the same etcd, port, certificates and tokens.
// Nobody restarts a scheduler. Every pod ends bound exactly once; the
// invariants hold.
//
//   - "lease outlasts the outage" (leaseDuration 60s, renewDeadline 40s):
//     the leader rides the outage out and recovers by itself: its informers
//     relist, the bindings that failed are retried. It must still lead.
//   - "manifests' lease" (15s/10s/2s, as deployed): an outage longer than
//     renewDeadline makes the leader exit, as kube-scheduler does
//     ("Leaderelection lost"; the Deployment would restart it), and the
//     standby, whose informers lost the apiserver too, takes over. Either
//     outcome passes; the test says which happened.
func TestAPIServerRestart(t *testing.T) {
	// Per case, 400 pods of one time-sliced GPU on 8 nodes of 128
	// replicas; the apiserver stopped once 100 are bound.
	stream := streamSpec{group: "apiserver", pods: 400, timeout: 10 * time.Minute, boundBeforeFault: 100, boundWithin: 3 * time.Minute}
	registerNodes(t, stream.group, timeSlicedNodes("apiserver-t4", 8, "Tesla-T4", 15360, 7, 5, 8, 16, "turing")...)
	for _, tc := range []struct {
		name, id    string
		timings     *leaseTimings
		mustSurvive bool
	}{
		{"lease outlasts the outage", "long", &leaseTimings{60 * time.Second, 40 * time.Second, 2 * time.Second}, true},
		{"manifests' lease", "manifests", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := schedulerConfig(t, "apiserver-"+tc.id, tc.timings)
			r := startReplicas(t, cfg, "scheduler-apiserver-"+tc.id)

			st := startStream(t, stream, r.a, r.b)

			boundAtStop := st.w.boundIn(st.ns)
			outage := e2eutil.RestartAPIServer(t, testContext(t, 3*time.Minute), env.CP)
			t.Logf("kube-apiserver stopped with %d of %d pods bound; exited %.1fs after SIGTERM, ready again %.1fs after SIGTERM",
				boundAtStop, stream.pods, outage.Exited.Seconds(), outage.Ready.Seconds())

			st.created()
			var alive []*scheduler
			for _, sc := range []*scheduler{r.a, r.b} {
				if sc.Process.Exited() == nil {
					alive = append(alive, sc)
				}
			}
			checkInvariants(t, st.w, expect{namespace: st.ns, alive: alive, wait: 4 * time.Minute})

			for _, sc := range []*scheduler{r.a, r.b} {
				err := sc.Process.Exited()
				switch {
				case err == nil:
				case !tc.mustSurvive && logSays(sc.Process.LogPath, "Leaderelection lost"):
					t.Logf("%s lost the lease during the outage and exited, as kube-scheduler does: %v", sc.Name, err)
				default:
					t.Errorf("%s exited: %v\nlast lines of %s:\n%s", sc.Name, err, sc.Process.LogPath, controlplane.Tail(sc.Process.LogPath, 30))
				}
			}
			now := waitLeader(t, r.a, r.b)
			newHolder, _, newTransitions, err := lease(testContext(t, 10*time.Second), cfg.Lease)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case now == r.leader:
				t.Logf("%s led before and after the restart (lease holder %s, transitions %d → %d)", r.leader.Name, r.holder, r.transitions, newTransitions)
			case tc.mustSurvive:
				t.Errorf("%s led before the restart, %s after: the lease should have outlasted the outage", r.leader.Name, now.Name)
			default:
				t.Logf("%s led before the restart, %s after (lease holder %s → %s, transitions %d → %d)",
					r.leader.Name, now.Name, r.holder, newHolder, r.transitions, newTransitions)
			}
		})
	}
}

// logSays reports whether the process log at path holds s anywhere. A
// leader that loses its lease goes on logging, for the bindings and status
// updates its cancelled context fails, after it says so: with a few
// hundred pods in flight that is hundreds of lines (574 in one run), so
// the end of the log need not hold the reason it exited.
func logSays(path, s string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), s)
}

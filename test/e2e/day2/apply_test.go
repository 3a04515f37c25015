package day2

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/defrag"
	"github.com/devicefit/devicefit/pkg/replay"
)

// TestApplyBatches: defrag.Apply's Batch (the defragmenter's
// budget.concurrentMoves) is how many pods are evicted before it waits for
// their replacements. Two 1-GPU pods of an opted-in ReplicaSet on node
// <ns>-from move to <ns>-to, which is reserved for nothing (a free-nodes
// plan): one at a time, each eviction waits for its replacement; two at a
// time, both are evicted first. Either way both end on the other node and
// the reserve taint goes.
func TestApplyBatches(t *testing.T) {
	for _, tc := range []struct {
		batch int
		want  string
	}{
		{batch: 1, want: "Evicted Replaced Evicted Replaced"},
		{batch: 2, want: "Evicted Evicted Replaced Replaced"},
	} {
		t.Run(fmt.Sprintf("batch %d", tc.batch), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cs := env.CP.Client
			ns := fmt.Sprintf("batch-%d", tc.batch)
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			from, to := ns+"-from", ns+"-to"
			onSuite := map[string]string{suiteLabel: ns}
			// The package's other tests place pods on any node: these
			// leave with their pods (no garbage collector runs here).
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = cs.AppsV1().ReplicaSets(ns).Delete(ctx, "pair", metav1.DeleteOptions{})
				_ = cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
				for _, n := range []string{from, to} {
					_ = cs.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
				}
			})
			registerGPUNode(t, ctx, from, a100, onSuite)
			replicaSetOf(t, ctx, ns, "pair", 2, 1, nil, func(p *v1.Pod) { p.Spec.NodeSelector = onSuite })
			waitBound(t, ctx, ns, "app=pair", 2)
			registerGPUNode(t, ctx, to, a100, onSuite)

			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var moves []replay.Move
			var snapshot []*v1.Pod
			for i := range pods.Items {
				p := &pods.Items[i]
				moves = append(moves, replay.Move{Pod: ns + "/" + p.Name, From: from, To: to})
				snapshot = append(snapshot, p)
			}
			var steps []string
			a := defrag.Apply{Client: cs, Grace: ptr.To[int64](0), Timeout: time.Minute, Batch: tc.batch, Report: func(p defrag.Progress) {
				if p.Kind == defrag.Evicted || p.Kind == defrag.Replaced {
					steps = append(steps, string(p.Kind))
				}
			}}
			if err := a.Run(ctx, nil, []string{from}, moves, snapshot); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(steps, " "); got != tc.want {
				t.Errorf("steps %q, want %q", got, tc.want)
			}
			if got := placements(t, ctx, ns)["pair"]; len(got) != 2 || !strings.HasPrefix(got[0], to+" ") || !strings.HasPrefix(got[1], to+" ") {
				t.Errorf("the pair is on %v, want both on %s", got, to)
			}
			n, err := cs.CoreV1().Nodes().Get(ctx, from, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, taint := range n.Spec.Taints {
				if taint.Key == defrag.ReserveKey {
					t.Errorf("%s keeps the reserve taint %v", from, taint)
				}
			}
		})
	}
}

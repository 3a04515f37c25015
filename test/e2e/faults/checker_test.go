package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/devicefit/devicefit/pkg/devices"
)

// TestInvariantCheckerCatchesViolations: the checker is only worth what it
// catches. No scheduler runs here: the test creates pods bound into every
// kind of violation, feeds the watch a move, and writes the events a
// double-binding scheduler would, and the checker must name each offending
// node and pod with the numbers; grandfathered pods are excused.
func TestInvariantCheckerCatchesViolations(t *testing.T) {
	const group, c0 = "checker", "checker-l4-0"
	registerNodes(t, group, wholeGPUs(c0, "NVIDIA-L4", 23034, 8, 9, 1, "ada-lovelace"))
	ns := newNamespace(t)
	w := watchPods(t)
	ctx := testContext(t, 2*time.Minute)
	// Created bound (spec.nodeName set, as the API allows), but one: no
	// scheduler ever sees them pending.
	uids := map[string]types.UID{}
	for _, b := range []struct{ pod, node string }{
		{"first", c0}, {"second", c0}, {"wrong-product", c0}, {"ghost", "checker-no-such-node"}, {"never-bound", ""},
	} {
		p := smallPod(ns, group, b.pod, resourceGPU, 1)
		if b.pod == "wrong-product" {
			p.Annotations[devices.AnnotationProducts] = "NVIDIA-H100-80GB-HBM3"
		}
		p.Spec.NodeName = b.node
		if b.node == "" {
			p.Spec.SchedulerName = "faults-nobody"
		}
		created, err := env.CP.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[b.pod] = created.UID
	}
	// What a scheduler that bound twice would report.
	for i, node := range []string{c0, c0, "checker-other-node"} {
		pod := "first"
		if i == 2 {
			pod = "second"
		}
		ev := &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", pod, i), Namespace: ns},
			EventTime:           metav1.NowMicro(),
			ReportingController: "faults-test",
			ReportingInstance:   "faults-test",
			Action:              "Binding",
			Reason:              "Scheduled",
			Type:                v1.EventTypeNormal,
			Regarding:           v1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod, UID: uids[pod]},
			Note:                fmt.Sprintf("Successfully assigned %s/%s to %s", ns, pod, node),
		}
		if _, err := env.CP.Client.EventsV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A pod seen on one node, then on another (the API refuses to rebind,
	// so the watch is fed directly).
	moved := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "moved", UID: "moved-uid"}, Spec: v1.PodSpec{NodeName: "node-a"}}
	w.observe(nil, moved)
	again := moved.DeepCopy()
	again.Spec.NodeName = "node-b"
	w.observe(moved, again)

	_, violations, summary := findViolations(t, w, expect{namespace: ns, wait: 3 * time.Second})
	t.Logf("the checker found, as it should (%s):\n  %s", summary, strings.Join(violations, "\n  "))
	for _, want := range []string{
		"4 of the 5 pods of " + ns + " bound (context deadline exceeded), want all but 0; 1 not bound",
		"never-bound (not tried yet)",
		"node " + c0 + ": nvidia.com/gpu requested 3 by 3 pods > allocatable 1",
		ns + "/first(1)", ns + "/second(1)", ns + "/wrong-product(1)",
		"pod " + ns + "/ghost is bound to node checker-no-such-node, which does not exist",
		"pod " + ns + "/wrong-product on node " + c0 + ": 1 nvidia.com/gpu with annotations [devicefit.io/products=NVIDIA-H100-80GB-HBM3]",
		"product not in devicefit.io/products",
		"pod " + ns + "/first: 2 Scheduled events, to " + c0 + ", " + c0,
		"pod " + ns + "/second is on " + c0 + ", but a Scheduled event says checker-other-node",
		"pod " + ns + "/moved (uid moved-uid): seen bound to node-a at ",
		`then with spec.nodeName "node-b" at `,
	} {
		if !strings.Contains(strings.Join(violations, "\n"), want) {
			t.Errorf("the checker did not report %q", want)
		}
	}
	if len(violations) != 7 {
		t.Errorf("%d violations, want 7", len(violations))
	}

	// Placed before the node lost its devices or labels: excused.
	old := map[types.UID]bool{uids["first"]: true, uids["second"]: true, uids["wrong-product"]: true, uids["ghost"]: true}
	_, violations, _ = findViolations(t, w, expect{namespace: ns, unbound: 1, grandfathered: old, wait: 3 * time.Second})
	for _, v := range violations {
		if strings.Contains(v, "allocatable") || strings.Contains(v, "does not exist") || strings.Contains(v, "devicefit.io/products") {
			t.Errorf("a grandfathered pod was held against the node's state: %s", v)
		}
	}
	if len(violations) != 3 { // the two event violations and the moved pod
		t.Errorf("with the pods grandfathered, %d violations, want 3:\n  %s", len(violations), strings.Join(violations, "\n  "))
	}
}

package localup

import (
	"bytes"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testNode(name, product string, gpus int64) v1.Node {
	n := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")}
	if product != "" {
		n.Labels[labelGPUProduct] = product
		n.Status.Allocatable[resourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return n
}

func testPod(name, class, node string, gpus int64) v1.Pod {
	p := v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{classLabel: class}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
		}}},
	}
	if gpus > 0 {
		p.Spec.Containers[0].Resources.Requests[resourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return p
}

func unschedulable(p v1.Pod, msg string) v1.Pod {
	p.Status.Conditions = []v1.PodCondition{{
		Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: msg,
	}}
	return p
}

func TestStateOf(t *testing.T) {
	bound := testPod("a", "cpu", "n1", 0)
	pending := testPod("b", "cpu", "", 0)
	failed := unschedulable(testPod("c", "cpu", "", 0), "no")
	for _, tc := range []struct {
		pod  v1.Pod
		want podState
	}{{bound, stateBound}, {pending, statePending}, {failed, stateUnschedulable}} {
		if got := stateOf(&tc.pod); got != tc.want {
			t.Errorf("%s: state %d, want %d", tc.pod.Name, got, tc.want)
		}
	}
}

func TestPlacement(t *testing.T) {
	nodes := []v1.Node{testNode("h0", productH100, 8), testNode("h1", productH100, 8), testNode("c0", "", 0)}
	pods := []v1.Pod{
		testPod("p0", "x", "h0", 8),
		testPod("p1", "x", "h1", 2),
		testPod("p2", "cpu", "h1", 0),
		testPod("p3", "cpu", "c0", 0),
		testPod("p4", "x", "", 1), // not bound: not counted
	}
	rows := placement(nodes, pods, nil)
	if len(rows) != 2 || rows[0].product != productH100 || rows[1].product != noProduct {
		t.Fatalf("rows %+v, want H100 then %s", rows, noProduct)
	}
	h := rows[0]
	if h.nodes != 2 || h.pods != 3 || h.allocatable[resourceGPU] != 16 || h.bound[resourceGPU] != 10 {
		t.Errorf("H100 row: nodes %d pods %d allocatable %d bound %d, want 2 3 16 10",
			h.nodes, h.pods, h.allocatable[resourceGPU], h.bound[resourceGPU])
	}
	var out bytes.Buffer
	printPlacement(&out, rows)
	if !strings.Contains(out.String(), "62%") { // 10 of 16, rounded half to even
		t.Errorf("table lacks the usage:\n%s", out.String())
	}
}

func TestCheck(t *testing.T) {
	nodes := []v1.Node{testNode("h0", productH100, 8), testNode("l0", productL4Shared, 16)}
	classes := []class{
		{name: "h100", allowed: []string{productH100}},
		{name: "bad", invalid: true},
		{name: "cpu"},
	}
	ok := []v1.Pod{
		testPod("a", "h100", "h0", 1),
		testPod("b", "cpu", "l0", 0),
		unschedulable(testPod("c", "bad", "", 1), "invalid"),
	}
	if got := check(nodes, ok, classes, nil); len(got) != 0 {
		t.Errorf("check of a correct placement: %v", got)
	}
	wrong := []v1.Pod{testPod("a", "h100", "l0", 1), testPod("c", "bad", "h0", 1)}
	if got := check(nodes, wrong, classes, nil); len(got) != 2 {
		t.Errorf("check found %d problems, want 2 (wrong product, invalid pod bound): %v", len(got), got)
	}
	if got := check(nodes, []v1.Pod{testPod("x", "cpu", "", 0)}, classes, nil); len(got) != 1 {
		t.Errorf("nothing bound: %v, want one problem", got)
	}
}

func TestPrintUnschedulableGroupsByMessage(t *testing.T) {
	pods := []v1.Pod{
		unschedulable(testPod("bad-0", "bad", "", 1), "annotation devicefit.io/min-memory: nope"),
		unschedulable(testPod("x-0", "x", "", 1), "Insufficient nvidia.com/gpu"),
		unschedulable(testPod("x-1", "x", "", 1), "Insufficient nvidia.com/gpu"),
		testPod("y-0", "x", "n0", 1),
	}
	var out bytes.Buffer
	printUnschedulable(&out, pods, map[string]bool{"bad": true})
	s := out.String()
	for _, want := range []string{"Deliberately invalid pods (1)", "devicefit.io/min-memory: nope", "Other unschedulable pods (2)", "2 pod(s): x-0, x-1"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

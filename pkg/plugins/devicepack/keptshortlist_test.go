package devicepack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

// TestKeptWalkFollowsTheRows: the shortlist's kept walk (keptshortlist.go),
// brought up to each cycle through the rows that moved, holds what a walk
// over every row finds: the feasible rows, their device kinds, and each
// shape's members in name order, whatever moved in between (pods bound
// and removed, a node object replaced, the node list reordered, a node
// added). The verdict is a stand-in: a row is feasible when it has 4 GPUs
// free. Each step changes the nodes the previous ones left.
func TestKeptWalkFollowsTheRows(t *testing.T) {
	nodes := make([]fwk.NodeInfo, 12)
	products := []string{"NVIDIA-L4", "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"}
	for j := range nodes {
		nodes[j] = gpuNodeInfo(fmt.Sprint("n", j), products[j%3], "81559", "8", "0")
	}
	bind := func(j int, name, count string) func() {
		return func() {
			pod := gpuPod(name, count)
			pod.Spec.NodeName = nodes[j].Node().Name
			nodes[j].(*framework.NodeInfo).AddPod(pod)
		}
	}
	steps := []struct {
		name   string
		change func()
	}{
		{name: "first walk"},
		{name: "a pod bound leaves 6 free", change: bind(0, "a", "2")},
		{name: "another leaves 2: no longer feasible", change: bind(0, "b", "4")},
		{name: "pods on two nodes of one product", change: func() { bind(3, "c", "4")(); bind(6, "d", "4")() }},
		{name: "a node object replaced by another product", change: func() {
			ni := gpuNodeInfo("n1", "NVIDIA-L4", "23034", "8", "0")
			nodes[1] = ni
		}},
		{name: "the node list reordered", change: func() { slices.Reverse(nodes) }},
		{name: "a node added", change: func() { nodes = append(nodes, gpuNodeInfo("n12", "NVIDIA-L4", "23034", "8", "0")) }},
		{name: "after more classes than are kept: rebuilt in the slices of another", change: bind(4, "e", "6")},
	}
	pl := newPlugin(t, defaultArgs(t))
	table := snapshot.NewTable(pl.resources)
	for _, step := range steps {
		if step.change != nil {
			step.change()
		}
		c := table.Refresh(nil, nodes)
		judge := func(j int) rowVerdict {
			r := &c.Rows[j]
			return rowVerdict{feasible: r.Devices != nil && len(r.Free) > 0 && r.Free[0] >= 4}
		}
		if strings.HasPrefix(step.name, "after more classes") {
			for i := range maxKept + 8 {
				pl.keptFor(fmt.Sprint("other", i), c, nodes, func(int) rowVerdict { return rowVerdict{feasible: true, avoided: true} })
			}
		}
		kept, ok := pl.keptFor("kept", c, nodes, judge)
		if !ok {
			t.Fatalf("%s: kept walk refused", step.name)
		}
		// The reference: a plugin that never kept a walk.
		fresh, _ := newPlugin(t, defaultArgs(t)).keptFor("fresh", c, nodes, judge)
		type walk struct {
			Feasible int
			Kinds    map[int]int
			Groups   map[int][]string
		}
		of := func(k *keptFeasible) walk {
			w := walk{Feasible: k.numFeasible, Kinds: k.kinds, Groups: map[int][]string{}}
			for shape, g := range k.groups {
				for _, m := range g {
					w.Groups[shape] = append(w.Groups[shape], m.name)
				}
			}
			return w
		}
		if diff := cmp.Diff(of(fresh), of(kept)); diff != "" {
			t.Errorf("%s: kept walk (-fresh +kept):\n%s", step.name, diff)
		}
		if step.name == "first walk" && kept.numFeasible != len(nodes) {
			t.Errorf("%s: %d feasible, want every node (%d)", step.name, kept.numFeasible, len(nodes))
		}
	}
}

// TestKeptFeasibleKey: pods share a kept walk exactly when their
// verdicts, requests, node rules and images are alike; a pod DeviceFit
// wrote no verdict for has a class of its own, and a pod whose verdicts
// read more than the rows (DRA) none.
func TestKeptFeasibleKey(t *testing.T) {
	logger := klog.Background()
	rules := shared.NewNodeRules(logger, gpuPod("p", "1"), false)
	selected := gpuPod("s", "1")
	selected.Spec.NodeSelector = map[string]string{"team": "x"}
	otherRules := shared.NewNodeRules(logger, selected, false)
	fit := fitCheck{cpu: 1000, mem: 1 << 30, scalars: []scalarRequest{{name: "nvidia.com/gpu", n: 1, device: true}, {name: "example.com/fpga", n: 2}}}
	swapped := fit
	swapped.scalars = []scalarRequest{fit.scalars[1], fit.scalars[0]}
	moreCPU := fit
	moreCPU.cpu = 2000
	withDRA := fit
	withDRA.dra = &draFit{}
	class := &shared.Verdict{Class: "c"}
	listed := &shared.Verdict{Class: "c", Listed: []bool{true}}
	base := keptFeasibleKey(class, &fit, &rules, nil)
	tests := []struct {
		name    string
		key     string
		sameAs  bool
		noClass bool
	}{
		{"scalars in another order", keptFeasibleKey(class, &swapped, &rules, nil), true, false},
		{"no verdict", keptFeasibleKey(nil, &fit, &rules, nil), false, false},
		{"a verdict without class", keptFeasibleKey(&shared.Verdict{}, &fit, &rules, nil), false, true},
		{"DRA", keptFeasibleKey(class, &withDRA, &rules, nil), false, true},
		{"listed", keptFeasibleKey(listed, &fit, &rules, nil), false, false},
		{"more CPU", keptFeasibleKey(class, &moreCPU, &rules, nil), false, false},
		{"other rules", keptFeasibleKey(class, &fit, &otherRules, nil), false, false},
		{"images", keptFeasibleKey(class, &fit, &rules, []string{"img"}), false, false},
	}
	for _, tt := range tests {
		switch {
		case tt.noClass && tt.key != "":
			t.Errorf("%s: key %q, want none", tt.name, tt.key)
		case !tt.noClass && tt.key == "":
			t.Errorf("%s: no key", tt.name)
		case !tt.noClass && (tt.key == base) != tt.sameAs:
			t.Errorf("%s: key %q, base %q: same %v, want %v", tt.name, tt.key, base, tt.key == base, tt.sameAs)
		}
	}
	if none, other := keptFeasibleKey(nil, &fit, &rules, nil), keptFeasibleKey(nil, &moreCPU, &rules, nil); none == other {
		t.Errorf("pods without verdict and other requests share the key %q", none)
	}
}

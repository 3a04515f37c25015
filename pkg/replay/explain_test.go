package replay

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/devices"
)

// explainCluster: two H100 nodes (one full), an A100 node labelled
// team=x, and a CPU node.
func explainCluster() Cluster {
	node := func(name, product string, gpus int64, labels map[string]string) *v1.Node {
		return NewNode(&NodeSpec{Name: name, MilliCPU: 64000, MemoryMiB: 512 << 10, GPUs: gpus, Model: product, Labels: labels})
	}
	full := st.MakePod().Namespace("ns").Name("full").UID("full").Node("h100-b").SchedulerName("devicefit").
		Annotations(map[string]string{devices.AnnotationProducts: "NVIDIA-H100-80GB-HBM3"}).
		Res(map[v1.ResourceName]string{DeviceResource: "8"}).Obj()
	return Cluster{
		Nodes: []*v1.Node{
			node("h100-a", "NVIDIA-H100-80GB-HBM3", 8, nil),
			node("h100-b", "NVIDIA-H100-80GB-HBM3", 8, nil),
			node("a100", "NVIDIA-A100-SXM4-80GB", 8, map[string]string{"team": "x"}),
			node("cpu", "", 0, nil),
		},
		Pods: []*v1.Pod{full},
	}
}

func explainPod(name, gpus string, annotations map[string]string, selector map[string]string) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID(name).SchedulerName("devicefit").Annotations(annotations).
		Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", DeviceResource: gpus}).Obj()
	p.Spec.NodeSelector = selector
	return p
}

// TestExplain: one cycle under the deployed profile judges every node; the
// message is the scheduler's (FitError's words), also for nodes DeviceFit's
// candidate list leaves out.
func TestExplain(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pol := policies(t, PolicyDeviceFit)[0]
	h100 := map[string]string{devices.AnnotationProducts: "NVIDIA-H100-80GB-HBM3"}
	tests := []struct {
		name        string
		pod         *v1.Pod
		wantChosen  string
		wantMessage string
		// wantReasons maps node to its rejecting plugin.
		wantPlugins map[string]string
		wantDemand  []string
		wantSel     []string
	}{
		{
			name: "fits: the free H100", pod: explainPod("fit", "1", h100, nil), wantChosen: "h100-a",
			wantPlugins: map[string]string{"h100-b": "NodeResourcesFit", "a100": "DeviceFit", "cpu": "NodeResourcesFit"},
			wantDemand:  []string{"1 nvidia.com/gpu"}, wantSel: []string{"products: NVIDIA-H100-80GB-HBM3 (compared as H100-80GB-HBM3)"},
		},
		{
			// Written as compared: echoed once.
			name: "fits: the A100 by its label's form", pod: explainPod("a100-form", "1", map[string]string{devices.AnnotationProducts: "A100-SXM4-80GB"}, nil),
			wantChosen: "a100", wantSel: []string{"products: A100-SXM4-80GB"},
			wantPlugins: map[string]string{"h100-a": "DeviceFit", "h100-b": "NodeResourcesFit", "cpu": "NodeResourcesFit"},
		},
		{
			name: "a product nowhere: PreFilter", pod: explainPod("b300", "1", map[string]string{devices.AnnotationProducts: "B300"}, nil),
			wantMessage: "0/4 nodes are available: no node offering nvidia.com/gpu matches the pod's devicefit.io annotations.",
		},
		{
			name: "too big", pod: explainPod("big", "16", nil, nil),
			wantMessage: "0/4 nodes are available: requests 16 nvidia.com/gpu; the largest node offers 8.",
		},
		{
			name: "its node selector admits only the A100", pod: explainPod("team", "1", h100, map[string]string{"team": "x"}),
			wantMessage: "0/4 nodes are available: 1 node(s) didn't match devicefit.io/products, 3 node(s) didn't match Pod's node affinity/selector.",
			wantPlugins: map[string]string{"h100-a": "NodeAffinity", "h100-b": "NodeAffinity", "a100": "DeviceFit", "cpu": "NodeAffinity"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Explain(ctx, pol, explainCluster(), tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			if e.Chosen != tt.wantChosen || e.Message != tt.wantMessage {
				t.Errorf("chosen %q, message %q; want %q, %q", e.Chosen, e.Message, tt.wantChosen, tt.wantMessage)
			}
			for _, v := range e.Nodes {
				if want := tt.wantPlugins[v.Node]; v.Plugin != want || v.Feasible != (want == "") {
					t.Errorf("node %s: plugin %q (feasible %v, %v), want %q", v.Node, v.Plugin, v.Feasible, v.Reasons, want)
				}
			}
			if tt.wantDemand != nil && !slices.Equal(e.Demand, tt.wantDemand) {
				t.Errorf("demand %v, want %v", e.Demand, tt.wantDemand)
			}
			if tt.wantSel != nil && !slices.Equal(e.Selector, tt.wantSel) {
				t.Errorf("selector %v, want %v", e.Selector, tt.wantSel)
			}
		})
	}
}

// TestExplainScores: with several feasible nodes, each is scored per
// plugin and the highest total is chosen. The pod's preferred node affinity
// (matching no node) keeps DevicePack from naming a shortlist, which would
// name a100 alone: a single listed node is not scored.
func TestExplainScores(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pod := explainPod("any", "1", nil, nil)
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
		Weight:     1,
		Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "team", Operator: v1.NodeSelectorOpIn, Values: []string{"y"}}}},
	}}}}
	e, err := Explain(ctx, policies(t, PolicyDeviceFit)[0], explainCluster(), pod)
	if err != nil {
		t.Fatal(err)
	}
	var best int64 = -1
	scored := 0
	for _, v := range e.Nodes {
		if !v.Feasible {
			continue
		}
		if len(v.Scores) == 0 {
			t.Errorf("feasible node %s has no scores", v.Node)
		}
		if !slices.ContainsFunc(v.Scores, func(s PluginScore) bool { return s.Plugin == "DevicePack" }) {
			t.Errorf("node %s: no DevicePack score in %v", v.Node, v.Scores)
		}
		scored++
		best = max(best, v.Total)
	}
	if scored != 2 {
		t.Fatalf("%d feasible nodes, want h100-a and a100", scored)
	}
	for _, v := range e.Nodes {
		if v.Node == e.Chosen && v.Total != best {
			t.Errorf("chosen %s scores %d, the best is %d", e.Chosen, v.Total, best)
		}
	}
}

// TestExplainBoundPod: a bound pod is explained as if pending, off its node.
func TestExplainBoundPod(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pol := policies(t, PolicyDeviceFit)[0]
	c := explainCluster()
	full := c.Pods[0]
	e, err := Explain(ctx, pol, c, full)
	if err != nil {
		t.Fatal(err)
	}
	// Off h100-b, the 8-GPU pod fits either H100 node.
	if e.Chosen != "h100-a" && e.Chosen != "h100-b" || !strings.HasPrefix(e.Pod, "ns/") {
		t.Errorf("chosen %q for pod %s, want an H100 node", e.Chosen, e.Pod)
	}
	for _, v := range e.Nodes {
		if v.Node == "h100-b" && !v.Feasible {
			t.Errorf("h100-b rejected (%v): the pod itself should not hold its devices", v.Reasons)
		}
	}
}

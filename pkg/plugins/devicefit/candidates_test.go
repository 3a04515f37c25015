package devicefit

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

// boundPod holds n GPUs on node at priority prio.
func boundPod(name, node, n string, prio int32) *v1.Pod {
	return st.MakePod().Name(name).UID(name).Node(node).Priority(prio).
		Res(map[v1.ResourceName]string{gpu: n}).Obj()
}

// infoWith is a node info of n with pods bound to it.
func infoWith(n *v1.Node, pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(n)
	return ni
}

// TestPreFilterResult: PreFilter names the nodes that can take the pod, a
// superset of the feasible ones, and nil when that would name none or
// nearly all.
func TestPreFilterResult(t *testing.T) {
	mig := st.MakeNode().Name("mig").Label(devices.LabelMIGStrategy, "mixed").
		Capacity(map[v1.ResourceName]string{"nvidia.com/mig-1g.10gb": "7"}).Obj()
	broken := gpuNode("broken", "NVIDIA-L4", "4", nil)
	// The wrapper shares one list between capacity and allocatable.
	broken.Status.Capacity = broken.Status.Capacity.DeepCopy()
	broken.Status.Capacity[gpu] = resource.MustParse("2")
	cpu := st.MakeNode().Name("cpu").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64"}).Obj()
	// A fleet: two H100 nodes (one full), two L4 nodes (one half full), a
	// MIG node, a broken node, and CPU-only nodes enough that a narrowed
	// set is worth returning.
	fleet := func(fullH100Prio int32) []fwk.NodeInfo {
		h100Full := gpuNode("h100-full", "NVIDIA-H100-80GB-HBM3", "8", nil)
		l4Half := gpuNode("l4-half", "NVIDIA-L4", "4", nil)
		out := []fwk.NodeInfo{
			nodeInfo(gpuNode("h100", "NVIDIA-H100-80GB-HBM3", "8", nil)),
			infoWith(h100Full, boundPod("a", "h100-full", "8", fullH100Prio)),
			nodeInfo(gpuNode("l4", "NVIDIA-L4", "4", nil)),
			infoWith(l4Half, boundPod("b", "l4-half", "2", 0)),
			nodeInfo(mig), nodeInfo(broken), nodeInfo(cpu),
		}
		for _, name := range []string{"cpu-2", "cpu-3", "cpu-4"} {
			out = append(out, nodeInfo(st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64"}).Obj()))
		}
		return out
	}
	pinned := func(node string, annotations map[string]string) *v1.Pod {
		p := gpuPod("1", annotations)
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}},
			}}},
		}}}
		return p
	}
	tests := []struct {
		name    string
		args    *config.DeviceFitArgs
		pod     *v1.Pod
		prio    int32 // priority of the pod filling h100-full
		want    []string
		wantAll bool
		// mutate changes the fleet before PreFilter.
		mutate func(nodes []fwk.NodeInfo)
	}{
		{name: "any gpu: every node with a free one", pod: gpuPod("1", nil), want: []string{"h100", "l4", "l4-half"}},
		{name: "3 gpus: l4-half has 2 free", pod: gpuPod("3", nil), want: []string{"h100", "l4"}},
		{name: "product selector", pod: gpuPod("1", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"}), want: []string{"l4", "l4-half"}},
		{
			name: "a full node stays when a lower-priority pod there can be preempted",
			pod:  st.MakePod().Name("p").Priority(100).Res(map[v1.ResourceName]string{gpu: "8"}).Obj(),
			prio: 10, want: []string{"h100", "h100-full"},
		},
		{
			name: "not when the pod never preempts",
			pod: st.MakePod().Name("p").Priority(100).PreemptionPolicy(v1.PreemptNever).
				Res(map[v1.ResourceName]string{gpu: "8"}).Obj(),
			prio: 10, want: []string{"h100"},
		},
		{
			name: "nor when the pods there have the same priority",
			pod:  st.MakePod().Name("p").Priority(100).Res(map[v1.ResourceName]string{gpu: "8"}).Obj(),
			prio: 100, want: []string{"h100"},
		},
		{name: "mig slice: the mixed-strategy node", pod: st.MakePod().Name("p").Res(map[v1.ResourceName]string{"nvidia.com/mig-1g.10gb": "1"}).Obj(), want: []string{"mig"}},
		{
			name: "device-free pod under Require: nodes without devices",
			args: &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyRequire},
			pod:  st.MakePod().Name("p").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
			want: []string{"cpu", "cpu-2", "cpu-3", "cpu-4"},
		},
		{name: "pinned to an admitted node", pod: pinned("l4", nil), want: []string{"h100", "l4", "l4-half"}},
		{
			// NodeAffinity names only h100; the intersection would be empty
			// and the pod would fail without a word on h100.
			name: "pinned to a node left out: all nodes, so Filter says why", wantAll: true,
			pod: pinned("h100", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"}),
		},
		// The pod's own node rules: when they admit no node named, the list
		// would hide the reason on the nodes they do admit.
		{
			name: "node selector admits a named node: the list", pod: withSelector(l4Pod(), "team", "x"),
			mutate: label("team", "x", 2), want: []string{"l4", "l4-half"},
		},
		{
			name: "node selector admits only a node left out: all nodes", pod: withSelector(l4Pod(), "team", "x"),
			mutate: label("team", "x", 0), wantAll: true,
		},
		{
			name: "required affinity on labels admits only nodes left out: all nodes", wantAll: true,
			pod:    withAffinity(l4Pod(), v1.NodeSelectorRequirement{Key: "team", Operator: v1.NodeSelectorOpIn, Values: []string{"x", "y"}}),
			mutate: label("team", "y", 0, 4),
		},
		{
			name: "taints the pod does not tolerate on every named node: all nodes", pod: l4Pod(), wantAll: true,
			mutate: taint(v1.TaintEffectNoSchedule, 2, 3),
		},
		{
			name: "NoExecute too", pod: l4Pod(), wantAll: true,
			mutate: taint(v1.TaintEffectNoExecute, 2, 3),
		},
		{
			name: "a PreferNoSchedule taint does not count", pod: l4Pod(), want: []string{"l4", "l4-half"},
			mutate: taint(v1.TaintEffectPreferNoSchedule, 2, 3),
		},
		{
			name: "tolerated taints: the list", want: []string{"l4", "l4-half"},
			pod: func() *v1.Pod {
				p := l4Pod()
				p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "x", Effect: v1.TaintEffectNoSchedule}}
				return p
			}(),
			mutate: taint(v1.TaintEffectNoSchedule, 2, 3),
		},
		{
			name: "every named node cordoned: all nodes", pod: l4Pod(), wantAll: true,
			mutate: func(nodes []fwk.NodeInfo) {
				nodes[2].Node().Spec.Unschedulable = true
				nodes[3].Node().Spec.Unschedulable = true
			},
		},
		{
			// No node has 4 free L4s and 4 L4 devices exist only on full or
			// broken nodes: nil, so that Filter and NodeResourcesFit say why.
			name: "none qualifies: all nodes, for the reasons per node", pod: gpuPod("4", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"}),
			wantAll: true,
			mutate: func(nodes []fwk.NodeInfo) {
				// Fill l4 too, so that no L4 node has 4 free.
				nodes[2] = infoWith(nodes[2].Node(), boundPod("c", "l4", "1", 0))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPluginOrDefault(t, tt.args)
			nodes := fleet(tt.prio)
			if tt.mutate != nil {
				tt.mutate(nodes)
			}
			res, status := pl.PreFilter(ctx, framework.NewCycleState(), tt.pod, nodes)
			if !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			if tt.wantAll {
				if !res.AllNodes() {
					t.Fatalf("want all nodes, got %v", sets.List(res.NodeNames))
				}
				return
			}
			if res.AllNodes() {
				t.Fatalf("want %v, got all nodes", tt.want)
			}
			got := sets.List(res.NodeNames)
			sort.Strings(tt.want)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			// A superset of the feasible nodes: every node left out is one
			// DeviceFit's Filter rejects or whose free devices are too few.
			for _, ni := range nodes {
				if res.NodeNames.Has(ni.Node().Name) {
					continue
				}
				if pl.Filter(ctx, stateOf(t, pl, tt.pod, nodes), tt.pod, ni).IsSuccess() && freeFor(ni, tt.pod, pl) {
					t.Errorf("node %s left out, but DeviceFit's Filter passes and it has room", ni.Node().Name)
				}
			}
		})
	}
}

// l4Pod asks for one L4.
func l4Pod() *v1.Pod { return gpuPod("1", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"}) }

func withSelector(p *v1.Pod, key, value string) *v1.Pod {
	p.Spec.NodeSelector = map[string]string{key: value}
	return p
}

func withAffinity(p *v1.Pod, r v1.NodeSelectorRequirement) *v1.Pod {
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{r}}},
	}}}
	return p
}

// label sets key=value on the fleet's nodes at the indices.
func label(key, value string, at ...int) func([]fwk.NodeInfo) {
	return func(nodes []fwk.NodeInfo) {
		for _, j := range at {
			nodes[j].Node().Labels[key] = value
		}
	}
}

// taint puts dedicated=x with the effect on the fleet's nodes at the indices.
func taint(effect v1.TaintEffect, at ...int) func([]fwk.NodeInfo) {
	return func(nodes []fwk.NodeInfo) {
		for _, j := range at {
			n := nodes[j].Node()
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "dedicated", Value: "x", Effect: effect})
		}
	}
}

// TestPreFilterResultNearlyAll: a set naming nearly every node is not worth
// returning.
func TestPreFilterResultNearlyAll(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(), nil)
	var nodes []fwk.NodeInfo
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		nodes = append(nodes, nodeInfo(gpuNode(name, "NVIDIA-L4", "4", nil)))
	}
	nodes = append(nodes, nodeInfo(st.MakeNode().Name("cpu").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64"}).Obj()))
	res, status := pl.PreFilter(ctx, framework.NewCycleState(), gpuPod("1", nil), nodes)
	if !status.IsSuccess() {
		t.Fatal(status)
	}
	if !res.AllNodes() {
		t.Errorf("10 of 11 nodes qualify: want all nodes, got %v", sets.List(res.NodeNames))
	}
}

func stateOf(t *testing.T, pl *DeviceFit, pod *v1.Pod, nodes []fwk.NodeInfo) fwk.CycleState {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, pod, nodes); !status.IsSuccess() {
		t.Fatal(status)
	}
	return cs
}

// freeFor reports whether the node's free devices cover the pod's requests.
func freeFor(ni fwk.NodeInfo, pod *v1.Pod, pl *DeviceFit) bool {
	demand, err := devices.PodDemand(pod, pl.resources)
	if err != nil {
		return false
	}
	for _, r := range demand {
		if ni.GetAllocatable().GetScalarResources()[r.Name]-ni.GetRequested().GetScalarResources()[r.Name] < r.Count {
			return false
		}
	}
	return true
}

// TestPreFilterResultIsSuperset checks the candidate list against upstream
// on random fleets and pods: every node where DeviceFit's Filter passes and
// upstream NodeResourcesFit's Fits finds room, or would find room once the
// pods preemption may evict are gone, is in the list. A left-out node is
// never considered again in that cycle, preemption included, so a miss
// would be a pod wrongly kept pending.
func TestPreFilterResultIsSuperset(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	rng := rand.New(rand.NewPCG(42, 1))
	products := []string{"NVIDIA-L4", "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB-MIG-INVALID", ""}
	selectors := []map[string]string{nil,
		{devices.AnnotationProducts: "NVIDIA-L4"},
		{devices.AnnotationProducts: "NVIDIA-A100-SXM4-80GB,NVIDIA-H100-80GB-HBM3"},
		{devices.AnnotationExcludeProducts: "NVIDIA-L4"},
	}
	priorities := []int32{-10, 0, 10}
	var checked, leftOut int
	for iter := range 300 {
		var nodes []fwk.NodeInfo
		for i := range 30 {
			name := fmt.Sprint("n", i)
			res := map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}
			w := st.MakeNode().Name(name)
			mig := rng.IntN(6) == 0
			var held v1.ResourceName
			if mig {
				w = w.Label(devices.LabelMIGStrategy, []string{"mixed", "single"}[rng.IntN(2)])
				held = "nvidia.com/mig-1g.10gb"
			} else if p := products[rng.IntN(len(products))]; rng.IntN(5) > 0 {
				if p != "" {
					w = w.Label(devices.LabelGPUProduct, p)
				}
				held = gpu
			}
			if held != "" {
				res[held] = fmt.Sprint(rng.IntN(9))
			}
			n := w.Capacity(res).Obj()
			if held != "" && rng.IntN(10) == 0 {
				// A broken status: more allocatable than capacity.
				n.Status.Capacity = n.Status.Capacity.DeepCopy()
				n.Status.Capacity[held] = resource.MustParse("1")
			}
			var pods []*v1.Pod
			for k := range rng.IntN(4) {
				p := st.MakePod().Name(fmt.Sprint(name, "-", k)).UID(fmt.Sprint(iter, name, k)).Node(name).
					Priority(priorities[rng.IntN(len(priorities))]).Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"})
				if held != "" {
					p = p.Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", held: fmt.Sprint(rng.IntN(3))})
				}
				pods = append(pods, p.Obj())
			}
			nodes = append(nodes, infoWith(n, pods...))
		}
		want := gpu
		if rng.IntN(4) == 0 {
			want = "nvidia.com/mig-1g.10gb"
		}
		pw := st.MakePod().Name("p").UID(fmt.Sprint("p", iter)).Annotations(selectors[rng.IntN(len(selectors))]).
			Priority(priorities[rng.IntN(len(priorities))]).
			Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", want: fmt.Sprint(1 + rng.IntN(4))})
		if rng.IntN(3) == 0 {
			pw = pw.PreemptionPolicy(v1.PreemptNever)
		}
		pod := pw.Obj()

		pl := newPlugin(t, defaultArgs(), nil)
		cs := framework.NewCycleState()
		res, status := pl.PreFilter(ctx, cs, pod, nodes)
		if !status.IsSuccess() || res.AllNodes() {
			continue
		}
		checked++
		canPreempt := pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy != v1.PreemptNever
		for _, ni := range nodes {
			if res.NodeNames.Has(ni.Node().Name) {
				continue
			}
			leftOut++
			if !pl.Filter(ctx, cs, pod, ni).IsSuccess() {
				continue
			}
			opts := noderesources.ResourceRequestsOptions{}
			if len(noderesources.Fits(pod, ni, nil, opts)) == 0 {
				t.Fatalf("iteration %d: %s left out, but Filter passes and NodeResourcesFit finds room", iter, ni.Node().Name)
			}
			if !canPreempt {
				continue
			}
			var staying []*v1.Pod
			for _, p := range ni.GetPods() {
				if corev1helpers.PodPriority(p.GetPod()) >= corev1helpers.PodPriority(pod) {
					staying = append(staying, p.GetPod())
				}
			}
			if len(noderesources.Fits(pod, infoWith(ni.Node(), staying...), nil, opts)) == 0 {
				t.Fatalf("iteration %d: %s left out, but preempting its lower-priority pods would make room", iter, ni.Node().Name)
			}
		}
	}
	// The check must have bitten: lists were returned and nodes left out.
	if checked < 50 || leftOut < 500 {
		t.Fatalf("only %d lists and %d nodes left out in 300 draws: the draws do not exercise the list", checked, leftOut)
	}
	t.Logf("%d candidate lists, %d nodes left out, each checked against NodeResourcesFit", checked, leftOut)
}

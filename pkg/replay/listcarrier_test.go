package replay

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
)

// TestListCarriedThroughTheFramework runs the deployed profile's PreFilter
// plugins through the real framework: DeviceFit's candidate list reaches
// the framework through DevicePack (shared.ListCarrier), as DevicePack's
// shortlist when there is one and whole when not, and only DevicePack is
// named for the nodes left out; explain's message, like the scheduler's
// after DeviceFit's PostFilter, names DeviceFit for them.
func TestListCarriedThroughTheFramework(t *testing.T) {
	if devicepack.Name != shared.ListCarrier {
		t.Fatalf("the carrier is %q, DevicePack is %q", shared.ListCarrier, devicepack.Name)
	}
	_, ctx := ktesting.NewTestContext(t)
	pol := policies(t, PolicyDeviceFit)[0]
	c := explainCluster()
	tainted := NewNode(&NodeSpec{Name: "h100-t", MilliCPU: 64000, MemoryMiB: 512 << 10, GPUs: 8, Model: "NVIDIA-H100-80GB-HBM3"})
	tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}
	c.Nodes = append(c.Nodes, tainted)
	// Full, so that DeviceFit's list leaves it out.
	c.Pods = append(c.Pods, st.MakePod().Namespace("ns").Name("full-t").UID("full-t").Node("h100-t").SchedulerName("devicefit").
		Res(map[v1.ResourceName]string{DeviceResource: "8"}).Obj())

	noShortlist := explainPod("scored", "1", nil, nil)
	noShortlist.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
		Weight:     1,
		Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "team", Operator: v1.NodeSelectorOpIn, Values: []string{"y"}}}},
	}}}}
	tests := []struct {
		name string
		pod  *v1.Pod
		// want: the nodes named, or of which one is named.
		want    []string
		oneOfIt bool
	}{
		{"shortlist", explainPod("fit", "1", nil, nil), []string{"a100", "h100-a"}, true},
		{"no shortlist: DeviceFit's list whole", noShortlist, []string{"a100", "h100-a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, err := newClusterSim(ctx, pol, c, nil)
			if err != nil {
				t.Fatal(err)
			}
			state := framework.NewCycleState()
			res, status, narrowedBy := sim.fw.RunPreFilterPlugins(ctx, state, tt.pod)
			if !status.IsSuccess() {
				t.Fatal(status)
			}
			switch {
			case res.AllNodes():
				t.Errorf("all nodes named, want %v", tt.want)
			case tt.oneOfIt && (res.NodeNames.Len() != 1 || !sets.New(tt.want...).IsSuperset(res.NodeNames)):
				t.Errorf("nodes named %v, want one of %v", sets.List(res.NodeNames), tt.want)
			case !tt.oneOfIt && !sets.New(tt.want...).Equal(res.NodeNames):
				t.Errorf("nodes named %v, want %v", sets.List(res.NodeNames), tt.want)
			}
			if !narrowedBy.Equal(sets.New(shared.ListCarrier)) {
				t.Errorf("plugins named for the nodes left out: %v, want only %s", sets.List(narrowedBy), shared.ListCarrier)
			}
			if v := shared.ReadVerdict(state); v == nil || v.List.AllNodes() || !sets.New("a100", "h100-a").Equal(v.List.NodeNames) {
				t.Errorf("DeviceFit's carried list: %+v, want a100 and h100-a", v)
			}
		})
	}

	// Every node DeviceFit names fails for CPU; the tainted H100, which its
	// list and the pod's own rules leave out, gets no Filter verdict.
	big := st.MakePod().Namespace("ns").Name("cpu-heavy").UID("cpu-heavy").SchedulerName("devicefit").
		Res(map[v1.ResourceName]string{v1.ResourceCPU: "100", DeviceResource: "1"}).Obj()
	e, err := Explain(ctx, pol, c, big)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1 node(s) didn't satisfy plugin(s) [DeviceFit]"; !strings.Contains(e.Message, want) {
		t.Errorf("explain's message %q does not count the tainted node as %q", e.Message, want)
	}
}

package upstream

import (
	"context"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/utils/ptr"
)

var metricsOnce sync.Once

// handleKeeper is a plugin that keeps the handle its factory was given;
// its PreFilter returns result when set.
type handleKeeper struct {
	h      fwk.Handle
	result *fwk.PreFilterResult
}

func (*handleKeeper) Name() string { return "HandleKeeper" }
func (k *handleKeeper) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if k.result != nil {
		return k.result, nil
	}
	return nil, fwk.NewStatus(fwk.Skip)
}
func (*handleKeeper) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// realFramework builds the pinned release's framework, as kube-scheduler
// does, with NodeResourcesFit and NodeDeclaredFeatures in PreFilter and
// Filter, and returns it with the handle a plugin received.
func realFramework(t *testing.T) (framework.Framework, fwk.Handle) {
	fw, keeper := realFrameworkKeeper(t)
	return fw, keeper.h
}

// realFrameworkKeeper is realFramework, with the plugin itself.
func realFrameworkKeeper(t *testing.T) (framework.Framework, *handleKeeper) {
	t.Helper()
	return realFrameworkOver(t, cache.NewEmptySnapshot())
}

// realFrameworkOver is realFrameworkKeeper over the snapshot snap.
func realFrameworkOver(t *testing.T, snap *cache.Snapshot) (framework.Framework, *handleKeeper) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	// The framework counts into the scheduler's metrics, which kube-scheduler
	// initialises at start.
	metricsOnce.Do(schedmetrics.InitMetrics)
	keeper := &handleKeeper{}
	registry := frameworkplugins.NewInTreeRegistry()
	if err := registry.Register(keeper.Name(), func(_ context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		keeper.h = h
		return keeper, nil
	}); err != nil {
		t.Fatal(err)
	}
	set := func(names ...string) schedconfig.PluginSet {
		var s schedconfig.PluginSet
		for _, n := range names {
			s.Enabled = append(s.Enabled, schedconfig.Plugin{Name: n})
		}
		return s
	}
	profile := &schedconfig.KubeSchedulerProfile{
		SchedulerName: "devicefit",
		Plugins: &schedconfig.Plugins{
			QueueSort: set("PrioritySort"),
			PreFilter: set("NodeResourcesFit", "NodeDeclaredFeatures", keeper.Name()),
			Filter:    set("NodeResourcesFit", "NodeDeclaredFeatures"),
			Bind:      set("DefaultBinder"),
		},
		PluginConfig: []schedconfig.PluginConfig{{Name: "NodeResourcesFit", Args: &schedconfig.NodeResourcesFitArgs{
			ScoringStrategy: &schedconfig.ScoringStrategy{Type: schedconfig.LeastAllocated,
				Resources: []schedconfig.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}},
		}}},
	}
	client := fake.NewClientset()
	fw, err := frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithSnapshotSharedLister(snap))
	if err != nil {
		t.Fatal(err)
	}
	if keeper.h == nil {
		t.Fatal("the framework never called the plugin's factory")
	}
	return fw, keeper
}

func pod(spec v1.PodSpec) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p"}, Spec: spec}
}

// TestFitRequestIsNodeResourcesFits: FitRequest reads the request
// NodeResourcesFit's real PreFilter wrote, with the right numbers.
func TestFitRequestIsNodeResourcesFits(t *testing.T) {
	fw, _ := realFramework(t)
	p := pod(v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("2Gi"), "nvidia.com/gpu": resource.MustParse("2")},
		Limits:   v1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
	}}}})
	state := framework.NewCycleState()
	if _, st, _ := fw.RunPreFilterPlugins(context.Background(), state, p); !st.IsSuccess() && !st.IsSkip() {
		t.Fatalf("PreFilter: %v", st)
	}
	req, ok := FitRequest(state)
	if !ok {
		t.Fatalf("no NodeResourcesFit PreFilter state under %q in the shape PodRequest: renamed or reshaped upstream", fitStateKey)
	}
	if req.GetMilliCPU() != 1500 || req.GetMemory() != 2<<30 || req.GetScalarResources()["nvidia.com/gpu"] != 2 {
		t.Errorf("request cpu %dm memory %d gpu %d; want 1500m, 2Gi, 2", req.GetMilliCPU(), req.GetMemory(), req.GetScalarResources()["nvidia.com/gpu"])
	}
	if NeedsNodeFeatures(state) {
		t.Error("a plain pod needs node features")
	}
}

// TestNeedsNodeFeaturesIsNodeDeclaredFeatures: a pod with host networking
// in a user namespace needs a node feature (UserNamespacesHostNetwork); the
// real NodeDeclaredFeatures PreFilter writes its state, and
// NeedsNodeFeatures sees it.
func TestNeedsNodeFeaturesIsNodeDeclaredFeatures(t *testing.T) {
	fw, _ := realFramework(t)
	p := pod(v1.PodSpec{HostNetwork: true, HostUsers: ptr.To(false), Containers: []v1.Container{{Name: "c"}}})
	state := framework.NewCycleState()
	if _, st, _ := fw.RunPreFilterPlugins(context.Background(), state, p); !st.IsSuccess() && !st.IsSkip() {
		t.Fatalf("PreFilter: %v", st)
	}
	if !NeedsNodeFeatures(state) {
		t.Errorf("no NodeDeclaredFeatures PreFilter state under %q for a pod that needs a node feature: renamed upstream, or the feature no longer inferred", featuresStateKey)
	}
}

// TestPluginsThroughTheHandle: the handle a plugin's factory receives lists
// the profile's plugins.
func TestPluginsThroughTheHandle(t *testing.T) {
	_, h := realFramework(t)
	list := Plugins(h)
	if list == nil {
		t.Fatal("the handle given to plugins does not list the profile's plugins (ListPlugins): the framework no longer hands itself to plugins")
	}
	var names []string
	for _, p := range list.Filter.Enabled {
		names = append(names, p.Name)
	}
	if len(names) != 2 || names[0] != "NodeResourcesFit" || names[1] != "NodeDeclaredFeatures" {
		t.Errorf("Filter plugins %v; want [NodeResourcesFit NodeDeclaredFeatures]", names)
	}
}

// TestKeptResultIsCopied: the real framework's PreFilter result holds the
// names a plugin returned through KeptResult in a set of its own, so that
// neither changing the framework's result nor the plugin's kept set later
// reaches the other.
func TestKeptResultIsCopied(t *testing.T) {
	fw, keeper := realFrameworkKeeper(t)
	kept := sets.New("a", "b")
	keeper.result = KeptResult(kept)
	res, st, _ := fw.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), pod(v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}))
	if !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if res == nil || !res.NodeNames.Equal(sets.New("a", "b")) {
		t.Fatalf("result %v; want the names a and b", res)
	}
	res.NodeNames.Delete("a")
	kept.Insert("c")
	if !kept.Has("a") || res.NodeNames.Has("c") {
		t.Errorf("the framework's result shares the plugin's set (kept %v, result %v): KeptResult must copy it", sets.List(kept), sets.List(res.NodeNames))
	}
}

// TestPlacementIsTheSnapshots: through the handle the real framework gives
// a plugin, Placement is the placement the snapshot assumed, by name and
// nodes, and every node outside one.
func TestPlacementIsTheSnapshots(t *testing.T) {
	nodes := []*v1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	}
	snap := cache.NewSnapshot(nil, nodes)
	_, keeper := realFrameworkOver(t, snap)
	placement := ""
	names := func() []string {
		t.Helper()
		name, got, ok := Placement(keeper.h)
		if !ok {
			t.Fatal("Placement: the handle's lister cannot list a placement's nodes")
		}
		placement = name
		var out []string
		for _, ni := range got {
			out = append(out, ni.Node().Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"a", "b", "c"}) || placement != "" {
		t.Errorf("outside a placement: %q %v, want no name and every node", placement, got)
	}
	b, err := snap.Get("b")
	if err != nil {
		t.Fatal(err)
	}
	c, err := snap.Get("c")
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.AssumePlacement(&fwk.Placement{Name: "bc", Nodes: []fwk.NodeInfo{b, c}}); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, []string{"b", "c"}) || placement != "bc" {
		t.Errorf("in placement bc: %q %v", placement, got)
	}
	snap.ForgetPlacement()
	if got := names(); len(got) != 3 {
		t.Errorf("after the placement: %v, want every node", got)
	}
}

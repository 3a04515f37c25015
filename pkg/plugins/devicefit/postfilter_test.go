package devicefit

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/metrics"
)

// snapshotHandle serves a scheduler snapshot, as the framework's handle
// does, and runs a profile of two Filter plugins: upstream's
// NodeResourcesFit check (noderesources.Fits, its words), then DeviceFit's.
type snapshotHandle struct {
	fwk.Handle
	snapshot *cache.Snapshot
	pl       **DeviceFit
}

func (h snapshotHandle) SnapshotSharedLister() fwk.SharedLister { return h.snapshot }
func (h snapshotHandle) SharedDRAManager() fwk.SharedDRAManager { return nil }

// SharedInformerFactory: none; the metrics source is then not registered.
func (h snapshotHandle) SharedInformerFactory() informers.SharedInformerFactory { return nil }

func (h snapshotHandle) RunFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if short := noderesources.Fits(pod, ni, nil, noderesources.ResourceRequestsOptions{}); len(short) > 0 {
		reasons := make([]string, len(short))
		for i, r := range short {
			reasons[i] = r.Reason
		}
		return fwk.NewStatus(fwk.Unschedulable, reasons...)
	}
	return (*h.pl).Filter(ctx, state, pod, ni)
}

// hiddenFleet: one L4 node with room (the only one the list names), and
// nodes the list leaves out for each of DeviceFit's reasons and for room;
// the pod asks for one L4.
func hiddenFleet(t *testing.T) (*DeviceFit, []fwk.NodeInfo, *v1.Pod) {
	t.Helper()
	broken := gpuNode("broken", "NVIDIA-L4", "4", nil)
	broken.Status.Capacity = broken.Status.Capacity.DeepCopy()
	broken.Status.Capacity[gpu] = resource.MustParse("2")
	tainted := gpuNode("tainted", "NVIDIA-L4", "4", nil)
	tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}
	nodes := []*v1.Node{
		gpuNode("l4", "NVIDIA-L4", "4", nil),
		gpuNode("l4-full", "NVIDIA-L4", "4", nil),
		gpuNode("h100", "NVIDIA-H100-80GB-HBM3", "8", map[string]string{"team": "x"}),
		broken, tainted,
		st.MakeNode().Name("cpu").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64"}).Obj(),
	}
	// tainted is full too, so that the list leaves it out.
	pods := []*v1.Pod{boundPod("a", "l4-full", "4", 0), boundPod("b", "tainted", "4", 0)}
	snapshot := cache.NewSnapshot(pods, nodes)
	var pl *DeviceFit
	pl = newPlugin(t, defaultArgs(), snapshotHandle{snapshot: snapshot, pl: &pl})
	infos, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return pl, infos, l4Pod()
}

// TestPostFilterGivesHiddenReasons: the pod fails on the one node the list
// named (here: for CPU, as NodeResourcesFit would say); PostFilter gives
// every node left out that the pod's own rules admit the verdict of the
// profile's Filter plugins, and the FitError message, formatted by
// upstream, counts them so. The tainted node, which the pod rules out
// itself, keeps the framework's words.
func TestPostFilterGivesHiddenReasons(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl, nodes, pod := hiddenFleet(t)
	state := framework.NewCycleState()
	res, status := pl.PreFilter(ctx, state, pod, nodes)
	if !status.IsSuccess() {
		t.Fatal(status)
	}
	if diff := sets.List(res.NodeNames); len(diff) != 1 || diff[0] != "l4" {
		t.Fatalf("PreFilterResult: want [l4], got %v", diff)
	}
	m := framework.NewDefaultNodeToStatus()
	m.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) [DeviceFit]"))
	m.Set("l4", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))

	products := pl.rejections[metrics.ReasonProduct]
	before := counterValue(t, products)
	if _, status := pl.PostFilter(ctx, state, pod, m); status.Code() != fwk.Unschedulable || status.Message() != "" {
		t.Errorf("PostFilter: want Unschedulable without reasons (the map carries them), got %v", status)
	}
	// PreFilter counted h100's rejection when it left the node out.
	if after := counterValue(t, products); after != before {
		t.Errorf("PostFilter counted product rejections again: %v before, %v after", before, after)
	}
	want := map[string]string{
		"l4":      "Insufficient cpu",
		"l4-full": "Insufficient nvidia.com/gpu",
		"h100":    ReasonProduct,
		"broken":  ReasonAllocatableAboveCapacity,
		"cpu":     "Insufficient nvidia.com/gpu",
		"tainted": "node(s) didn't satisfy plugin(s) [DeviceFit]",
	}
	for name, reason := range want {
		if got := strings.Join(m.Get(name).Reasons(), "; "); got != reason {
			t.Errorf("node %s: got %q, want %q", name, got, reason)
		}
	}
	fitErr := &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: framework.Diagnosis{NodeToStatus: m}}
	const msg = "0/6 nodes are available: 1 Insufficient cpu, 1 node(s) advertised more device allocatable than capacity, " +
		"1 node(s) didn't match devicefit.io/products, 1 node(s) didn't satisfy plugin(s) [DeviceFit], 2 Insufficient nvidia.com/gpu."
	if got := fitErr.Error(); got != msg {
		t.Errorf("message:\n got %q\nwant %q", got, msg)
	}
}

// TestPostFilterNominatedNodeKept: a node some Filter judged (the nominated
// node the framework tries first) keeps its status.
func TestPostFilterNominatedNodeKept(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl, nodes, pod := hiddenFleet(t)
	state := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, state, pod, nodes); !status.IsSuccess() {
		t.Fatal(status)
	}
	m := framework.NewDefaultNodeToStatus()
	m.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) [DeviceFit]"))
	m.Set("h100", fwk.NewStatus(fwk.Unschedulable, "Insufficient memory"))
	pl.PostFilter(ctx, state, pod, m)
	if got := m.Get("h100").Message(); got != "Insufficient memory" {
		t.Errorf("nominated node h100: got %q, want its own status kept", got)
	}
}

// readOnlyStatuses is a NodeToStatusReader other than the scheduler's map.
type readOnlyStatuses struct{ fwk.NodeToStatusReader }

// TestPostFilterOtherReader: a caller whose map PostFilter cannot write
// gets the hidden reasons as a histogram in the status.
func TestPostFilterOtherReader(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl, nodes, pod := hiddenFleet(t)
	state := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, state, pod, nodes); !status.IsSuccess() {
		t.Fatal(status)
	}
	_, status := pl.PostFilter(ctx, state, pod, readOnlyStatuses{framework.NewDefaultNodeToStatus()})
	const want = "DeviceFit on the nodes it left out: 1 node(s) advertised more device allocatable than capacity, " +
		"1 node(s) didn't match devicefit.io/products, 2 Insufficient nvidia.com/gpu."
	if status.Code() != fwk.Unschedulable || status.Message() != want {
		t.Errorf("got %v %q, want Unschedulable %q", status.Code(), status.Message(), want)
	}
}

// TestPostFilterNothingHidden: when PreFilter named all nodes (or skipped
// the pod), PostFilter adds nothing.
func TestPostFilterNothingHidden(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl, nodes, _ := hiddenFleet(t)
	for _, pod := range []*v1.Pod{
		// Only h100 is eligible and it is left out: all nodes.
		withSelector(l4Pod(), "team", "x"),
		st.MakePod().Name("cpu-pod").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
	} {
		state := framework.NewCycleState()
		res, status := pl.PreFilter(ctx, state, pod, nodes)
		if !res.AllNodes() || !status.IsSuccess() && status.Code() != fwk.Skip {
			t.Fatalf("pod %s: PreFilter %v %v, want all nodes", pod.Name, res, status)
		}
		m := framework.NewDefaultNodeToStatus()
		m.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "absent"))
		if _, status := pl.PostFilter(ctx, state, pod, m); status.Code() != fwk.Unschedulable || status.Message() != "" || m.Len() != 0 {
			t.Errorf("pod %s: PostFilter %v, %d statuses written; want nothing", pod.Name, status, m.Len())
		}
	}
}

package devicepack

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
	nodetable "github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

// snapshotHandle serves a scheduler snapshot, as the framework's handle does.
type snapshotHandle struct {
	fwk.Handle
	snapshot *cache.Snapshot
}

func (h snapshotHandle) SnapshotSharedLister() fwk.SharedLister { return h.snapshot }

// SharedDRAManager: none; no node has DRA devices.
func (h snapshotHandle) SharedDRAManager() fwk.SharedDRAManager { return nil }

// SharedInformerFactory: none; the metrics source is then not registered.
func (h snapshotHandle) SharedInformerFactory() informers.SharedInformerFactory { return nil }

// scarcityFleet: two L4 nodes (one GPU of l4-b taken), a T4 node and the
// extra nodes, and a static workload of any-GPU and T4-only jobs with
// scarcity on.
func scarcityFleet(t *testing.T, extra ...*v1.Node) (*cache.Snapshot, *config.DevicePackArgs) {
	node := func(name, product, gpus string) *v1.Node {
		return st.MakeNode().Name(name).Label(devices.LabelGPUProduct, product).Label(devices.LabelGPUMemory, "23034").
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", gpu: gpus}).Obj()
	}
	nodes := append([]*v1.Node{node("l4-a", "NVIDIA-L4", "4"), node("l4-b", "NVIDIA-L4", "4"), node("t4", "Tesla-T4", "2")}, extra...)
	running := st.MakePod().Name("r").UID("r").Node("l4-b").Res(map[v1.ResourceName]string{gpu: "1"}).Obj()
	args := staticArgs(t, gpuClass(1, 1), config.WorkloadClass{Resource: string(gpu), Devices: 1, Weight: 1, Products: "Tesla-T4"})
	args.ScarcityWeight = 100
	return cache.NewSnapshot([]*v1.Pod{running}, nodes), args
}

// TestScarcityCountsTheWholeCluster: the free devices behind the scarcity
// pressure are those of every node in the snapshot, not only of the
// candidates PreScore is given (the percentageOfNodesToScore sample).
func TestScarcityCountsTheWholeCluster(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	snapshot, args := scarcityFleet(t)
	pl, err := New(ctx, args, snapshotHandle{snapshot: snapshot})
	if err != nil {
		t.Fatal(err)
	}
	pack := pl.(*DevicePack)
	all, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	var candidates []fwk.NodeInfo
	for _, n := range all {
		if n.Node().Name != "l4-b" {
			candidates = append(candidates, n)
		}
	}
	state := framework.NewCycleState()
	if s := pack.PreScore(ctx, state, gpuPod("p", "1"), candidates); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	c, err := state.Read(preScoreStateKey)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	table := pack.table.Cache().Kinds()
	for id, k := range c.(*preScoreState).kinds {
		got[table[id].Device.Product] = k.free
	}
	// l4-b is no candidate, but its 3 free L4s count.
	want := map[string]int64{"NVIDIA-L4": 4 + 3, "Tesla-T4": 2}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("free %s: got %d, want %d (all: %v)", p, got[p], n, got)
		}
	}
}

// TestScarcityFromTheNodeTable: with DeviceFit in the profile, its
// PreFilter refreshes the node table over every node, and DevicePack's
// PreScore reads the table's Cycle and free devices per kind instead of
// walking the cluster again: the same figures as its own refresh.
func TestScarcityFromTheNodeTable(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	snapshot, args := scarcityFleet(t)
	pack, pod, state, all, cyc := afterDeviceFit(t, ctx, args, snapshotHandle{snapshot: snapshot})
	candidates := []fwk.NodeInfo{all[0], all[2]} // l4-b is no candidate
	if s := pack.PreScore(ctx, state, pod, candidates); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	if again := pack.table.Current(state); again != cyc {
		t.Error("PreScore refreshed the node table again in the cycle")
	}
	c, err := state.Read(preScoreStateKey)
	if err != nil {
		t.Fatal(err)
	}
	ps := c.(*preScoreState)
	if ps.cache != cyc.Cache() {
		t.Error("PreScore did not use the node table's cache")
	}
	got := map[string]int64{}
	for id, k := range ps.kinds {
		got[cyc.Kinds[id].Device.Product] += k.free
	}
	if want := map[string]int64{"NVIDIA-L4": 4 + 3, "Tesla-T4": 2}; !cmp.Equal(got, want) {
		t.Errorf("free devices from the node table: got %v, want %v", got, want)
	}
}

// afterDeviceFit makes DevicePack and DeviceFit on h and runs DeviceFit's
// PreFilter for a 1-GPU pod over h's snapshot's nodes, as the framework
// does before DevicePack's PreScore: it returns DevicePack, the pod, the
// cycle state, the nodes and the node table's Cycle DeviceFit refreshed.
func afterDeviceFit(t *testing.T, ctx context.Context, args *config.DevicePackArgs, h fwk.Handle) (*DevicePack, *v1.Pod, fwk.CycleState, []fwk.NodeInfo, *nodetable.Cycle) {
	t.Helper()
	pack, err := New(ctx, args, h)
	if err != nil {
		t.Fatal(err)
	}
	fit, err := devicefit.New(ctx, &config.DeviceFitArgs{DeviceResources: args.DeviceResources, DeviceNodePolicy: config.DeviceNodePolicyNone}, h)
	if err != nil {
		t.Fatal(err)
	}
	all, err := h.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	pod := gpuPod("p", "1")
	state := framework.NewCycleState()
	if _, s := fit.(fwk.PreFilterPlugin).PreFilter(ctx, state, pod, all); !s.IsSuccess() {
		t.Fatalf("DeviceFit PreFilter: %v", s)
	}
	cyc := pack.(*DevicePack).table.Current(state)
	if cyc == nil {
		t.Fatal("DeviceFit did not refresh the node table DevicePack reads")
	}
	return pack.(*DevicePack), pod, state, all, cyc
}

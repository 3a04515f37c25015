package devices

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cacheNode(name, product string, alloc, capacity string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelGPUProduct: product, LabelGPUMemory: "24576"}}}
	n.Status.Allocatable = v1.ResourceList{NVIDIAGPU: resource.MustParse(alloc), v1.ResourceCPU: resource.MustParse("8")}
	n.Status.Capacity = v1.ResourceList{NVIDIAGPU: resource.MustParse(capacity), v1.ResourceCPU: resource.MustParse("8"),
		// A stale zero-capacity MIG profile: still described.
		"nvidia.com/mig-1g.10gb": resource.MustParse("0")}
	return n
}

func TestNodeCache(t *testing.T) {
	set, err := NewResourceSet(DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}
	c := NewNodeCache(set)
	a, b := cacheNode("a", "NVIDIA-L4", "4", "4"), cacheNode("b", "NVIDIA-L4", "4", "2")
	kinds, _ := c.Refresh(slices.Values([]*v1.Node{a, b}), true, nil)
	if len(kinds) != 2 {
		t.Fatalf("two nodes of one product, gpu and a MIG profile: want 2 kinds, got %v", kinds)
	}
	_, entries := c.Refresh(slices.Values([]*v1.Node{b, nil, a}), true, nil)
	ea, eb := c.Lookup(a), c.Lookup(b)
	if len(entries) != 3 || entries[0] != eb || entries[1] != nil || entries[2] != ea {
		t.Errorf("entries must follow the nodes' order: got %v", entries)
	}
	if ea == nil || eb == nil {
		t.Fatal("refreshed nodes not found")
	}
	ga, gb := ea.Find(NVIDIAGPU), eb.Find(NVIDIAGPU)
	if ga.Kind != gb.Kind || kinds[ga.Kind].Device.Product != "NVIDIA-L4" || kinds[ga.Kind].Device.MemoryMiB != 24576 {
		t.Errorf("same labels must share a kind: %+v %+v", ga, gb)
	}
	if ga.AboveCapacity() || !gb.AboveCapacity() {
		t.Errorf("AboveCapacity: a %v (want false), b %v (want true)", ga.AboveCapacity(), gb.AboveCapacity())
	}
	if ea.Find(v1.ResourceCPU) != nil {
		t.Error("cpu is not a device resource")
	}
	if mig := ea.Find("nvidia.com/mig-1g.10gb"); mig == nil || mig.Allocatable != 0 || mig.Capacity != 0 {
		t.Errorf("stale MIG profile: got %+v", mig)
	}
	if !ea.HasDevices() {
		t.Error("a has GPUs")
	}

	// An updated node is a new object: the old one is no longer served and
	// the new one is read on the next Refresh.
	a2 := a.DeepCopy()
	a2.Labels[LabelGPUProduct] = "NVIDIA-L40S"
	if c.Lookup(a2) != nil {
		t.Error("an object the cache has not seen must not be served")
	}
	kinds, _ = c.Refresh(slices.Values([]*v1.Node{a2, b}), true, nil)
	e := c.Lookup(a2)
	if e == nil || kinds[e.Find(NVIDIAGPU).Kind].Device.Product != "NVIDIA-L40S" {
		t.Fatalf("relabelled node: got %+v", e)
	}
	if c.Lookup(a) != nil {
		t.Error("the replaced object is still served")
	}

	// Passing the previous entries back reuses those built from the same
	// objects and rebuilds the others.
	_, prev := c.Refresh(slices.Values([]*v1.Node{a2, b}), true, nil)
	a3 := a2.DeepCopy()
	a3.Labels[LabelGPUProduct] = "NVIDIA-H100"
	kinds, got := c.Refresh(slices.Values([]*v1.Node{a3, b}), true, slices.Clone(prev))
	if got[1] != prev[1] || got[0] == prev[0] || kinds[got[0].Find(NVIDIAGPU).Kind].Device.Product != "NVIDIA-H100" {
		t.Errorf("reuse: got %v from %v", got, prev)
	}
	if c.Lookup(a3) != got[0] {
		t.Error("the rebuilt entry must be the one Lookup serves")
	}
	a2 = a3

	// A full Refresh forgets deleted nodes; a partial one keeps them.
	c.Refresh(slices.Values([]*v1.Node{b}), false, nil)
	if c.Len() != 2 {
		t.Errorf("partial refresh: want 2 nodes cached, got %d", c.Len())
	}
	c.Refresh(slices.Values([]*v1.Node{b}), true, nil)
	if c.Len() != 1 || c.Lookup(a2) != nil {
		t.Errorf("full refresh: want only b cached, got %d", c.Len())
	}
}

// TestNodeCacheKindBound: labels unique to every node cannot grow the kind
// table past MaxKinds; devices past it are NoKind, and the table starts over
// on the next Refresh.
func TestNodeCacheKindBound(t *testing.T) {
	set, _ := NewResourceSet([]string{string(NVIDIAGPU)})
	c := NewNodeCache(set)
	var nodes []*v1.Node
	for i := range MaxKinds + 10 {
		nodes = append(nodes, cacheNode(fmt.Sprint("n", i), fmt.Sprint("GPU-", i), "1", "1"))
	}
	kinds, _ := c.Refresh(slices.Values(nodes), true, nil)
	if len(kinds) != MaxKinds {
		t.Fatalf("want %d kinds, got %d", MaxKinds, len(kinds))
	}
	last := c.Lookup(nodes[len(nodes)-1]).Find(NVIDIAGPU)
	if last.Kind != NoKind || last.Device.Product != fmt.Sprint("GPU-", MaxKinds+9) {
		t.Errorf("past the bound: want NoKind with the device read, got %+v", last)
	}
	kinds, _ = c.Refresh(slices.Values(nodes[:5]), true, nil)
	if len(kinds) != 5 || c.Len() != 5 {
		t.Errorf("after the reset: want 5 kinds and 5 nodes, got %d and %d", len(kinds), c.Len())
	}
}

func TestNodeCacheByObject(t *testing.T) {
	set, err := NewResourceSet(DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}
	relabel := func(n *v1.Node, product string) *v1.Node {
		n = n.DeepCopy()
		n.Labels[LabelGPUProduct] = product
		return n
	}
	a, b, c := cacheNode("a", "NVIDIA-L4", "4", "4"), cacheNode("b", "NVIDIA-L4", "4", "4"), cacheNode("c", "NVIDIA-L4", "4", "4")
	a2, b2 := relabel(a, "NVIDIA-L40S"), relabel(b, "NVIDIA-H100")
	a3 := relabel(a2, "NVIDIA-A100")
	seen := []*v1.Node{a, b, c, a2, b2, a3}
	steps := []struct {
		name    string
		nodes   []*v1.Node
		all     bool
		current []*v1.Node
	}{
		{name: "first refresh", nodes: []*v1.Node{a, b, c}, all: true, current: []*v1.Node{a, b, c}},
		{name: "a replaced", nodes: []*v1.Node{a2, b, c}, all: true, current: []*v1.Node{a2, b, c}},
		{name: "shuffled, b replaced, partial", nodes: []*v1.Node{c, b2}, current: []*v1.Node{a2, b2, c}},
		{name: "a replaced again, partial", nodes: []*v1.Node{a3}, current: []*v1.Node{a3, b2, c}},
		{name: "c deleted", nodes: []*v1.Node{b2, a3}, all: true, current: []*v1.Node{a3, b2}},
	}
	cache := NewNodeCache(set)
	var prev []*NodeDevices
	for _, step := range steps {
		_, prev = cache.Refresh(slices.Values(step.nodes), step.all, prev)
		for j, n := range step.nodes {
			if prev[j] == nil || prev[j].node != n {
				t.Errorf("%s: entry %d is not %s's object", step.name, j, n.Name)
			}
		}
		for _, n := range seen {
			e := cache.Lookup(n)
			switch {
			case slices.Contains(step.current, n) && (e == nil || e.node != n):
				t.Errorf("%s: %s's current object not served: %v", step.name, n.Name, e)
			case !slices.Contains(step.current, n) && e != nil:
				t.Errorf("%s: an object of %s that is not its current one is served", step.name, n.Name)
			}
		}
		for j, e := range prev {
			if e.ID() == 0 || slices.ContainsFunc(prev[:j], func(o *NodeDevices) bool { return o.ID() == e.ID() }) {
				t.Errorf("%s: entry %d has ID %d: want one of its own, not 0", step.name, j, e.ID())
			}
		}
		if len(cache.byObject) != len(cache.nodes) || len(cache.nodes) != len(step.current) {
			t.Errorf("%s: %d objects indexed for %d nodes, want %d", step.name, len(cache.byObject), len(cache.nodes), len(step.current))
		}
	}
}

// TestNodeCacheSharesResourceNames: entries of the same kind on different
// node objects hold the same bytes for the resource name (one cache line
// for a walk comparing names on every node), with the value unchanged.
func TestNodeCacheSharesResourceNames(t *testing.T) {
	set, err := NewResourceSet(DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}
	c := NewNodeCache(set)
	_, entries := c.Refresh(slices.Values([]*v1.Node{cacheNode("a", "NVIDIA-L4", "4", "4"), cacheNode("b", "NVIDIA-L4", "4", "4")}), true, nil)
	da, db := entries[0].Find(NVIDIAGPU), entries[1].Find(NVIDIAGPU)
	if da == nil || db == nil || da.Resource != NVIDIAGPU {
		t.Fatalf("devices: %+v %+v", da, db)
	}
	if unsafe.StringData(string(da.Resource)) != unsafe.StringData(string(db.Resource)) {
		t.Error("two nodes of one kind hold separate copies of the resource name")
	}
}

package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/devicefit/devicefit/pkg/devices"
)

// listers returns listers over fixed objects, as the informer caches hold them.
func listers(t testing.TB, nodes []*v1.Node, pods []*v1.Pod) (corelisters.NodeLister, corelisters.PodLister) {
	t.Helper()
	ni := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		if err := ni.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	pi := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, p := range pods {
		if err := pi.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewNodeLister(ni), corelisters.NewPodLister(pi)
}

func TestInventoryCollector(t *testing.T) {
	nodes := []*v1.Node{gpuNode("h1", h100, "8"), gpuNode("h2", h100, "8"), gpuNode("l1", l4, "4")}
	pods := []*v1.Pod{
		// h1: 4 + 2 of 8 taken, 2 free: below a 4-GPU job, stranded.
		boundPod("a", "h1", "1", "4"), boundPod("b", "h1", "1", "2"),
		// h2: 8 free, usable. l1: 1 of 4 taken, 3 free, below 4: stranded.
		boundPod("c", "l1", "1", "1"),
	}
	nl, pl := listers(t, nodes, pods)
	wl := jobs(t, 4)
	c := &inventoryCollector{source: &Source{Nodes: nl, Pods: pl, Resources: defaultSet(t), Workload: func([]*v1.Pod) *devices.Workload { return wl }}}

	// fragmentation: (2 + 3) stranded / (10 + 3) free = 0.38461538461538464.
	want := `
# HELP devicefit_devices [ALPHA] Devices of the cluster's nodes by device resource, product and state: allocatable; allocated (requested by bound pods); free (allocatable minus allocated per node, never negative); stranded (the expected number of free devices that a job asking for the resource, of the workload of the jobs bound and pending, could not use where they are).
# TYPE devicefit_devices gauge
devicefit_devices{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu",state="allocatable"} 16
devicefit_devices{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu",state="allocated"} 6
devicefit_devices{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu",state="free"} 10
devicefit_devices{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu",state="stranded"} 2
devicefit_devices{product="NVIDIA-L4",resource="nvidia.com/gpu",state="allocatable"} 4
devicefit_devices{product="NVIDIA-L4",resource="nvidia.com/gpu",state="allocated"} 1
devicefit_devices{product="NVIDIA-L4",resource="nvidia.com/gpu",state="free"} 3
devicefit_devices{product="NVIDIA-L4",resource="nvidia.com/gpu",state="stranded"} 3
# HELP devicefit_fragmentation_ratio [ALPHA] Stranded devices divided by free devices, per device resource (0 when none is free).
# TYPE devicefit_fragmentation_ratio gauge
devicefit_fragmentation_ratio{resource="nvidia.com/gpu"} 0.38461538461538464
`
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want), "devicefit_devices", "devicefit_fragmentation_ratio"); err != nil {
		t.Error(err)
	}
}

func TestInventoryCollectorWithoutSource(t *testing.T) {
	// Before any plugin is built, a scrape shows no devicefit gauges.
	if err := testutil.CustomCollectAndCompare(&inventoryCollector{}, strings.NewReader(""), "devicefit_devices"); err != nil {
		t.Error(err)
	}
}

func TestSetInventorySource(t *testing.T) {
	nl, pl := listers(t, nil, nil)
	withWorkload := Source{Nodes: nl, Pods: pl, Workload: func([]*v1.Pod) *devices.Workload { return nil }}
	without := Source{Nodes: nl, Pods: pl}

	saved := inventory.current()
	t.Cleanup(func() { inventory.mu.Lock(); inventory.source = saved; inventory.mu.Unlock() })

	inventory.mu.Lock()
	inventory.source = nil
	inventory.mu.Unlock()
	SetInventorySource(without)
	if got := inventory.current(); got == nil || got.Workload != nil {
		t.Fatalf("first source not taken: %+v", got)
	}
	SetInventorySource(withWorkload)
	if got := inventory.current(); got.Workload == nil {
		t.Fatal("a source with a workload must replace one without")
	}
	SetInventorySource(without)
	if got := inventory.current(); got.Workload == nil {
		t.Fatal("a source without a workload must not replace one with")
	}
}

// TestMinGatherInterval: with an interval set, a gather soon after another
// reuses its gauges; without one (production), every gather recomputes.
func TestMinGatherInterval(t *testing.T) {
	nodes := []*v1.Node{gpuNode("h1", h100, "8")}
	_, pl := listers(t, nodes, nil)
	allocatable := func(c *inventoryCollector) string {
		ch := make(chan metrics.Metric, 16)
		c.CollectWithStability(ch)
		close(ch)
		for m := range ch {
			var out dto.Metric
			if err := m.Write(&out); err != nil {
				t.Fatal(err)
			}
			for _, l := range out.GetLabel() {
				if l.GetName() == "state" && l.GetValue() == "allocatable" {
					return fmt.Sprint(out.GetGauge().GetValue())
				}
			}
		}
		return ""
	}
	for _, tc := range []struct {
		interval time.Duration
		want     string // after a second node appears
	}{
		{0, "16"},
		{time.Hour, "8"},
	} {
		ni := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		if err := ni.Add(nodes[0]); err != nil {
			t.Fatal(err)
		}
		c := &inventoryCollector{minInterval: tc.interval, source: &Source{Nodes: corelisters.NewNodeLister(ni), Pods: pl, Resources: defaultSet(t)}}
		if got := allocatable(c); got != "8" {
			t.Fatalf("interval %v: first gather: allocatable %s, want 8", tc.interval, got)
		}
		if err := ni.Add(gpuNode("h2", h100, "8")); err != nil {
			t.Fatal(err)
		}
		if got := allocatable(c); got != tc.want {
			t.Errorf("interval %v: second gather: allocatable %s, want %s", tc.interval, got, tc.want)
		}
	}
}

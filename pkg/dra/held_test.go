package dra

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
)

// crossNodeCounters is a pool whose devices sit on two nodes
// (perDeviceNodeSelection) and consume one counter set between them: a
// device taken on node x leaves node y's device nothing.
func crossNodeCounters() []*resourceapi.ResourceSlice {
	one := resourceapi.Counter{Value: resource.MustParse("1")}
	pool := resourceapi.ResourcePool{Name: "xy", Generation: 1, ResourceSliceCount: 2}
	counters := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "xy-counters"},
		Spec: resourceapi.ResourceSliceSpec{Driver: nvdra.Driver, Pool: pool, AllNodes: ptr.To(true),
			SharedCounters: []resourceapi.CounterSet{{Name: "link", Counters: map[string]resourceapi.Counter{"c": one}}}}}
	devs := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "xy-devices"},
		Spec: resourceapi.ResourceSliceSpec{Driver: nvdra.Driver, Pool: pool, PerDeviceNodeSelection: ptr.To(true)}}
	for _, node := range []string{"x", "y"} {
		d := nvdra.GPU(node+"-0", "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")
		d.NodeName = ptr.To(node)
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "link", Counters: map[string]resourceapi.Counter{"c": one}}}
		devs.Spec.Devices = append(devs.Spec.Devices, d)
	}
	return []*resourceapi.ResourceSlice{counters, devs}
}

// heldFleet is the fleet of TestHeldMatchesFresh: shared GPUs, plain GPUs,
// partitionable GPUs with MIG devices, and the cross-node counters. devs
// names every device as "pool/device" with whether it is shared.
func heldFleet() (sl []*resourceapi.ResourceSlice, devs []string, shared map[string]bool) {
	shared = map[string]bool{}
	for _, node := range []string{"a", "b", "c"} {
		gpus := append(nvdra.SharedGPUs(0, 3, "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi"),
			nvdra.GPUs(3, 2, "NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", "40Gi")...)
		sl = append(sl, nvdra.NodeSlice(node, gpus...))
		for i, d := range gpus {
			devs = append(devs, node+"/"+d.Name)
			shared[node+"/"+d.Name] = i < 3
		}
	}
	part := nvdra.Partitionable("p", 2, 2, "NVIDIA A100-SXM4-40GB", "3g.20gb", "40Gi", "20Gi")
	sl = append(sl, part...)
	for _, d := range part[1].Spec.Devices {
		devs = append(devs, "p/"+d.Name)
	}
	sl = append(sl, crossNodeCounters()...)
	devs = append(devs, "xy/x-0", "xy/y-0", "a/no-such-device")
	return sl, devs, shared
}

// entryText is everything an entry says but its kind (an index into the
// tracker's kind table, which differs between trackers).
func entryText(es []Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s/%s %s free %d of %d held %d size %.3f partial %v",
			e.Class, e.Resource, e.Device.Product, e.Free, e.Total, e.Held, e.Size, e.Partial))
	}
	return strings.Join(out, "; ")
}

// TestHeldMatchesFresh: the usage and the entries kept from cycle to cycle
// (held.go) against a fresh computation, through a random run of what a
// cluster does between cycles: claims allocated (whole devices, shares of
// shared devices, devices no slice publishes), deallocated and deleted,
// allocations in flight and out of it, DeviceClasses replaced, slices
// republished. Every view of the run, the old ones too (a scrape beside a
// cycle), must answer as a new tracker would for the state it was made
// from.
func TestHeldMatchesFresh(t *testing.T) {
	sl, devs, shared := heldFleet()
	classes := []*resourceapi.DeviceClass{
		nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, "nvidia.com/gpu"),
		nvdra.Class("mig.nvidia.com", nvdra.MIGs, ""),
	}
	m := &Objects{Slices: sl, Classes: classes}
	rng := rand.New(rand.NewSource(1))
	tr := NewTracker()
	ctx := context.Background()
	type seen struct {
		v       *View
		entries map[string]string
		cap     map[string]float64
		usage   *devices.DRAUsage
		free    string
	}
	var views []seen
	next := 0
	usedShares := map[string]bool{}
	allocate := func() *resourceapi.ResourceClaim {
		next++
		name := fmt.Sprintf("c%d", next)
		dev := devs[rng.Intn(len(devs))]
		if shared[dev] {
			c := nvdra.AllocatedShare("ns", name, dev, int64(100*(1+rng.Intn(5))))
			share := fmt.Sprintf("share-%d", next)
			if dup := fmt.Sprintf("share-dup-%d", rng.Intn(3)); rng.Intn(5) == 0 && !usedShares[dev+"/"+dup] {
				// The same share ID on several devices: never from the
				// allocator, but the state keys shares by device too. Never
				// twice on one device: a share ID stands for one allocation
				// (held.go).
				share = dup
			}
			usedShares[dev+"/"+share] = true
			c.Status.Allocation.Devices.Results[0].ShareID = ptr.To(types.UID(share))
			return c
		}
		return nvdra.Allocated("ns", name, dev)
	}
	var changes [9]int
	for step := range 400 {
		op := rng.Intn(9)
		switch {
		case op <= 2: // a claim allocated (informer add)
			m.Claims = append(m.Claims, allocate())
		case op == 3 && len(m.Claims) > 0: // a claim deleted
			i := rng.Intn(len(m.Claims))
			m.Claims = append(m.Claims[:i:i], m.Claims[i+1:]...)
		case op == 4 && len(m.Claims) > 0: // a claim deallocated (update)
			i := rng.Intn(len(m.Claims))
			c := m.Claims[i].DeepCopy()
			c.Status.Allocation = nil
			m.Claims[i] = c
		case op == 5: // an allocation in flight (Reserve)
			c := allocate()
			if err := m.ResourceClaims().SignalClaimPendingAllocation(c.UID, c); err != nil {
				t.Fatal(err)
			}
		case op == 6: // out of flight: dropped (Unreserve) or written (PreBind)
			for uid, c := range m.pending {
				m.ResourceClaims().MaybeRemoveClaimPendingAllocation(uid, true)
				if rng.Intn(2) == 0 {
					m.Claims = append(m.Claims, c)
				}
				break
			}
		case op == 7: // a DeviceClass replaced (informer update)
			i := rng.Intn(len(classes))
			c := classes[i].DeepCopy()
			if i == 0 {
				expr := nvdra.WholeGPUs
				if rng.Intn(2) == 0 {
					expr = nvdra.ExclusiveGPUs
				}
				c.Spec.Selectors[0].CEL.Expression = expr
			}
			classes[i] = c
			m.Classes = append([]*resourceapi.DeviceClass(nil), classes...)
		case op == 8 && rng.Intn(4) == 0: // a slice republished
			i := rng.Intn(len(m.Slices))
			s := m.Slices[i].DeepCopy()
			m.Slices = append(append([]*resourceapi.ResourceSlice(nil), m.Slices[:i]...), m.Slices[i+1:]...)
			m.Slices = append(m.Slices, s)
		}
		changes[op]++
		v, err := tr.View(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		state, err := m.ResourceClaims().GatherAllocatedState()
		if err != nil {
			t.Fatal(err)
		}
		fresh := newHeld(v.inv, tr.ids, state)
		if !fresh.usage.Equal(v.usage) {
			t.Fatalf("step %d (op %d): the usage kept differs from one computed afresh", step, op)
		}
		freshView, err := NewTracker().View(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		s := seen{v: v, entries: map[string]string{}, cap: map[string]float64{}, usage: fresh.usage}
		freeByKind := map[devices.DeviceKind]int64{}
		for name := range freshView.Nodes() {
			s.entries[name] = entryText(freshView.Entries(name))
			s.cap[name] = freshView.Capacity(name)
			for _, e := range freshView.Entries(name) {
				freeByKind[devices.DeviceKind{Resource: e.Resource, Device: e.Device}] += e.Free
			}
		}
		s.free = kindText(freeByKind)
		views = append(views, s)
		// Ask this view and a few older ones about a few nodes each, in
		// random order, as cycles and scrapes do.
		for _, old := range []int{len(views) - 1, rng.Intn(len(views)), rng.Intn(len(views))} {
			s := views[old]
			if rng.Intn(2) == 0 {
				got := map[devices.DeviceKind]int64{}
				free := s.v.FreeByKind(nil)
				kinds := s.v.Kinds() // after: counting may intern kinds
				for k, f := range free {
					got[kinds[k]] += f
				}
				if g := kindText(got); g != s.free {
					t.Fatalf("step %d (op %d), view of step %d: free by kind\n got %s\nwant %s", step, op, old, g, s.free)
				}
			}
			for name := range s.entries {
				if rng.Intn(2) == 0 {
					continue
				}
				if got := entryText(s.v.Entries(name)); got != s.entries[name] {
					t.Fatalf("step %d (op %d), view of step %d, node %s: entries\n got %s\nwant %s", step, op, old, name, got, s.entries[name])
				}
				if got := s.v.Capacity(name); got != s.cap[name] {
					t.Fatalf("step %d (op %d), view of step %d, node %s: capacity %v, want %v", step, op, old, name, got, s.cap[name])
				}
				for _, c := range s.v.classes {
					k := int64(rng.Intn(4))
					reqs := []Request{{Resource: c.Resource, Class: c, Count: k}}
					if rng.Intn(3) == 0 {
						reqs[0].Capacity = devices.NewCapacityRequest(&resourceapi.CapacityRequirements{
							Requests: map[resourceapi.QualifiedName]resource.Quantity{nvdra.Shares: resource.MustParse("300")}})
					}
					if rng.Intn(3) == 0 {
						reqs = append(reqs, Request{Resource: c.Resource, Class: c, Count: 1})
					}
					got, gotOK := s.v.Picks(name, reqs, func(Request) bool { return true }, nil)
					want, wantOK := refPicks(s.v.usage, s.v.Node(name), reqs)
					if g, w := picksText(got, gotOK), picksText(want, wantOK); g != w {
						t.Fatalf("step %d (op %d), view of step %d, node %s: picks %v\n got %s\nwant %s", step, op, old, name, reqs, g, w)
					}
					if !s.usage.Equal(s.v.usage) {
						t.Fatalf("step %d (op %d), view of step %d, node %s: picks %v left the view's usage changed", step, op, old, name, reqs)
					}
				}
			}
		}
	}
	t.Logf("operations: %v; %d claims, %d in flight at the end", changes, len(m.Claims), len(m.pending))
}

// refPicks is Picks without memos: first fit for each request in turn, the
// picks of the ones before held.
func refPicks(u *devices.DRAUsage, n *devices.DRANode, reqs []Request) (out []Pick, ok bool) {
	ok = true
	type held struct {
		picks []*devices.DRADevice
		r     devices.CapacityRequest
	}
	var holds []held
	for i, r := range reqs {
		picks, found := u.FirstFit(n, r.Class.Selects, r.Count, r.Capacity, nil)
		if !found {
			ok = false
			continue
		}
		u.Hold(picks, r.Capacity)
		holds = append(holds, held{picks, r.Capacity})
		for _, d := range picks {
			out = append(out, Pick{Device: d, Request: i})
		}
	}
	for i := len(holds) - 1; i >= 0; i-- {
		u.Release(holds[i].picks, holds[i].r)
	}
	return out, ok
}

func picksText(picks []Pick, ok bool) string {
	out := fmt.Sprint(ok)
	for _, p := range picks {
		out += fmt.Sprintf(" %d:%s/%s", p.Request, p.Device.Pool, p.Device.Name)
	}
	return out
}

func kindText(m map[devices.DeviceKind]int64) string {
	var out []string
	for k, f := range m {
		if f != 0 {
			out = append(out, fmt.Sprintf("%s %s: %d", k.Resource, k.Device.Product, f))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// TestHeldConcurrentViews: views of one tracker made and read from two
// goroutines at once (a scheduling cycle and a metrics scrape), each of a
// cluster state of its own, answer as a fresh tracker does for that state.
// Run with -race.
func TestHeldConcurrentViews(t *testing.T) {
	sl, devs, shared := heldFleet()
	classes := []*resourceapi.DeviceClass{
		nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, "nvidia.com/gpu"),
		nvdra.Class("mig.nvidia.com", nvdra.MIGs, ""),
	}
	rng := rand.New(rand.NewSource(2))
	type want struct {
		m       *Objects
		entries map[string]string
		free    string
	}
	var states []want
	var claims []*resourceapi.ResourceClaim
	for i := range 12 {
		for range 3 {
			dev := devs[rng.Intn(len(devs))]
			name := fmt.Sprintf("c%d-%d", i, len(claims))
			if shared[dev] {
				c := nvdra.AllocatedShare("ns", name, dev, 200)
				c.Status.Allocation.Devices.Results[0].ShareID = ptr.To(types.UID("share-" + name))
				claims = append(claims, c)
			} else {
				claims = append(claims, nvdra.Allocated("ns", name, dev))
			}
		}
		if len(claims) > 4 && rng.Intn(2) == 0 {
			claims = claims[2:]
		}
		m := &Objects{Slices: sl, Classes: classes, Claims: slices.Clone(claims)}
		fresh, err := NewTracker().View(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		w := want{m: m, entries: map[string]string{}}
		free := map[devices.DeviceKind]int64{}
		for name := range fresh.Nodes() {
			w.entries[name] = entryText(fresh.Entries(name))
			for _, e := range fresh.Entries(name) {
				free[devices.DeviceKind{Resource: e.Resource, Device: e.Device}] += e.Free
			}
		}
		w.free = kindText(free)
		states = append(states, w)
	}
	tr := NewTracker()
	errs := make(chan error, 2)
	for g := range 2 {
		go func() {
			rng := rand.New(rand.NewSource(int64(g)))
			for range 150 {
				w := states[rng.Intn(len(states))]
				v, err := tr.View(context.Background(), w.m)
				if err != nil {
					errs <- err
					return
				}
				for name, text := range w.entries {
					if got := entryText(v.Entries(name)); got != text {
						errs <- fmt.Errorf("node %s: entries\n got %s\nwant %s", name, got, text)
						return
					}
					for _, c := range v.classes {
						v.Picks(name, []Request{{Resource: c.Resource, Class: c, Count: 1}}, func(Request) bool { return true }, nil)
					}
				}
				got := map[devices.DeviceKind]int64{}
				free := v.FreeByKind(nil)
				kinds := v.Kinds() // after: counting may intern kinds
				for k, f := range free {
					got[kinds[k]] += f
				}
				if g := kindText(got); g != w.free {
					errs <- fmt.Errorf("free by kind\n got %s\nwant %s", g, w.free)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

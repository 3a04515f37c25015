// Package dra is devicefit's view of the DRA devices (resource.k8s.io/v1)
// as one scheduling cycle sees them: the ResourceSlices' devices laid out
// per node in the upstream allocator's first-fit order (pkg/devices), what
// allocated claims hold (in-flight allocations included), which devices
// each DeviceClass selects (its CEL selectors, evaluated once per device
// and class), and per node and class the devices there and how many first
// fit could still give.
//
// DeviceFit and DevicePack share one View per cycle through the cycle
// state (ForCycle), so the walk over the slices happens once per pod. The
// Tracker behind the views keeps from one cycle to the next what claims
// hold and each node's entries (held.go): a cycle recomputes only the
// devices whose allocations changed and the nodes they are on.
package dra

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// celCacheSize bounds the compiled expressions kept: classes and the
// selectors of claims, a few per workload.
const celCacheSize = 1024

// Tracker keeps what changes rarely between cycles: the inventory built
// from the slices (rebuilt only when a slice object changes), the class
// selectors' verdict on each device (kept per device object), the kind
// table, and what claims hold with each node's entries (held.go: updated
// from what changed in the allocated state, per node until it changes).
// One per framework, shared by its devicefit plugins (TrackerFor); safe
// for concurrent use.
type Tracker struct {
	cel *cel.Cache

	mu     sync.Mutex
	slices map[*resourceapi.ResourceSlice]struct{}
	inv    *devices.DRAInventory
	ids    map[structured.DeviceID]*devices.DRADevice
	// verdicts caches, per CEL expression, its result on each device object;
	// dropped with the inventory when the slices change.
	verdicts map[string]map[*resourceapi.Device]celVerdict
	// classes caches each DeviceClass object's verdicts on inv's devices.
	classes map[*resourceapi.DeviceClass]classVerdicts
	kinds   map[devices.DeviceKind]int
	kindTab []devices.DeviceKind
	// held is what claims hold of inv, kept from cycle to cycle (held.go);
	// nil until the first view of an inventory.
	held *held
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{
		cel:      cel.NewCache(celCacheSize, cel.Features{EnableConsumableCapacity: true}),
		verdicts: map[string]map[*resourceapi.Device]celVerdict{},
		classes:  map[*resourceapi.DeviceClass]classVerdicts{},
		kinds:    map[devices.DeviceKind]int{},
	}
}

// View builds the cycle's view from the framework's DRA manager, or returns
// nil when the cluster publishes no ResourceSlice (or m is nil): then no
// node has DRA devices and the plugins pay nothing more.
func (t *Tracker) View(ctx context.Context, m fwk.SharedDRAManager) (*View, error) {
	if m == nil || m.ResourceSlices() == nil {
		return nil, nil
	}
	sl, err := m.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	if len(sl) == 0 {
		return nil, nil
	}
	classList, err := m.DeviceClasses().List()
	if err != nil {
		return nil, fmt.Errorf("listing DeviceClasses: %w", err)
	}
	state, err := gatherAllocatedState(ctx, m.ResourceClaims())
	if err != nil {
		return nil, fmt.Errorf("gathering allocated devices: %w", err)
	}

	if state == nil {
		state = &structured.AllocatedState{}
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.refresh(sl)
	if t.held == nil {
		t.held = newHeld(t.inv, t.ids, state)
	} else {
		t.held.update(t.ids, state)
	}
	v := &View{
		ctx: ctx, tracker: t, inv: t.inv, held: t.held,
		byName: make(map[string]*Class, len(classList)),
		nodes:  make([]*nodeData, len(t.inv.Nodes)),
		claims: m.ResourceClaims(),
	}
	resolver := m.DeviceClassResolver()
	for _, c := range classList {
		cv := t.classMatches(ctx, c)
		class := &Class{Name: c.Name, Resource: ClassResource(resolver, c), matches: cv.matches, uncountable: cv.uncountable, obj: c}
		v.classes = append(v.classes, class)
		v.byName[c.Name] = class
	}
	sortClasses(v.classes)
	objs := make([]*resourceapi.DeviceClass, len(v.classes))
	resources := make([]v1.ResourceName, len(v.classes))
	for i, c := range v.classes {
		objs[i], resources[i] = c.obj, c.Resource
	}
	t.held.setClasses(objs, resources)
	v.gen = t.held.gen
	v.usage = t.held.usage.Clone()
	if resolver != nil {
		v.resolver = resolver
	}
	if c, ok := m.(DeviceChooser); ok {
		v.chooser = c
	}
	return v, nil
}

// milli is q in milli-units. Capacities are whole numbers (shares, bytes):
// AsInt64 reads those without MilliValue's general scaling, which was a
// tenth of a shares replay's view (one call per shared device and cycle).
func milli(q *resource.Quantity) int64 {
	if v, ok := q.AsInt64(); ok && v <= math.MaxInt64/1000 && v >= math.MinInt64/1000 {
		return v * 1000
	}
	return q.MilliValue()
}

// concurrentModification is the text of the scheduler's claim tracker's
// error when a claim changed while it gathered the allocated state
// (errClaimTrackerConcurrentModification, unexported in v1.37.2): a binding
// goroutine's PreBind wrote a claim meanwhile. DynamicResources gathers
// again then, and so does devicefit, rather than fail the attempt.
const concurrentModification = "conflicting concurrent modification"

// gatherAttempts bounds the retries; each conflict means a claim was
// written in between, which a scheduler does a few times per pod at most.
const gatherAttempts = 100

func gatherAllocatedState(ctx context.Context, claims fwk.ResourceClaimTracker) (*structured.AllocatedState, error) {
	for attempt := 1; ; attempt++ {
		state, err := claims.GatherAllocatedState()
		if err == nil || attempt == gatherAttempts || ctx.Err() != nil || !strings.Contains(err.Error(), concurrentModification) {
			return state, err
		}
	}
}

// ImplicitResource is the extended resource name every DeviceClass serves
// (KEP-5004): deviceclass.resource.kubernetes.io/<class>.
func ImplicitResource(class string) v1.ResourceName {
	return v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + class)
}

// refresh rebuilds the inventory when the slice objects differ from those
// it was built from (an informer update replaces the object).
func (t *Tracker) refresh(sl []*resourceapi.ResourceSlice) {
	same := t.inv != nil && len(sl) == len(t.slices)
	for _, s := range sl {
		if !same {
			break
		}
		_, same = t.slices[s]
	}
	if same {
		return
	}
	t.slices = make(map[*resourceapi.ResourceSlice]struct{}, len(sl))
	for _, s := range sl {
		t.slices[s] = struct{}{}
	}
	t.inv = devices.NewDRAInventory(sl)
	t.held = nil
	t.ids = make(map[structured.DeviceID]*devices.DRADevice, len(t.inv.Devices))
	for _, d := range t.inv.Devices {
		t.ids[structured.MakeDeviceID(d.Driver, d.Pool, d.Name)] = d
	}
	// Verdicts are kept per device object: those of slices that did not
	// change stay valid, the rest are never asked again. Drop the maps of
	// objects gone, not the verdicts still good.
	live := make(map[*resourceapi.Device]struct{}, len(t.inv.Devices))
	for _, d := range t.inv.Devices {
		live[d.API] = struct{}{}
	}
	for expr, m := range t.verdicts {
		for dev := range m {
			if _, ok := live[dev]; !ok {
				delete(m, dev)
			}
		}
		if len(m) == 0 {
			delete(t.verdicts, expr)
		}
	}
	clear(t.classes)
}

// celVerdict is a CEL selector's result on one device.
type celVerdict int8

const (
	celNoMatch celVerdict = iota
	celMatch
	// celError: the expression failed to compile or to evaluate. The
	// allocator then fails the node's Filter with an error.
	celError
)

// classVerdicts is a class's verdict on each device of the inventory.
type classVerdicts struct {
	// matches[id]: every CEL selector of the class is true on device id.
	matches []bool
	// uncountable is Class.uncountable.
	uncountable string
}

// classMatches returns, per device id, whether class c selects the device:
// every CEL selector of the class is true (KEP-4381). A selector that fails
// to compile or to evaluate selects nothing, as the allocator then
// allocates nothing from the class.
func (t *Tracker) classMatches(ctx context.Context, c *resourceapi.DeviceClass) classVerdicts {
	if m, ok := t.classes[c]; ok {
		return m
	}
	out := classVerdicts{matches: make([]bool, len(t.inv.Devices))}
	for i, d := range t.inv.Devices {
		v := t.allMatch(ctx, c.Spec.Selectors, d)
		out.matches[i] = v == celMatch
		switch {
		case out.uncountable != "":
		case v == celError:
			out.uncountable = "a selector fails on device " + d.Name + " of pool " + d.Pool
		case v == celMatch && !d.Plain:
			out.uncountable = "it selects device " + d.Name + " of pool " + d.Pool + ", which shares counters, serves several claims or has binding conditions"
		}
	}
	if len(t.classes) > 4*celCacheSize {
		clear(t.classes) // objects of deleted or updated classes
	}
	t.classes[c] = out
	return out
}

// allMatch evaluates selectors on d, caching each expression's verdict per
// device object: celMatch when all are true, else the first other verdict.
func (t *Tracker) allMatch(ctx context.Context, selectors []resourceapi.DeviceSelector, d *devices.DRADevice) celVerdict {
	for _, s := range selectors {
		if s.CEL == nil {
			return celNoMatch
		}
		m := t.verdicts[s.CEL.Expression]
		if m == nil {
			m = map[*resourceapi.Device]celVerdict{}
			t.verdicts[s.CEL.Expression] = m
		}
		v, seen := m[d.API]
		if !seen {
			v = t.eval(ctx, s.CEL.Expression, d)
			m[d.API] = v
		}
		if v != celMatch {
			return v
		}
	}
	return celMatch
}

func (t *Tracker) eval(ctx context.Context, expr string, d *devices.DRADevice) celVerdict {
	r := t.cel.GetOrCompile(expr)
	if r.Error != nil {
		return celError
	}
	ok, _, err := r.DeviceMatches(ctx, cel.Device{
		Driver: d.Driver, Attributes: d.API.Attributes, Capacity: d.API.Capacity,
		AllowMultipleAllocations: d.API.AllowMultipleAllocations,
	})
	switch {
	case err != nil:
		return celError
	case ok:
		return celMatch
	}
	return celNoMatch
}

// kind interns k in the tracker's kind table.
func (t *Tracker) kind(k devices.DeviceKind) int {
	if id, ok := t.kinds[k]; ok {
		return id
	}
	if len(t.kindTab) >= devices.MaxKinds {
		return devices.NoKind
	}
	t.kindTab = append(t.kindTab, k)
	t.kinds[k] = len(t.kindTab) - 1
	return len(t.kindTab) - 1
}

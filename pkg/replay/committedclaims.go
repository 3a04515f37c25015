package replay

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
)

// committedDRA is the framework's SharedDRAManager in DRA mode: upstream's
// (NewDRAManager over the fake API's informers) with its claim tracker
// wrapped by committedClaims. The interface exists for exactly this: a
// simulator (Cluster Autoscaler is upstream's example) supplies the DRA
// state the plugins see.
type committedDRA struct {
	fwk.SharedDRAManager
	claims *committedClaims
}

func (m *committedDRA) ResourceClaims() fwk.ResourceClaimTracker { return m.claims }

// committedClaims stands in for what the replay does not run: PreBind's
// write of each allocation to the API and the informer event that brings
// it back. In kube-scheduler, Reserve puts an allocation in flight
// (SignalClaimPendingAllocation) and PreBind, once the claim's status is
// written, moves it into the claim cache and out of flight. The replay
// stops after Reserve, so without this every allocation of the run would
// stay in flight, and upstream's GatherAllocatedState walks all in-flight
// claims twice per pod (DynamicResources' PreFilter, devicefit's view):
// most of a shares replay's time. commit does PreBind's bookkeeping
// instead: the pod's allocations leave the flight and join a committed
// state that GatherAllocatedState returns as the cache would, and Get
// returns the claim as its status would then read.
type committedClaims struct {
	fwk.ResourceClaimTracker // upstream's: claims from the cache, in-flight allocations

	mu sync.Mutex
	// pending are the claims signalled since the last commit, by UID.
	pending map[types.UID]*resourceapi.ResourceClaim
	// bound are the committed claims by namespace/name.
	bound map[string]*resourceapi.ResourceClaim
	// allocations are the committed allocations; dedicated, shared and
	// consumed sum them up as structured.AllocatedState holds them.
	allocations []*resourceapi.AllocationResult
	dedicated   sets.Set[structured.DeviceID]
	shared      sets.Set[structured.SharedDeviceID]
	consumed    structured.ConsumedCapacityCollection
	// byPod are each pod's committed claims, for release.
	byPod map[types.UID][]committedClaim
}

// committedClaim is one claim commit made for a pod: its allocation, and
// its key in bound ("" for the in-memory claim of an extended resource).
type committedClaim struct {
	key        string
	allocation *resourceapi.AllocationResult
}

func newCommittedDRA(m fwk.SharedDRAManager) *committedDRA {
	return &committedDRA{SharedDRAManager: m, claims: &committedClaims{
		ResourceClaimTracker: m.ResourceClaims(),
		pending:              map[types.UID]*resourceapi.ResourceClaim{},
		bound:                map[string]*resourceapi.ResourceClaim{},
		dedicated:            sets.New[structured.DeviceID](),
		shared:               sets.New[structured.SharedDeviceID](),
		consumed:             structured.NewConsumedCapacityCollection(),
		byPod:                map[types.UID][]committedClaim{},
	}}
}

func (c *committedClaims) SignalClaimPendingAllocation(uid types.UID, claim *resourceapi.ResourceClaim) error {
	if err := c.ResourceClaimTracker.SignalClaimPendingAllocation(uid, claim); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[uid] = claim
	return nil
}

func (c *committedClaims) MaybeRemoveClaimPendingAllocation(uid types.UID, force bool) bool {
	deleted := c.ResourceClaimTracker.MaybeRemoveClaimPendingAllocation(uid, force)
	if deleted {
		c.mu.Lock()
		delete(c.pending, uid)
		c.mu.Unlock()
	}
	return deleted
}

func (c *committedClaims) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	c.mu.Lock()
	claim := c.bound[namespace+"/"+name]
	c.mu.Unlock()
	if claim != nil {
		return claim, nil
	}
	return c.ResourceClaimTracker.Get(namespace, name)
}

// GatherAllocatedState is upstream's (the allocations in flight now) plus
// the committed ones. Upstream hands out fresh copies of its sets; cloning
// the committed shares for every caller was most of a shares replay's time
// again, so when nothing is in flight (always, at PreFilter, in the
// sequential replay) the committed sets themselves are returned. Their
// readers (the allocator DynamicResources builds, devicefit's view) only
// read them, and nothing commits while a cycle runs; verify recomputes the
// state from the allocations at the end, so a reader that wrote would be
// caught.
func (c *committedClaims) GatherAllocatedState() (*structured.AllocatedState, error) {
	s, err := c.ResourceClaimTracker.GatherAllocatedState()
	if err != nil || s == nil {
		return s, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(s.AllocatedDevices) == 0 && len(s.AllocatedSharedDeviceIDs) == 0 && len(s.AggregatedCapacity) == 0 {
		return &structured.AllocatedState{AllocatedDevices: c.dedicated, AllocatedSharedDeviceIDs: c.shared, AggregatedCapacity: c.consumed}, nil
	}
	out := &structured.AllocatedState{
		AllocatedDevices:         c.dedicated.Union(s.AllocatedDevices),
		AllocatedSharedDeviceIDs: c.shared.Union(s.AllocatedSharedDeviceIDs),
		AggregatedCapacity:       c.consumed.Clone(),
	}
	for id, capacity := range s.AggregatedCapacity {
		out.AggregatedCapacity.Insert(structured.DeviceConsumedCapacity{DeviceID: id, ConsumedCapacity: capacity})
	}
	return out, nil
}

// ListAllAllocatedDevices is upstream's plus the committed dedicated
// devices.
func (c *committedClaims) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	s, err := c.ResourceClaimTracker.ListAllAllocatedDevices()
	if err != nil {
		return s, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dedicated.Union(s), nil
}

// commit does PreBind's bookkeeping for the pod just reserved: each
// allocation signalled since the last commit leaves the flight and is
// committed, its claim reserved for pod. rewrite, when not nil, changes
// each claim's allocation before it is committed (an oracle's device in
// place of the allocator's, oracle.go); an error from it is returned
// once every claim has left the flight.
func (c *committedClaims) commit(pod types.UID, podName string, rewrite func(*resourceapi.ResourceClaim) error) error {
	var errs []error
	c.mu.Lock()
	pending := c.pending
	c.pending = map[types.UID]*resourceapi.ResourceClaim{}
	c.mu.Unlock()
	for uid, claim := range pending {
		c.ResourceClaimTracker.MaybeRemoveClaimPendingAllocation(uid, true)
		bound := claim.DeepCopy()
		bound.Status.ReservedFor = append(bound.Status.ReservedFor,
			resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: podName, UID: pod})
		if rewrite != nil {
			if err := rewrite(bound); err != nil {
				errs = append(errs, fmt.Errorf("ResourceClaim %s/%s: %w", bound.Namespace, bound.Name, err))
			}
		}
		// The claim DynamicResources makes for an extended resource
		// (KEP-5004) exists only in memory until PreBind creates it:
		// nobody can look it up by name, only its devices count.
		_, err := c.ResourceClaimTracker.Get(claim.Namespace, claim.Name)
		c.mu.Lock()
		key := ""
		if err == nil {
			key = bound.Namespace + "/" + bound.Name
			c.bound[key] = bound
		}
		c.byPod[pod] = append(c.byPod[pod], committedClaim{key: key, allocation: bound.Status.Allocation})
		c.allocations = append(c.allocations, bound.Status.Allocation)
		add(bound.Status.Allocation, c.dedicated, c.shared, c.consumed)
		c.mu.Unlock()
	}
	return errors.Join(errs...)
}

// release undoes commit for a pod that leaves its node (a defragmenter's
// move): as when the pod is deleted and the resourceclaim controller
// deallocates its claims, they read unallocated again and what they held
// is free. The committed sets are changed in place: their readers take
// them afresh each cycle (GatherAllocatedState), and nothing releases
// while a cycle runs.
func (c *committedClaims) release(pod types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cc := range c.byPod[pod] {
		if cc.key != "" {
			delete(c.bound, cc.key)
		}
		c.allocations = slices.DeleteFunc(c.allocations, func(a *resourceapi.AllocationResult) bool { return a == cc.allocation })
		remove(cc.allocation, c.dedicated, c.shared, c.consumed)
	}
	delete(c.byPod, pod)
}

// verify recomputes the committed state from the allocations: the sets
// handed out by GatherAllocatedState must not have been written to.
// Nothing may still be in flight then: a pod's allocation that commit
// missed would count in the state (upstream's in-flight set) but make
// every later cycle walk it again.
func (c *committedClaims) verify() error {
	inFlight, err := c.ResourceClaimTracker.GatherAllocatedState()
	if err != nil {
		return err
	}
	if n := len(inFlight.AllocatedDevices) + len(inFlight.AllocatedSharedDeviceIDs); n > 0 {
		return fmt.Errorf("%d allocated devices or shares are still in flight after the replay: the replay did not commit them", n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	dedicated, shared, consumed := sets.New[structured.DeviceID](), sets.New[structured.SharedDeviceID](), structured.NewConsumedCapacityCollection()
	for _, a := range c.allocations {
		add(a, dedicated, shared, consumed)
	}
	if !dedicated.Equal(c.dedicated) || !shared.Equal(c.shared) || len(consumed) != len(c.consumed) {
		return fmt.Errorf("the committed DRA state (%d devices, %d shares, %d with capacity in use) is not what its %d allocations hold (%d, %d, %d): a reader wrote to it",
			len(c.dedicated), len(c.shared), len(c.consumed), len(c.allocations), len(dedicated), len(shared), len(consumed))
	}
	for id, want := range consumed {
		if len(c.consumed[id]) != len(want) {
			return fmt.Errorf("the committed DRA state says %s has %v in use, its allocations %v: a reader wrote to it", id, c.consumed[id], want)
		}
		for name, q := range want {
			if got := c.consumed[id][name]; got == nil || got.Cmp(*q) != 0 {
				return fmt.Errorf("the committed DRA state says %s has %v of %s in use, its allocations %v: a reader wrote to it", id, got, name, q)
			}
		}
	}
	return nil
}

// add records an allocation's devices as upstream's allocated-devices
// cache does for a claim in the informer: admin access holds nothing; a
// share of a device with multiple allocations (KEP-5075) is a shared
// device ID with what it consumes; anything else holds its device whole.
func add(a *resourceapi.AllocationResult, dedicated sets.Set[structured.DeviceID], shared sets.Set[structured.SharedDeviceID], consumed structured.ConsumedCapacityCollection) {
	walk(a, func(id structured.DeviceID) { dedicated.Insert(id) }, func(id structured.SharedDeviceID) { shared.Insert(id) }, consumed.Insert)
}

// remove undoes add for one allocation.
func remove(a *resourceapi.AllocationResult, dedicated sets.Set[structured.DeviceID], shared sets.Set[structured.SharedDeviceID], consumed structured.ConsumedCapacityCollection) {
	walk(a, func(id structured.DeviceID) { dedicated.Delete(id) }, func(id structured.SharedDeviceID) { shared.Delete(id) }, consumed.Remove)
}

// walk calls whole for each device an allocation holds whole, and share
// and use for each share of a device and what it consumes.
func walk(a *resourceapi.AllocationResult, whole func(structured.DeviceID), share func(structured.SharedDeviceID), use func(structured.DeviceConsumedCapacity)) {
	if a == nil {
		return
	}
	for _, r := range a.Devices.Results {
		if ptr.Deref(r.AdminAccess, false) {
			continue
		}
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if r.ShareID == nil {
			whole(id)
			continue
		}
		share(structured.MakeSharedDeviceID(id, r.ShareID))
		if r.ConsumedCapacity != nil {
			use(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
		}
	}
}

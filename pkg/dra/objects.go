package dra

import (
	"fmt"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
)

// Objects is a fwk.SharedDRAManager over fixed DRA objects: what the
// scheduler's informers would hold, for callers that have the objects
// rather than informers (the replay, the local run's report, kubectl
// devicefit, unit tests). Pending allocations (SignalClaimPendingAllocation)
// count as allocated until removed, as in the scheduler's tracker.
type Objects struct {
	Slices  []*resourceapi.ResourceSlice
	Classes []*resourceapi.DeviceClass
	Claims  []*resourceapi.ResourceClaim

	mu      sync.Mutex
	pending map[types.UID]*resourceapi.ResourceClaim
	// resolved is the resolver of the classes in resolvedFor (NewResolver),
	// rebuilt when Classes differs.
	resolved    fwk.DeviceClassResolver
	resolvedFor []*resourceapi.DeviceClass
}

// resolver resolves extended resource names as a kube-scheduler that has
// just listed Classes does (NewResolver).
func (m *Objects) resolver() fwk.DeviceClassResolver {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.resolved == nil || !slices.Equal(m.resolvedFor, m.Classes) {
		m.resolvedFor = slices.Clone(m.Classes)
		m.resolved = NewResolver(m.Classes)
	}
	return m.resolved
}

var _ fwk.SharedDRAManager = &Objects{}

func (m *Objects) ResourceClaims() fwk.ResourceClaimTracker     { return claimTracker{m} }
func (m *Objects) ResourceSlices() fwk.ResourceSliceLister      { return sliceLister{m} }
func (m *Objects) DeviceClasses() fwk.DeviceClassLister         { return classLister{m} }
func (m *Objects) DeviceClassResolver() fwk.DeviceClassResolver { return m.resolver() }

type sliceLister struct{ m *Objects }

func (s sliceLister) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	return s.m.Slices, nil
}

type classLister struct{ m *Objects }

func (c classLister) List() ([]*resourceapi.DeviceClass, error) { return c.m.Classes, nil }

func (c classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, dc := range c.m.Classes {
		if dc.Name == name {
			return dc, nil
		}
	}
	return nil, fmt.Errorf("DeviceClass %s not found", name)
}

type claimTracker struct{ m *Objects }

func (c claimTracker) List() ([]*resourceapi.ResourceClaim, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	out := make([]*resourceapi.ResourceClaim, 0, len(c.m.Claims)+len(c.m.pending))
	listed := sets.New[types.UID]()
	for _, claim := range c.m.Claims {
		listed.Insert(claim.UID)
		if p := c.m.pending[claim.UID]; p != nil {
			claim = p
		}
		out = append(out, claim)
	}
	// A claim the scheduler made itself (extended resources) is pending
	// before it exists in the API.
	for uid, p := range c.m.pending {
		if !listed.Has(uid) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (c claimTracker) Get(ns, name string) (*resourceapi.ResourceClaim, error) {
	list, _ := c.List()
	for _, claim := range list {
		if claim.Namespace == ns && claim.Name == name {
			return claim, nil
		}
	}
	return nil, fmt.Errorf("ResourceClaim %s/%s not found", ns, name)
}

func (c claimTracker) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	s, err := c.GatherAllocatedState()
	if err != nil {
		return nil, err
	}
	return s.AllocatedDevices, nil
}

func (c claimTracker) GatherAllocatedState() (*structured.AllocatedState, error) {
	s := &structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	list, _ := c.List()
	for _, claim := range list {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID == nil {
				s.AllocatedDevices.Insert(id)
				continue
			}
			// An allocation of a shared device (KEP-5075): one share of it,
			// and what it consumes added to the device's sum, as the
			// scheduler's claim tracker gathers them.
			s.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			if len(r.ConsumedCapacity) > 0 {
				s.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
			}
		}
	}
	return s, nil
}

func (c claimTracker) SignalClaimPendingAllocation(uid types.UID, claim *resourceapi.ResourceClaim) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.m.pending == nil {
		c.m.pending = map[types.UID]*resourceapi.ResourceClaim{}
	}
	c.m.pending[uid] = claim
	return nil
}

func (c claimTracker) GetPendingAllocation(uid types.UID) *resourceapi.AllocationResult {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if p := c.m.pending[uid]; p != nil {
		return p.Status.Allocation
	}
	return nil
}

func (c claimTracker) MaybeRemoveClaimPendingAllocation(uid types.UID, _ bool) bool {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	_, ok := c.m.pending[uid]
	delete(c.m.pending, uid)
	return ok
}

func (claimTracker) AssumeClaimAfterAPICall(*resourceapi.ResourceClaim) error { return nil }
func (claimTracker) AssumedClaimRestore(string, string)                       {}

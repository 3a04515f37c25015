package devices

import (
	"iter"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
)

// MaxKinds bounds the kinds a NodeCache interns. A fleet has a handful (one
// per product and MIG profile); node labels that differ on every node (a
// per-node count or memory) would otherwise grow the table with the fleet.
// Past it, devices get NoKind and callers match them one node at a time.
const MaxKinds = 1024

// NoKind marks a device that was not interned (MaxKinds reached).
const NoKind = -1

// DeviceKind is a device resource and what a node's labels say about its
// devices. Nodes of the same pool share one kind, so what a pod thinks of a
// kind (selector verdict, workload acceptance) is computed once per kind
// instead of once per node.
type DeviceKind struct {
	Resource v1.ResourceName
	Device   Device
}

// NodeDevice is one device resource of a node, as its object says.
type NodeDevice struct {
	Resource v1.ResourceName
	Device   Device
	// Kind indexes the kinds returned by Refresh; NoKind if not interned.
	Kind int
	// Allocatable and Capacity are the node status counts (Capacity -1 when
	// the status has none).
	Allocatable, Capacity int64
}

// AboveCapacity reports a broken node status: more allocatable than
// capacity, which a kubelet never derives (allocatable = capacity minus
// reservations).
func (d *NodeDevice) AboveCapacity() bool {
	return d.Capacity >= 0 && d.Allocatable > d.Capacity
}

// NodeDevices is what a node object says about its device resources. It is
// never modified once built (a changed node gets a new one).
type NodeDevices struct {
	node *v1.Node
	// Devices holds every device resource in the node's allocatable or
	// capacity (zero counts included: a stale MIG profile is still judged).
	Devices []NodeDevice
	// id: see ID.
	id uint64
}

// ID identifies the entry among all the entries any NodeCache built in
// this process (0 for ReadNodeDevices'): never reused, so a caller can
// remember which node object an entry stood for without holding on to the
// entry, and with it to the node object.
func (n *NodeDevices) ID() uint64 { return n.id }

// lastID numbers the entries caches build (NodeDevices.ID).
var lastID atomic.Uint64

// Find returns the node's device resource name, or nil.
func (n *NodeDevices) Find(name v1.ResourceName) *NodeDevice {
	if i := n.Index(name); i >= 0 {
		return &n.Devices[i]
	}
	return nil
}

// Index returns the index in Devices of the node's device resource name,
// or -1.
func (n *NodeDevices) Index(name v1.ResourceName) int {
	for i := range n.Devices {
		if n.Devices[i].Resource == name {
			return i
		}
	}
	return -1
}

// HasDevices reports whether any device resource has allocatable devices.
func (n *NodeDevices) HasDevices() bool {
	for i := range n.Devices {
		if n.Devices[i].Allocatable > 0 {
			return true
		}
	}
	return false
}

// NodeCache remembers NodeDevices per node and reads a node's labels again
// only when its object changes. The scheduler's snapshot hands out the same
// *v1.Node until the node is updated (an informer update replaces the
// object), so pointer identity is the change test: no generation to track,
// no label to compare.
//
// Refresh is meant for one goroutine per scheduling cycle (PreFilter,
// PreScore); Lookup is safe from the parallel Filter and Score goroutines.
type NodeCache struct {
	resources ResourceSet

	mu    sync.RWMutex
	nodes map[string]*NodeDevices
	// byObject holds the same entries by node object: a look-up hashes a
	// pointer instead of the node's name, whose bytes live in the node
	// object, one more cache miss per node in walks that meet the nodes in
	// another order each cycle (PreScore's feasible nodes, Score). Exactly
	// the objects of the entries in nodes are keys: an entry replaced or
	// dropped there is dropped here.
	byObject map[*v1.Node]*NodeDevices
	kinds    []DeviceKind
	kindIDs  map[DeviceKind]int
}

// NewNodeCache returns an empty cache of the device resources in set.
func NewNodeCache(set ResourceSet) *NodeCache {
	c := &NodeCache{resources: set}
	c.reset()
	return c
}

func (c *NodeCache) reset() {
	c.nodes = map[string]*NodeDevices{}
	c.byObject = map[*v1.Node]*NodeDevices{}
	c.kinds = nil
	c.kindIDs = map[DeviceKind]int{}
}

// Refresh brings the entries of nodes up to date and returns the kind table
// (index = NodeDevice.Kind) and the entries in the order of nodes, written
// over out (nil for a nil node), so that a caller walking the same nodes
// needs no Lookup. Pass the previous call's entries as out. The kind table is never modified afterwards: later kinds
// are appended to a new table or beyond its length. When all is true, nodes
// is the whole cluster and entries of nodes not in it are dropped;
// otherwise (a subset, as PreScore sees) nothing is dropped, and the caller
// should pass all from time to time.
func (c *NodeCache) Refresh(nodes iter.Seq[*v1.Node], all bool, out []*NodeDevices) ([]DeviceKind, []*NodeDevices) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// out usually holds the previous call's entries for the same nodes in
	// the same order (the snapshot's node list changes only when nodes come
	// and go): an entry built from this very node object is reused without
	// the map look-up, which, hashing the name of every node of the cluster
	// per pod, is what Refresh costs.
	prev, reuse := out, true
	if len(c.kinds) >= MaxKinds {
		// Labels churned through too many kinds: start over, so ids of kinds
		// no node has any more stop costing memory and per-pod work.
		c.reset()
		reuse = false
	}
	out = out[:0]
	var present int
	for node := range nodes {
		j := len(out)
		if node == nil {
			out = append(out, nil)
			continue
		}
		present++
		if reuse && j < len(prev) && prev[j] != nil && prev[j].node == node {
			out = append(out, prev[j])
			continue
		}
		out = append(out, c.entryLocked(node))
	}
	if all && len(c.nodes) > present {
		c.forgetAbsent(nodes)
	}
	return c.kinds, out
}

// Entry returns node's entry, building it when the node object is new (nil
// for a nil node); false when the cache is due to start its kind table over
// (MaxKinds), which only Refresh does: the caller then refreshes every node.
// A caller that refreshes a few nodes of the cluster (snapshot.Table, for
// the nodes that moved) passes the whole cluster to Refresh from time to
// time, so that entries of deleted nodes are dropped.
func (c *NodeCache) Entry(node *v1.Node) (*NodeDevices, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.kinds) >= MaxKinds {
		return nil, false
	}
	if node == nil {
		return nil, true
	}
	return c.entryLocked(node), true
}

// entryLocked is node's entry, built when the node object is new; under
// c.mu.
func (c *NodeCache) entryLocked(node *v1.Node) *NodeDevices {
	e, ok := c.byObject[node]
	if !ok {
		e = c.build(node)
		if old := c.nodes[node.Name]; old != nil {
			delete(c.byObject, old.node)
		}
		c.nodes[node.Name] = e
		c.byObject[node] = e
	}
	return e
}

// forgetAbsent drops entries of deleted nodes: rare (the map only outgrows
// the cluster when nodes leave), so the second pass over nodes is cheap.
func (c *NodeCache) forgetAbsent(nodes iter.Seq[*v1.Node]) {
	keep := make(map[string]struct{}, len(c.nodes))
	for node := range nodes {
		if node != nil {
			keep[node.Name] = struct{}{}
		}
	}
	for name, e := range c.nodes {
		if _, ok := keep[name]; !ok {
			delete(c.nodes, name)
			delete(c.byObject, e.node)
		}
	}
}

// Lookup returns the entry of node if it was built from this very object
// (Refresh saw it), else nil: callers then read the node themselves.
func (c *NodeCache) Lookup(node *v1.Node) *NodeDevices {
	if c == nil || node == nil {
		return nil
	}
	c.mu.RLock()
	e := c.byObject[node]
	c.mu.RUnlock()
	return e
}

// Len returns the number of nodes cached.
func (c *NodeCache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.nodes)
}

// ReadNodeDevices reads a node without a cache: every device is NoKind.
// For the rare node a cache has not seen; it allocates.
func ReadNodeDevices(node *v1.Node, set ResourceSet) *NodeDevices {
	return readNode(node, set, func(DeviceKind) int { return NoKind })
}

func (c *NodeCache) build(node *v1.Node) *NodeDevices {
	e := readNode(node, c.resources, c.intern)
	e.id = lastID.Add(1)
	// Every node object holds its own copy of the resource names' bytes; a
	// walk over all nodes comparing a pod's resource with each node's
	// (Index) would read each copy, one cache miss per node. The kind
	// table holds one copy per kind: the same value, bytes shared.
	for i := range e.Devices {
		if k := e.Devices[i].Kind; k >= 0 {
			e.Devices[i].Resource = c.kinds[k].Resource
		}
	}
	return e
}

func readNode(node *v1.Node, set ResourceSet, intern func(DeviceKind) int) *NodeDevices {
	e := &NodeDevices{node: node}
	if node == nil {
		return e
	}
	add := func(name v1.ResourceName) {
		if !set.Contains(name) || e.Find(name) != nil {
			return
		}
		d := NodeDevice{Resource: name, Capacity: -1}
		if q, ok := node.Status.Allocatable[name]; ok {
			d.Allocatable = q.Value()
		}
		if q, ok := node.Status.Capacity[name]; ok {
			d.Capacity = q.Value()
		}
		keys := NewDeviceLabels(name)
		d.Device = keys.Describe(node.Labels)
		d.Kind = intern(DeviceKind{Resource: name, Device: d.Device})
		e.Devices = append(e.Devices, d)
	}
	for name := range node.Status.Allocatable {
		add(name)
	}
	for name := range node.Status.Capacity {
		add(name)
	}
	return e
}

// KindID returns the id of kind k in the cache's kind table, if it has one.
// Readers that know kinds no node object describes (DRA devices) give them
// ids of their own past the table (devicepack's cycleKinds), so the cache
// is only ever written by its owner's Refresh.
func (c *NodeCache) KindID(k DeviceKind) (int, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.kindIDs[k]
	return id, ok
}

// Kinds returns the kind table, as Refresh last returned it. The table is
// never modified, only extended.
func (c *NodeCache) Kinds() []DeviceKind {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.kinds
}

func (c *NodeCache) intern(k DeviceKind) int {
	if id, ok := c.kindIDs[k]; ok {
		return id
	}
	if len(c.kinds) >= MaxKinds {
		return NoKind
	}
	c.kinds = append(c.kinds, k)
	c.kindIDs[k] = len(c.kinds) - 1
	return len(c.kinds) - 1
}

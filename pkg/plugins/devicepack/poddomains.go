package devicepack

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

// podDomains keeps a domainsState from one cycle to the next: building it
// walks every node and does a handful of map look-ups per node, which for
// every pod (Score's single pods) or every group (ScorePlacement) cost more
// than the rest of the plugin. Between two calls only the nodes that
// changed are counted again.
//
// Kept: the node object at each position of the snapshot's node list (a
// new object may have another topology label, allocatable or product: then
// everything is built again) and its node info's state (snapshot.NodeState:
// generation, pod count, last pod; the generation alone misses the
// snapshot's AssumePod). Built again as well when the topology key or the
// shapes' resources change; other changes of the shapes are taken as they
// come.
type podDomains struct {
	withValues bool
	key        string
	nodes      []*v1.Node
	states     []snapshot.NodeState
	ds         *domainsState
}

// refresh returns the domains of nodes for key and shapes, updated in place
// from the last call. One caller at a time, and no reader of the last
// result left: the previous cycle's Score or ScorePlacement calls are over
// when the next cycle refreshes.
func (c *podDomains) refresh(pl *DevicePack, key string, shapes []devices.GroupShape, nodes []fwk.NodeInfo) *domainsState {
	if c.ds == nil || c.key != key || !sameResources(c.ds.resources, shapes) || len(c.nodes) != len(nodes) || !c.sameNodes(nodes) {
		c.ds = pl.buildDomains(key, shapes, nodes, c.withValues)
		c.key = key
		c.nodes = c.nodes[:0]
		c.states = c.states[:0]
		for _, ni := range nodes {
			c.nodes = append(c.nodes, ni.Node())
			c.states = append(c.states, snapshot.StateOf(ni))
		}
		return c.ds
	}
	ds := c.ds
	ds.shapes = shapes
	for j, ni := range nodes {
		k := snapshot.StateOf(ni)
		if k == c.states[j] {
			continue
		}
		c.states[j] = k
		at, ok := ds.node[c.nodes[j].Name]
		if !ok {
			continue
		}
		alloc, req := ni.GetAllocatable().GetScalarResources(), ni.GetRequested().GetScalarResources()
		for r, name := range ds.resources {
			ds.domains[r][at.domain].Free[at.pos] = max(alloc[name]-req[name], 0)
		}
	}
	return ds
}

// sameResources reports whether resources are exactly the shapes'
// resources, in buildDomains' order.
func sameResources(resources []v1.ResourceName, shapes []devices.GroupShape) bool {
	var i int
	for _, s := range shapes {
		if slices.Contains(resources[:i], s.Resource) {
			continue
		}
		if i >= len(resources) || resources[i] != s.Resource {
			return false
		}
		i++
	}
	return i == len(resources)
}

// sameNodes reports whether every position holds the node object it held.
func (c *podDomains) sameNodes(nodes []fwk.NodeInfo) bool {
	for j, ni := range nodes {
		if ni.Node() != c.nodes[j] {
			return false
		}
	}
	return true
}

package devicepack

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
)

// podDomains keeps the domains Score charges single pods against
// (domainsState without product values) from one PreScore to the next:
// building them walks every node and allocates per node, which at one pod
// after another cost more than the rest of PreScore. Between two pods only
// the nodes that changed are counted again.
//
// Kept: the node object at each position of the snapshot's node list (a
// new object may have another topology label: then everything is built
// again) and its node info's state (shared.FreeKey: generation, pod count,
// last pod; the generation alone misses the snapshot's AssumePod). Built
// again as well when the group shapes changed (their version).
type podDomains struct {
	version uint64
	key     string
	nodes   []*v1.Node
	states  []devices.FreeKey
	ds      *domainsState
}

// refresh returns the domains of nodes for key and shapes (of the given
// version), updated in place from the last call. PreScore only: the
// previous pod's Score calls are over when the next PreScore runs.
func (c *podDomains) refresh(pl *DevicePack, key string, shapes []devices.GroupShape, version uint64, nodes []fwk.NodeInfo) *domainsState {
	if c.ds == nil || c.version != version || c.key != key || len(c.nodes) != len(nodes) || !c.sameNodes(nodes) {
		c.ds = pl.buildDomains(key, shapes, nodes, false)
		c.version, c.key = version, key
		c.nodes = c.nodes[:0]
		c.states = c.states[:0]
		for _, ni := range nodes {
			c.nodes = append(c.nodes, ni.Node())
			c.states = append(c.states, shared.FreeKey(ni))
		}
		return c.ds
	}
	ds := c.ds
	for j, ni := range nodes {
		k := shared.FreeKey(ni)
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

// sameNodes reports whether every position holds the node object it held.
func (c *podDomains) sameNodes(nodes []fwk.NodeInfo) bool {
	for j, ni := range nodes {
		if ni.Node() != c.nodes[j] {
			return false
		}
	}
	return true
}

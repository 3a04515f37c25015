package devicefit

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/metrics"
)

// twinOf rejects the placement (named placement, of nodes) when a
// placement tried before it in the pod-group cycle was its twin; nil
// otherwise.
//
// Why: TopologyPlacementGenerator makes one placement per value of the
// group's topology key, and an NVLink fleet has many alike: racks of one
// product, empty or holding the same pods. Each is tried with the whole
// pod cycle of every member (Filter, Score, an assume), twins pass or fail
// alike and tie in every placement score, and the scheduler then picks
// among the tied ones at random (findBestPlacement's Randomizer). Trying
// the first of them is enough; the group lands on a placement like the one
// it would have drawn. In CliqueFleet most of a group's 100 cliques are
// empty twins: 4 pod cycles each.
//
// Twins have the same nodes up to their names and the topology value: a
// node's class (twinsState.class) holds what the profile's plugins read of
// the node and its pods for a member that singles out no node
// (tellsNodesApart): its labels but the hostname and the topology key,
// taints, unschedulable, allocatable, images, declared features and
// devicefit.io annotations (nodeKey, built once per node object:
// nodeClasses); its requested resources; and of each pod its namespace,
// labels, priority, affinity, host ports and volumes (appendPods). A node
// with nominated pods, which Filter adds to it, has no twin.
//
// The placements are kept per pod group (groupKey, namespace/name): the
// members of another group in the same cycle (a composite group's
// children) are other pods.
func (pl *DeviceFit) twinOf(group fwk.PodGroupCycleState, groupKey string, facts *groupFacts, placement string, nodes []fwk.NodeInfo) *fwk.Status {
	lister := pl.handle.SnapshotSharedLister()
	if placement == "" || len(nodes) == 0 || lister == nil {
		return nil
	}
	all, err := lister.NodeInfos().List()
	if err != nil || len(all) == 0 {
		return nil
	}
	key := fwk.StateKey("PreFilter" + Name + "/twins/" + groupKey)
	ts, _ := readTwins(group, key)
	if ts == nil || ts.list != &all[0] {
		// A new cycle, or the snapshot cloned for the group's preemption
		// (StartMutations): its nodes are other node infos.
		ts = &twinsState{list: &all[0], first: map[string]string{}, classes: map[string]uint64{}}
		group.Write(key, ts)
	}
	sig, ok := ts.signature(pl, nodes, facts.topologyKey, 2*len(all)+64)
	if !ok {
		return nil
	}
	if first, seen := ts.first[sig]; seen {
		pl.rejections[metrics.ReasonPlacementTwin].Inc()
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"placement %s is the twin of placement %s, tried first in this cycle: its nodes and their pods are alike", placement, first))
	}
	ts.first[sig] = placement
	return nil
}

func readTwins(group fwk.PodGroupCycleState, key fwk.StateKey) (*twinsState, error) {
	d, err := group.Read(key)
	if err != nil {
		return nil, err
	}
	ts, _ := d.(*twinsState)
	return ts, nil
}

// twinsState is one pod-group cycle's placements by signature (twinOf).
type twinsState struct {
	// list is the first node info of the snapshot's list the placements
	// were tried in.
	list *fwk.NodeInfo
	// first names the first placement of each signature; classes numbers
	// the classes of the cycle's nodes (node object and pods).
	first   map[string]string
	classes map[string]uint64
	buf     []byte
}

func (ts *twinsState) Clone() fwk.StateData { return ts }

// signature is the sorted classes of the placement's nodes; false when a
// node has nominated pods or no node object. bound bounds the node
// objects pl.nodeClasses keeps.
func (ts *twinsState) signature(pl *DeviceFit, nodes []fwk.NodeInfo, topologyKey string, bound int) (string, bool) {
	ids := make([]uint64, 0, len(nodes))
	for _, ni := range nodes {
		n := ni.Node()
		if n == nil || len(pl.handle.NominatedPodsForNode(n.Name)) > 0 {
			return "", false
		}
		ts.buf = binary.AppendUvarint(ts.buf[:0], pl.nodeClasses.of(n, topologyKey, bound))
		ts.buf = appendPods(ts.buf, ni)
		id, ok := ts.classes[string(ts.buf)]
		if !ok {
			id = uint64(len(ts.classes))
			ts.classes[string(ts.buf)] = id
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	sig := make([]byte, 0, 2*len(ids))
	for _, id := range ids {
		sig = binary.AppendUvarint(sig, id)
	}
	return string(sig), true
}

// nodeClasses numbers node objects by nodeKey, across cycles, so that a
// key is built once per node object and topology key, not per placement.
// Numbers are never reused: when the maps are cleared (past a bound, so
// that replaced node objects are let go), a key met again gets a new one.
type nodeClasses struct {
	mu     sync.Mutex
	byNode map[*v1.Node]nodeClass
	ids    map[string]uint64
	next   uint64
}

type nodeClass struct {
	topologyKey string
	id          uint64
}

func (c *nodeClasses) of(n *v1.Node, topologyKey string, bound int) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byNode[n]; ok && e.topologyKey == topologyKey {
		return e.id
	}
	if c.byNode == nil || len(c.byNode) > bound {
		c.byNode, c.ids = map[*v1.Node]nodeClass{}, map[string]uint64{}
	}
	key := nodeKey(n, topologyKey)
	id, ok := c.ids[key]
	if !ok {
		id = c.next
		c.next++
		c.ids[key] = id
	}
	c.byNode[n] = nodeClass{topologyKey: topologyKey, id: id}
	return id
}

// nodeKey is what the profile reads of a node object, but its name, its
// hostname label and its value of the topology key.
func nodeKey(n *v1.Node, topologyKey string) string {
	var b []byte
	b = appendSorted(b, 'l', n.Labels, func(k string) bool { return k != v1.LabelHostname && k != topologyKey })
	b = appendSorted(b, 'a', n.Annotations, func(k string) bool { return strings.HasPrefix(k, "devicefit.io/") })
	for _, t := range n.Spec.Taints {
		b = append(append(append(append(append(append(b, 't'), t.Key...), '='), t.Value...), ':'), t.Effect...)
		b = append(b, 0)
	}
	b = strconv.AppendBool(append(b, 'u'), n.Spec.Unschedulable)
	alloc := make(map[string]string, len(n.Status.Allocatable))
	for name, q := range n.Status.Allocatable {
		alloc[string(name)] = q.String()
	}
	b = appendSorted(b, 'r', alloc, nil)
	for _, img := range n.Status.Images {
		b = append(append(b, 'i'), strings.Join(img.Names, ",")...)
		b = strconv.AppendInt(append(b, '='), img.SizeBytes, 10)
	}
	for _, f := range n.Status.DeclaredFeatures {
		b = append(append(append(b, 'f'), f...), 0)
	}
	return string(b)
}

// appendPods appends what the profile reads of the node info's pods:
// their requests, and of each its namespace, labels, priority, affinity,
// host ports and volumes, in a canonical order.
func appendPods(b []byte, ni fwk.NodeInfo) []byte {
	b = appendResource(b, 'q', ni.GetRequested())
	b = appendResource(b, 'z', ni.GetNonZeroRequested())
	if len(ni.GetPods()) == 0 {
		return b
	}
	pods := make([]string, 0, len(ni.GetPods()))
	for _, pi := range ni.GetPods() {
		p := pi.GetPod()
		pb := append([]byte(p.Namespace), 0)
		pb = appendSorted(pb, 'l', p.Labels, nil)
		if p.Spec.Priority != nil {
			pb = strconv.AppendInt(append(pb, 'p'), int64(*p.Spec.Priority), 10)
		}
		if p.Spec.Affinity != nil {
			pb = append(pb, p.Spec.Affinity.String()...)
		}
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.HostPort > 0 {
					pb = append(append(append(pb, 'h'), port.HostIP...), ':')
					pb = append(append(strconv.AppendInt(pb, int64(port.HostPort), 10), '/'), port.Protocol...)
				}
			}
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil || v.Ephemeral != nil || v.CSI != nil {
				pb = append(append(pb, 'v'), v.Name...)
			}
		}
		pods = append(pods, string(pb))
	}
	slices.Sort(pods)
	for _, p := range pods {
		b = append(append(b, p...), 1)
	}
	return b
}

func appendResource(b []byte, tag byte, r fwk.Resource) []byte {
	if r == nil {
		return b
	}
	b = strconv.AppendInt(append(b, tag), r.GetMilliCPU(), 10)
	b = strconv.AppendInt(append(b, ','), r.GetMemory(), 10)
	b = strconv.AppendInt(append(b, ','), r.GetEphemeralStorage(), 10)
	names := make([]string, 0, len(r.GetScalarResources()))
	for name := range r.GetScalarResources() {
		names = append(names, string(name))
	}
	slices.Sort(names)
	for _, name := range names {
		b = append(append(b, ','), name...)
		b = strconv.AppendInt(append(b, '='), r.GetScalarResources()[v1.ResourceName(name)], 10)
	}
	return append(b, 0)
}

// appendSorted appends the entries of m whose keys keep admits (all when
// nil), by key.
func appendSorted(b []byte, tag byte, m map[string]string, keep func(string) bool) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		if keep == nil || keep(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = append(append(append(append(append(b, tag), k...), '='), m[k]...), 0)
	}
	return b
}

// tellsNodesApart reports whether the pod may fit or score differently on
// nodes alike but for their names and values of topologyKey: it names a
// node, selects or prefers nodes by those labels or by fields, or mounts
// volumes (a persistent volume's node affinity may name nodes).
func tellsNodesApart(p *v1.Pod, topologyKey string) bool {
	if p.Spec.NodeName != "" {
		return true
	}
	named := func(k string) bool { return k == v1.LabelHostname || k == topologyKey }
	for k := range p.Spec.NodeSelector {
		if named(k) {
			return true
		}
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		var terms []v1.NodeSelectorTerm
		if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			terms = append(terms, r.NodeSelectorTerms...)
		}
		for _, t := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, t.Preference)
		}
		for _, t := range terms {
			if len(t.MatchFields) > 0 {
				return true
			}
			for _, e := range t.MatchExpressions {
				if named(e.Key) {
					return true
				}
			}
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

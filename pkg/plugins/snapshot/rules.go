package snapshot

import (
	"github.com/devicefit/devicefit/pkg/plugins/shared"
)

// maxRuleMemos bounds the rule verdicts kept: a fleet's pods come in a few
// dozen shapes, and each memo costs 9 bytes per node.
const maxRuleMemos = 32

// ruleMemo holds one set of node rules' verdicts (shared.NodeRules.Key) by
// node position, each for the node object entry ids[j] stands for: a
// verdict depends on the node object alone, so it holds until the object
// is replaced, whatever position the node has by then.
type ruleMemo struct {
	ids      []uint64
	verdicts []uint8
}

// Verdict bits of a ruleMemo entry.
const (
	admitted uint8 = 1 << iota
	avoided
)

// Judge returns what the pod's own node rules say of the cycle's node j:
// whether they admit it (rules.Admit) and whether it has a PreferNoSchedule
// taint they do not tolerate (rules.PreferAvoided). The verdicts are kept
// between cycles for the rules' key: the walks over every node then read
// the node object only where it changed, instead of its labels and taints
// for every pod (a tenth of DevicePack's PreFilter at 15,000 nodes).
func (c *Cycle) Judge(rules *shared.NodeRules, j int) (admit, avoid bool) {
	r := &c.Rows[j]
	if r.Devices == nil {
		node := r.Info.Node()
		return rules.Admit(node), node != nil && rules.PreferAvoided(node)
	}
	m := c.memo(rules.Key())
	id := r.Devices.ID()
	if m.ids[j] != id {
		// The node object only now: reading it through the node info is a
		// cache miss per node, for every pod.
		node := r.Info.Node()
		var v uint8
		if rules.Admit(node) {
			v |= admitted
		}
		if len(node.Spec.Taints) > 0 && rules.PreferAvoided(node) {
			v |= avoided
		}
		m.ids[j], m.verdicts[j] = id, v
	}
	v := m.verdicts[j]
	return v&admitted != 0, v&avoided != 0
}

// memo returns the rule memo of key, sized to the cycle's nodes; the
// Cycle keeps the last one asked for, as a walk asks for one key per node.
func (c *Cycle) memo(key string) *ruleMemo {
	if c.lastMemo != nil && c.lastKey == key {
		return c.lastMemo
	}
	t := c.table
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.rules[key]
	if m == nil {
		if len(t.rules) >= maxRuleMemos {
			// Evict any: a shape that comes back is judged again once.
			for k := range t.rules {
				delete(t.rules, k)
				break
			}
		}
		m = &ruleMemo{}
		t.rules[key] = m
	}
	if len(m.ids) != len(c.Rows) {
		// Nodes came or went: the entry ids still say which verdicts hold.
		ids, verdicts := make([]uint64, len(c.Rows)), make([]uint8, len(c.Rows))
		copy(ids, m.ids)
		copy(verdicts, m.verdicts)
		m.ids, m.verdicts = ids, verdicts
	}
	c.lastKey, c.lastMemo = key, m
	return m
}

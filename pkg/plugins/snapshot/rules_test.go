package snapshot

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/plugins/shared"
)

// TestJudgeRemembersPerRulesAndNodeObject: Judge gives rules.Admit's and
// rules.PreferAvoided's verdicts, for each set of rules its own, and
// follows a node object that is replaced.
func TestJudgeRemembersPerRulesAndNodeObject(t *testing.T) {
	pool := func(name, pool string, taints ...v1.Taint) *v1.Node {
		n := gpuNode(name)
		n.Labels = map[string]string{"pool": pool}
		n.Spec.Taints = taints
		return n
	}
	soft := v1.Taint{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}
	hard := v1.Taint{Key: "hard", Effect: v1.TaintEffectNoSchedule}
	infos := make([]*framework.NodeInfo, 3)
	nodes := make([]fwk.NodeInfo, 3)
	for i, n := range []*v1.Node{pool("a", "x"), pool("b", "y", soft), pool("c", "x", hard)} {
		infos[i] = framework.NewNodeInfo()
		infos[i].SetNode(n)
		nodes[i] = infos[i]
	}
	anyPod := st.MakePod().Name("any").Obj()
	inX := st.MakePod().Name("x").NodeSelector(map[string]string{"pool": "x"}).Obj()
	tolerant := st.MakePod().Name("t").Toleration("hard").Obj()
	type verdict struct{ admit, avoid bool }
	want := map[*v1.Pod][]verdict{
		anyPod:   {{true, false}, {true, true}, {false, false}},
		inX:      {{true, false}, {false, true}, {false, false}},
		tolerant: {{true, false}, {true, true}, {true, false}},
	}
	table := NewTable(newSet(t))
	check := func(c *Cycle) {
		t.Helper()
		for _, pod := range []*v1.Pod{anyPod, inX, tolerant, anyPod} {
			rules := shared.NewNodeRules(klog.Background(), pod, false)
			for j := range nodes {
				admit, avoid := c.Judge(&rules, j)
				if w := want[pod][j]; admit != w.admit || avoid != w.avoid {
					t.Errorf("pod %s, node %s: admit %v avoided %v, want %v %v", pod.Name, nodes[j].Node().Name, admit, avoid, w.admit, w.avoid)
				}
			}
		}
	}
	check(table.Refresh(nil, nodes))
	// Node c moves to pool y and loses its taint: the remembered verdicts
	// of the old object must not answer for the new one.
	infos[2].SetNode(pool("c", "y"))
	want[anyPod][2], want[inX][2], want[tolerant][2] = verdict{true, false}, verdict{false, false}, verdict{true, false}
	check(table.Refresh(nil, nodes))
}

package shared

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

func TestNodeRules(t *testing.T) {
	taint := func(effect v1.TaintEffect) v1.Taint { return v1.Taint{Key: "pool", Value: "train", Effect: effect} }
	tolerate := v1.Toleration{Key: "pool", Operator: v1.TolerationOpEqual, Value: "train"}
	node := func(taints ...v1.Taint) *v1.Node {
		n := st.MakeNode().Name("n").Label("zone", "a").Obj()
		n.Spec.Taints = taints
		return n
	}
	cordoned := node()
	cordoned.Spec.Unschedulable = true
	tests := []struct {
		name           string
		pod            *v1.Pod
		node           *v1.Node
		admit, avoided bool
	}{
		{"no taints", st.MakePod().Obj(), node(), true, false},
		{"NoSchedule untolerated", st.MakePod().Obj(), node(taint(v1.TaintEffectNoSchedule)), false, false},
		{"NoExecute untolerated", st.MakePod().Obj(), node(taint(v1.TaintEffectNoExecute)), false, false},
		{"NoSchedule tolerated", st.MakePod().Toleration("pool").Obj(), node(taint(v1.TaintEffectNoSchedule)), true, false},
		{"PreferNoSchedule: admitted, avoided", st.MakePod().Obj(), node(taint(v1.TaintEffectPreferNoSchedule)), true, true},
		{"PreferNoSchedule tolerated", &v1.Pod{Spec: v1.PodSpec{Tolerations: []v1.Toleration{tolerate}}}, node(taint(v1.TaintEffectPreferNoSchedule)), true, false},
		{"node selector not matched", st.MakePod().NodeSelector(map[string]string{"zone": "b"}).Obj(), node(), false, false},
		{"node selector matched", st.MakePod().NodeSelector(map[string]string{"zone": "a"}).Obj(), node(), true, false},
		{"cordoned", st.MakePod().Obj(), cordoned, false, false},
		{"cordoned, unschedulable taint tolerated", st.MakePod().Toleration(v1.TaintNodeUnschedulable).Obj(), cordoned, true, false},
	}
	logger, _ := ktesting.NewTestContext(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewNodeRules(logger, tc.pod, false)
			if got := r.Admit(tc.node); got != tc.admit {
				t.Errorf("Admit = %v, want %v", got, tc.admit)
			}
			if got := r.PreferAvoided(tc.node); got != tc.avoided {
				t.Errorf("PreferAvoided = %v, want %v", got, tc.avoided)
			}
		})
	}
}

// TestNodeRulesKey: pods whose rules would judge some node differently
// never share a key; pods with the same rules do.
func TestNodeRulesKey(t *testing.T) {
	base := func() *st.PodWrapper { return st.MakePod().Name("p") }
	pods := map[string]*v1.Pod{
		"none":             base().Obj(),
		"selector":         base().NodeSelector(map[string]string{"pool": "a"}).Obj(),
		"another selector": base().NodeSelector(map[string]string{"pool": "b"}).Obj(),
		"affinity":         base().NodeAffinityIn("pool", []string{"a"}, st.NodeSelectorTypeMatchExpressions).Obj(),
		"toleration":       base().Toleration("gpu").Obj(),
	}
	keys := map[string]string{}
	for name, pod := range pods {
		r := NewNodeRules(klog.Background(), pod, false)
		k := r.Key()
		if other, ok := keys[k]; ok {
			t.Errorf("%s and %s share a key", name, other)
		}
		keys[k] = name
		same := NewNodeRules(klog.Background(), pod.DeepCopy(), false)
		if same.Key() != k {
			t.Errorf("%s: a copy of the pod has another key", name)
		}
	}
	r := NewNodeRules(klog.Background(), pods["none"], true)
	if r.Key() == (&NodeRules{pod: pods["none"]}).Key() {
		t.Error("the gate does not change the key")
	}
}

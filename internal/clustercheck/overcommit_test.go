package clustercheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/pkg/devices"
)

func node(name string, alloc v1.ResourceList) v1.Node {
	return v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: alloc}}
}

func pod(nodeName string, phase v1.PodPhase, req v1.ResourceList) v1.Pod {
	return v1.Pod{
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{
			{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: req}},
		}},
		Status: v1.PodStatus{Phase: phase},
	}
}

func list(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestOvercommitted(t *testing.T) {
	gpuNode := node("gpu-0", list("cpu", "8", "memory", "32Gi", "pods", "2", "nvidia.com/gpu", "2"))
	cpuNode := node("cpu-0", list("cpu", "8", "memory", "32Gi", "pods", "110"))
	tests := []struct {
		name  string
		nodes []v1.Node
		pods  []v1.Pod
		want  map[v1.ResourceName][]string
	}{
		{
			name:  "within allocatable",
			nodes: []v1.Node{gpuNode},
			pods:  []v1.Pod{pod("gpu-0", v1.PodRunning, list("cpu", "4", "nvidia.com/gpu", "1")), pod("gpu-0", v1.PodRunning, list("cpu", "4", "nvidia.com/gpu", "1"))},
			want:  map[v1.ResourceName][]string{},
		},
		{
			name:  "the last GPU and the last CPUs booked twice",
			nodes: []v1.Node{gpuNode},
			pods: []v1.Pod{
				pod("gpu-0", v1.PodRunning, list("cpu", "4", "nvidia.com/gpu", "1")), pod("gpu-0", v1.PodPending, list("cpu", "4", "nvidia.com/gpu", "1")),
				pod("gpu-0", v1.PodPending, list("cpu", "1", "nvidia.com/gpu", "1")),
			},
			want: map[v1.ResourceName][]string{
				"nvidia.com/gpu": {"gpu-0 (3 of 2)"}, "cpu": {"gpu-0 (9 of 8)"}, "pods": {"gpu-0 (3 of 2)"},
			},
		},
		{
			name:  "finished pods hold nothing; unbound pods are not counted",
			nodes: []v1.Node{gpuNode},
			pods: []v1.Pod{
				pod("gpu-0", v1.PodSucceeded, list("nvidia.com/gpu", "2")), pod("gpu-0", v1.PodFailed, list("nvidia.com/gpu", "2")),
				pod("gpu-0", v1.PodRunning, list("nvidia.com/gpu", "2")), pod("", v1.PodPending, list("nvidia.com/gpu", "2")),
			},
			want: map[v1.ResourceName][]string{},
		},
		{
			name:  "a device the node does not advertise",
			nodes: []v1.Node{cpuNode},
			pods:  []v1.Pod{pod("cpu-0", v1.PodRunning, list("cpu", "1", "nvidia.com/gpu", "1", "ephemeral-storage", "1Gi"))},
			want:  map[v1.ResourceName][]string{"nvidia.com/gpu": {"cpu-0 (1 of 0)"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Overcommitted(tc.nodes, tc.pods, nil)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Overcommitted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOvercommittedDRABacked: a node serving nvidia.com/gpu from
// ResourceSlices (no allocatable of it) is checked by its claims, not here.
func TestOvercommittedDRABacked(t *testing.T) {
	n := node("dra-0", list("cpu", "8", "memory", "32Gi", "pods", "110"))
	d := &DRA{Inventory: &devices.DRAInventory{Nodes: map[string]*devices.DRANode{"dra-0": {}}}}
	pods := []v1.Pod{pod("dra-0", v1.PodRunning, list("nvidia.com/gpu", "1"))}
	if got := Overcommitted([]v1.Node{n}, pods, d); len(got) != 0 {
		t.Errorf("Overcommitted = %v, want nothing: the node serves nvidia.com/gpu from slices", got)
	}
	if got := Overcommitted([]v1.Node{n}, pods, nil); len(got[devices.NVIDIAGPU]) != 1 {
		t.Errorf("Overcommitted without DRA = %v, want the node over-committed on nvidia.com/gpu", got)
	}
}

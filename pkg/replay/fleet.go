package replay

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/devicefit/devicefit/pkg/devices"
)

// DeviceResource is the resource every trace device becomes.
const DeviceResource = devices.NVIDIAGPU

// PodsPerNode is the pod capacity of every simulated node: far above what
// the trace puts on a node, so that it never decides a placement.
const PodsPerNode = 256

// Namespace of the simulated pods.
const Namespace = "replay"

// Capacity returns the number of devices of the fleet.
func Capacity(nodes []NodeSpec) int64 {
	var n int64
	for i := range nodes {
		n += nodes[i].GPUs
	}
	return n
}

// NewNode returns the v1.Node of a trace node: capacity = allocatable =
// cpu, memory, pods and (for device nodes) nvidia.com/gpu, and the GFD
// labels nvidia.com/gpu.present, .product (the trace's model code) and
// .count. Nodes without devices get no device label.
func NewNode(n *NodeSpec) *v1.Node {
	labels := map[string]string{v1.LabelHostname: n.Name}
	for k, v := range n.Labels {
		labels[k] = v
	}
	res := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(n.MilliCPU, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(n.MemoryMiB<<20, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(PodsPerNode, resource.DecimalSI),
	}
	if n.GPUs > 0 {
		labels["nvidia.com/gpu.present"] = "true"
		labels[devices.LabelGPUProduct] = n.Model
		labels[devices.LabelGPUCount] = strconv.FormatInt(n.GPUs, 10)
		res[DeviceResource] = *resource.NewQuantity(n.GPUs, resource.DecimalSI)
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID("node-" + n.Name), Labels: labels},
		Status: v1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

// SelectorStyle says how a pod's accepted device models are expressed.
type SelectorStyle int

const (
	// SelectByAffinity: a required node affinity on nvidia.com/gpu.product,
	// which every profile honours through the upstream NodeAffinity plugin.
	SelectByAffinity SelectorStyle = iota
	// SelectByAnnotation: the devicefit.io/products annotation, for profiles
	// that enable DeviceFit.
	SelectByAnnotation
)

// NewPod returns the v1.Pod of an arrival: one container whose requests
// equal its limits for cpu, memory (when not zero) and nvidia.com/gpu
// (whole devices; fractions must be handled before, see ApplyFractional).
// uid must be unique in the replay.
func NewPod(a *Arrival, uid, schedulerName string, style SelectorStyle) *v1.Pod {
	p := a.Pod
	res := v1.ResourceList{}
	if p.MilliCPU > 0 {
		res[v1.ResourceCPU] = *resource.NewMilliQuantity(p.MilliCPU, resource.DecimalSI)
	}
	if p.MemoryMiB > 0 {
		res[v1.ResourceMemory] = *resource.NewQuantity(p.MemoryMiB<<20, resource.BinarySI)
	}
	if p.GPUs > 0 {
		res[DeviceResource] = *resource.NewQuantity(p.GPUs, resource.DecimalSI)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: Namespace, UID: types.UID(uid)},
		Spec: v1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []v1.Container{{
				Name:      "main",
				Image:     "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()},
			}},
		},
	}
	if len(p.Products) > 0 {
		switch style {
		case SelectByAnnotation:
			pod.Annotations = map[string]string{devices.AnnotationProducts: strings.Join(p.Products, ",")}
		case SelectByAffinity:
			pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{
						MatchExpressions: []v1.NodeSelectorRequirement{{
							Key:      devices.LabelGPUProduct,
							Operator: v1.NodeSelectorOpIn,
							Values:   append([]string(nil), p.Products...),
						}},
					}},
				},
			}}
		}
	}
	return pod
}

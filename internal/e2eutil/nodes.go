package e2eutil

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// Node is one simulated node of a test fleet: labels as GPU Feature
// Discovery writes them (internal/gfd), device allocatable as the device
// plugins advertise it.
type Node struct {
	Name   string
	Labels map[string]string
	// Devices is the allocatable of each device resource; a zero entry is
	// a resource the node still lists at 0, as a kubelet keeps a resource
	// whose device plugin went away.
	Devices map[v1.ResourceName]int64
}

// Capacity is the node's capacity (and allocatable): 64 CPUs, 512Gi and
// pods, the size of a GPU server, plus its devices.
func (n Node) Capacity(pods int64) v1.ResourceList {
	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("64"),
		v1.ResourceMemory: resource.MustParse("512Gi"),
		v1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
	}
	for r, q := range n.Devices {
		capacity[r] = *resource.NewQuantity(q, resource.DecimalSI)
	}
	return capacity
}

// Register registers the node Ready with Capacity(pods) and its labels
// plus extra, e.g. the label its test's pods select (controlplane.RegisterNode).
func (n Node) Register(ctx context.Context, cs kubernetes.Interface, pods int64, extra map[string]string) error {
	labels := make(map[string]string, len(n.Labels)+len(extra))
	for k, v := range n.Labels {
		labels[k] = v
	}
	for k, v := range extra {
		labels[k] = v
	}
	return controlplane.RegisterNode(ctx, cs, n.Name, labels, n.Capacity(pods))
}

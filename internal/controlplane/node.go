package controlplane

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RegisterNode creates a node with labels (plus the well-known hostname, os
// and arch labels a kubelet sets), then sets its capacity, allocatable and a
// Ready condition through the status subresource, as a kubelet and its device
// plugins would: node status cannot be written through a plain create. No
// kubelet runs, so nothing ever updates the node again.
func RegisterNode(ctx context.Context, cs kubernetes.Interface, name string, labels map[string]string, capacity v1.ResourceList) error {
	all := map[string]string{
		"kubernetes.io/hostname": name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}
	for k, v := range labels {
		all[k] = v
	}
	created, err := cs.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	now := metav1.Now()
	created.Status = v1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity.DeepCopy(),
		Phase:       v1.NodeRunning,
		Conditions: []v1.NodeCondition{{
			Type:               v1.NodeReady,
			Status:             v1.ConditionTrue,
			Reason:             "KubeletReady",
			Message:            "simulated by devicefit (no kubelet)",
			LastHeartbeatTime:  now,
			LastTransitionTime: now,
		}},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting the status of node %s: %w", name, err)
	}
	return nil
}

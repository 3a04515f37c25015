package clustercheck

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
)

// Overcommitted lists, per resource, the nodes whose bound pods request
// more than the node's allocatable, as "node (requested of allocatable)",
// sorted: what the kubelet's admission would reject (OutOf<resource>,
// UnexpectedAdmissionError for devices) when two schedulers book the same
// room. pods counts each pod once against the node's pod capacity.
//
// An extended resource a node does not advertise counts as 0 there: a pod
// bound to it for one is over-committed, unless the node serves the
// resource from ResourceSlices (DRA-backed extended resources; d may be
// nil). Other resources the node does not list are not checked.
func Overcommitted(nodes []v1.Node, pods []v1.Pod, d *DRA) map[v1.ResourceName][]string {
	used := map[string]v1.ResourceList{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || terminated(p) {
			continue
		}
		u := used[p.Spec.NodeName]
		if u == nil {
			u = v1.ResourceList{}
			used[p.Spec.NodeName] = u
		}
		for res, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			sum := u[res]
			sum.Add(q)
			u[res] = sum
		}
		n := u[v1.ResourcePods]
		n.Add(*resource.NewQuantity(1, resource.DecimalSI))
		u[v1.ResourcePods] = n
	}
	out := map[v1.ResourceName][]string{}
	for i := range nodes {
		n := &nodes[i]
		for res, q := range used[n.Name] {
			alloc, ok := n.Status.Allocatable[res]
			if !ok && (!v1helper.IsExtendedResourceName(res) || d != nil && d.FromSlices(n, res)) {
				continue
			}
			if q.Cmp(alloc) > 0 {
				out[res] = append(out[res], fmt.Sprintf("%s (%s of %s)", n.Name, q.String(), alloc.String()))
			}
		}
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// terminated: the pod's containers no longer hold the node's resources.
func terminated(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

package cli

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/pkg/devices"
)

// OtherScheduler counts the bound device pods that one scheduler other
// than devicefit placed.
type OtherScheduler struct {
	SchedulerName string `json:"schedulerName"`
	// Pods are namespace/name, sorted; Nodes the nodes they are on.
	Pods  []string `json:"pods"`
	Nodes int      `json:"nodes"`
}

// OtherSchedulers lists, per scheduler not among profiles (devicefit's
// scheduler names), the device pods it bound: pods asking one of set's
// resources, a DRA-backed extended resource (set covers those it names) or
// resource claims, with a node and not finished. Two schedulers booking the
// same nodes can hand out the same device twice (docs/coexistence.md).
func OtherSchedulers(pods []*v1.Pod, set devices.ResourceSet, profiles []string) []OtherScheduler {
	type acc struct {
		pods  []string
		nodes map[string]bool
	}
	by := map[string]*acc{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed ||
			slices.Contains(profiles, p.Spec.SchedulerName) {
			continue
		}
		if !devices.AsksForDevices(p, set) {
			continue
		}
		a := by[p.Spec.SchedulerName]
		if a == nil {
			a = &acc{nodes: map[string]bool{}}
			by[p.Spec.SchedulerName] = a
		}
		a.pods = append(a.pods, p.Namespace+"/"+p.Name)
		a.nodes[p.Spec.NodeName] = true
	}
	out := make([]OtherScheduler, 0, len(by))
	for name, a := range by {
		sort.Strings(a.pods)
		out = append(out, OtherScheduler{SchedulerName: name, Pods: a.pods, Nodes: len(a.nodes)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SchedulerName < out[j].SchedulerName })
	return out
}

// OtherSchedulerWarnings words OtherSchedulers for stderr.
func OtherSchedulerWarnings(rows []OtherScheduler) []string {
	var out []string
	for _, r := range rows {
		examples := r.Pods
		if len(examples) > 3 {
			examples = examples[:3]
		}
		out = append(out, fmt.Sprintf("%d device pods on %d nodes were placed by %s, not devicefit (e.g. %s): two schedulers with two caches can book "+
			"the same device, and the kubelet then rejects a pod (OutOfnvidia.com/gpu); route device pods to devicefit with the routing policy "+
			"(kubectl devicefit routing-policy; docs/coexistence.md)", len(r.Pods), r.Nodes, schedulerLabel(r.SchedulerName), strings.Join(examples, ", ")))
	}
	return out
}

func schedulerLabel(name string) string {
	if name == "" {
		return `a scheduler named ""`
	}
	return name
}

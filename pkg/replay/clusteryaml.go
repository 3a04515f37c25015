package replay

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/devicefit/devicefit/pkg/devices"
)

// labelsTheReplaySets are the node labels NewNode writes itself.
var labelsTheReplaySets = map[string]bool{
	v1.LabelHostname: true, "nvidia.com/gpu.present": true,
	devices.LabelGPUProduct: true, devices.LabelGPUCount: true,
}

// unknownModel is the model of a node that advertises nvidia.com/gpu
// without GFD's product label (the format needs one).
const unknownModel = "unknown"

// WriteClusterYAML writes a live cluster's nodes and the pods that hold or wait for them
// (not terminated, in creation order: the arrival order the replay
// replays with --order trace) in the own YAML format (ReadNodesYAML, ReadPodsYAML), so that `replay
// --nodes FILE --pods FILE` compares profiles on this fleet and job mix. The
// format knows one device resource, nvidia.com/gpu, and one selector,
// devicefit.io/products: the returned warnings say what it had to leave out.
func WriteClusterYAML(w io.Writer, nodes []*v1.Node, pods []*v1.Pod) ([]string, error) {
	var f yamlFile
	// What the format cannot carry: nodes without cpu or memory, other
	// device resources on nodes (dropped) and in pods (the pod dropped).
	skippedNodes := 0
	nodeOther, podOther := map[v1.ResourceName]int{}, map[v1.ResourceName]int{}
	sortedNodes := append([]*v1.Node(nil), nodes...)
	sort.Slice(sortedNodes, func(i, j int) bool { return sortedNodes[i].Name < sortedNodes[j].Name })
	for _, n := range sortedNodes {
		alloc := n.Status.Allocatable
		cpu, mem := alloc[v1.ResourceCPU], alloc[v1.ResourceMemory]
		if cpu.MilliValue() <= 0 || mem.Value() < 1<<20 {
			skippedNodes++
			continue
		}
		rn := yamlNode{Name: n.Name, CPU: cpu.String(), Memory: fmt.Sprintf("%dMi", mem.Value()>>20)}
		if g, ok := alloc[DeviceResource]; ok && g.Value() > 0 {
			rn.GPUs = g.Value()
			rn.Model = n.Labels[devices.LabelGPUProduct]
			if rn.Model == "" {
				rn.Model = unknownModel
			}
		}
		for k, v := range n.Labels {
			if !labelsTheReplaySets[k] {
				if rn.Labels == nil {
					rn.Labels = map[string]string{}
				}
				rn.Labels[k] = v
			}
		}
		for name, q := range alloc {
			if name != DeviceResource && strings.Contains(string(name), "/") && !q.IsZero() {
				nodeOther[name]++
			}
		}
		f.Nodes = append(f.Nodes, rn)
	}

	sortedPods := append([]*v1.Pod(nil), pods...)
	sort.SliceStable(sortedPods, func(i, j int) bool {
		a, b := sortedPods[i], sortedPods[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	selectors := 0
	for _, p := range sortedPods {
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		skip := false
		for name, q := range reqs {
			if name != DeviceResource && strings.Contains(string(name), "/") && !q.IsZero() {
				podOther[name]++
				skip = true
			}
		}
		if skip {
			continue
		}
		cpu, mem := reqs[v1.ResourceCPU], reqs[v1.ResourceMemory]
		rp := yamlPod{
			// Unique over namespaces, and a DNS subdomain as the format wants.
			Name: p.Namespace + "." + p.Name,
			CPU:  cpu.String(),
			// Whole MiB, rounded up: never less than the pod asks.
			Memory: fmt.Sprintf("%dMi", (mem.Value()+(1<<20)-1)>>20),
		}
		if cpu.IsZero() {
			rp.CPU = "0"
		}
		if g, ok := reqs[DeviceResource]; ok {
			rp.GPUs = g.Value()
		}
		for _, a := range devices.SelectorAnnotations(p.Annotations) {
			if k, v, _ := strings.Cut(a, "="); k == devices.AnnotationProducts && rp.GPUs > 0 {
				for _, prod := range strings.Split(v, ",") {
					if prod = strings.TrimSpace(prod); prod != "" {
						rp.Products = append(rp.Products, prod)
					}
				}
			} else {
				selectors++
			}
		}
		f.Pods = append(f.Pods, rp)
	}
	var warnings []string
	if skippedNodes > 0 {
		warnings = append(warnings, fmt.Sprintf("%d nodes without allocatable cpu or memory left out", skippedNodes))
	}
	for _, name := range slices.Sorted(maps.Keys(nodeOther)) {
		warnings = append(warnings, fmt.Sprintf("%s of %d nodes left out: the replay format knows only %s", name, nodeOther[name], DeviceResource))
	}
	for _, name := range slices.Sorted(maps.Keys(podOther)) {
		warnings = append(warnings, fmt.Sprintf("%d pods asking for %s left out: the replay format knows only %s", podOther[name], name, DeviceResource))
	}
	if selectors > 0 {
		warnings = append(warnings, fmt.Sprintf("%d devicefit.io annotations other than products left out: the replay format carries products only", selectors))
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return warnings, err
	}
	return warnings, enc.Close()
}

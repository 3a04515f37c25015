package localup

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
)

const noProduct = "(no GPU)"

// productRow is the placement on the nodes of one gpu.product.
type productRow struct {
	product     string
	nodes       int
	pods        int
	allocatable map[v1.ResourceName]int64
	bound       map[v1.ResourceName]int64
}

// isDevice reports whether name is an extended resource, i.e. not one the
// kubelet itself accounts for. Every extended resource of the fleet is a
// device.
func isDevice(name v1.ResourceName) bool {
	switch name {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage:
		return false
	}
	return !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

func productOf(n *v1.Node) string {
	if p := n.Labels[labelGPUProduct]; p != "" {
		return p
	}
	return noProduct
}

// placement aggregates nodes and bound pods per product, in a fixed order.
// A DRA node's row is its slices' product, marked (DRA); its devices are
// those the slices publish per DeviceClass resource, and the bound ones
// those claims hold there.
func placement(nodes []v1.Node, pods []v1.Pod, s *draState) []*productRow {
	rows := map[string]*productRow{}
	nodeProduct := map[string]string{}
	draNode := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		prod := productOf(n)
		if p := s.nodeProduct(n.Name); p != "" {
			prod = p
			draNode[n.Name] = true
		}
		nodeProduct[n.Name] = prod
		r := rows[prod]
		if r == nil {
			r = &productRow{product: prod, allocatable: map[v1.ResourceName]int64{}, bound: map[v1.ResourceName]int64{}}
			rows[prod] = r
		}
		r.nodes++
		for name, q := range n.Status.Allocatable {
			if isDevice(name) {
				r.allocatable[name] += q.Value()
			}
		}
		for _, e := range s.entries(n.Name) {
			r.allocatable[e.Resource] += e.Total
			r.bound[e.Resource] += e.Held
		}
	}
	for i := range pods {
		p := &pods[i]
		r := rows[nodeProduct[p.Spec.NodeName]]
		if r == nil {
			continue
		}
		r.pods++
		if draNode[p.Spec.NodeName] {
			// Counted from the claims above.
			continue
		}
		for name, q := range podDevices(p) {
			r.bound[name] += q.Value()
		}
	}
	out := make([]*productRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		// Devices first, largest first; CPU-only last.
		if (out[i].product == noProduct) != (out[j].product == noProduct) {
			return out[j].product == noProduct
		}
		return out[i].product < out[j].product
	})
	return out
}

// podDevices returns the device requests of p's containers. The demo pods
// have one container and no init containers, so no effective-request math is
// needed here.
func podDevices(p *v1.Pod) v1.ResourceList {
	out := v1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Requests {
			if isDevice(name) {
				sum := out[name]
				sum.Add(q)
				out[name] = sum
			}
		}
	}
	return out
}

func printPlacement(out io.Writer, rows []*productRow) {
	fmt.Fprintln(out, "\nPlacement per product (devices = extended resources in node allocatable):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PRODUCT\tNODES\tRESOURCE\tALLOCATABLE\tBOUND\tUSED\tPODS")
	for _, r := range rows {
		names := make([]string, 0, len(r.allocatable))
		for name := range r.allocatable {
			names = append(names, string(name))
		}
		sort.Strings(names)
		if len(names) == 0 {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t%d\n", r.product, r.nodes, r.pods)
			continue
		}
		for i, name := range names {
			alloc, bound := r.allocatable[v1.ResourceName(name)], r.bound[v1.ResourceName(name)]
			used := "-"
			if alloc > 0 {
				used = fmt.Sprintf("%.0f%%", 100*float64(bound)/float64(alloc))
			}
			if i == 0 {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%d\n", r.product, r.nodes, name, alloc, bound, used, r.pods)
			} else {
				fmt.Fprintf(tw, "\t\t%s\t%d\t%d\t%s\t\n", name, alloc, bound, used)
			}
		}
	}
	tw.Flush()
}

// printUnschedulable lists the deliberately invalid pods one by one and
// groups the others by the scheduler's message.
func printUnschedulable(out io.Writer, pods []v1.Pod, invalid map[string]bool) {
	var expected []*v1.Pod
	groups := map[string][]string{}
	for i := range pods {
		p := &pods[i]
		if stateOf(p) != stateUnschedulable {
			continue
		}
		if invalid[p.Labels[classLabel]] {
			expected = append(expected, p)
			continue
		}
		msg := scheduledCondition(p).Message
		groups[msg] = append(groups[msg], p.Name)
	}
	fmt.Fprintf(out, "\nDeliberately invalid pods (%d), PodScheduled=False:\n", len(expected))
	sort.Slice(expected, func(i, j int) bool { return expected[i].Name < expected[j].Name })
	for _, p := range expected {
		fmt.Fprintf(out, "  %s  %s\n    %s\n", p.Name, describeRequest(p), scheduledCondition(p).Message)
	}
	msgs := make([]string, 0, len(groups))
	n := 0
	for m, names := range groups {
		msgs = append(msgs, m)
		n += len(names)
	}
	sort.Slice(msgs, func(i, j int) bool {
		if len(groups[msgs[i]]) != len(groups[msgs[j]]) {
			return len(groups[msgs[i]]) > len(groups[msgs[j]])
		}
		return msgs[i] < msgs[j]
	})
	fmt.Fprintf(out, "\nOther unschedulable pods (%d):\n", n)
	if n == 0 {
		fmt.Fprintln(out, "  none")
	}
	for _, m := range msgs {
		names := groups[m]
		sort.Strings(names)
		shown := names
		if len(shown) > 4 {
			shown = shown[:4]
		}
		more := ""
		if len(names) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(names)-len(shown))
		}
		fmt.Fprintf(out, "  %d pod(s): %s%s\n    %s\n", len(names), strings.Join(shown, ", "), more, m)
	}
}

// describeRequest summarises a pod's device request and selector.
func describeRequest(p *v1.Pod) string {
	var parts []string
	devs := podDevices(p)
	names := make([]string, 0, len(devs))
	for name := range devs {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := devs[v1.ResourceName(name)]
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	keys := make([]string, 0, len(p.Annotations))
	for k := range p.Annotations {
		if strings.HasPrefix(k, "devicefit.io/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, p.Annotations[k]))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// check verifies the outcome against the workload's own expectations and
// returns one line per violation.
//
// Pods on DRA nodes are checked by the devices their claims hold (checkDRA).
func check(nodes []v1.Node, pods []v1.Pod, classes []class, s *draState) []string {
	byName := map[string]class{}
	for _, c := range classes {
		byName[c.name] = c
	}
	nodeProduct := map[string]string{}
	for i := range nodes {
		nodeProduct[nodes[i].Name] = nodes[i].Labels[labelGPUProduct]
	}
	var problems []string
	bound := 0
	for i := range pods {
		p := &pods[i]
		c := byName[p.Labels[classLabel]]
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		prod := nodeProduct[p.Spec.NodeName]
		if s.nodeProduct(p.Spec.NodeName) != "" && !c.invalid {
			continue
		}
		switch {
		case c.invalid:
			problems = append(problems, fmt.Sprintf("%s is invalid but was bound to %s (%s)", p.Name, p.Spec.NodeName, prod))
		case c.allowed != nil && !contains(c.allowed, prod):
			problems = append(problems, fmt.Sprintf("%s %s was bound to %s (%s); its selector admits only %s",
				p.Name, describeRequest(p), p.Spec.NodeName, prod, strings.Join(c.allowed, ", ")))
		}
	}
	if bound == 0 {
		problems = append(problems, "no pod was bound at all")
	}
	return problems
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

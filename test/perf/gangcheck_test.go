package perf

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/devicefit/devicefit/test/perf/results"
)

// cliqueLabel is the NVLink domain of a node (GPU Feature Discovery).
const cliqueLabel = "nvidia.com/gpu.clique"

const gpuResource v1.ResourceName = "nvidia.com/gpu"

type gangShape struct{ pods, gpus int64 }

// checkGangs computes results.Gangs, and fails when a group is bound in part
// (below minCount) or across domains. ok is false when there are no pod
// groups or no domains: nothing to report.
func checkGangs(ctx context.Context, client clientset.Interface) (c results.Gangs, ok bool, err error) {
	groups, err := client.SchedulingV1beta1().PodGroups(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		// The workload ran without GenericWorkload: the apiserver does
		// not serve scheduling.k8s.io/v1beta1, so there are no groups.
		return c, false, nil
	}
	if err != nil || len(groups.Items) == 0 {
		return c, false, err
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return c, false, err
	}
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return c, false, err
	}
	domainOf := map[string]string{}
	free := map[string]int64{}
	byDomain := map[string][]string{}
	for _, n := range nodes.Items {
		d, has := n.Labels[cliqueLabel]
		if !has {
			continue
		}
		q := n.Status.Allocatable[gpuResource]
		domainOf[n.Name] = d
		free[n.Name] = q.Value()
		byDomain[d] = append(byDomain[d], n.Name)
		c.GPUs += q.Value()
	}
	if len(byDomain) == 0 {
		return c, false, nil
	}
	c.Domains = len(byDomain)
	used := map[string]bool{}
	type groupKey struct{ ns, name string }
	bound := map[groupKey]int{}
	domains := map[groupKey]map[string]bool{}
	perPod := map[groupKey]int64{}
	members := map[groupKey]int{}
	var errs []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		var gpus int64
		for _, ctr := range p.Spec.Containers {
			q := ctr.Resources.Requests[gpuResource]
			gpus += q.Value()
		}
		var g *groupKey
		if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
			g = &groupKey{p.Namespace, *sg.PodGroupName}
			perPod[*g] = gpus
			members[*g]++
		} else {
			c.SinglesArrived++
		}
		if p.Spec.NodeName == "" {
			continue
		}
		d, inDomain := domainOf[p.Spec.NodeName]
		if inDomain {
			free[p.Spec.NodeName] -= gpus
			used[d] = used[d] || gpus > 0
			c.Allocated += gpus
		}
		if g == nil {
			c.SinglesBound++
			continue
		}
		bound[*g]++
		if domains[*g] == nil {
			domains[*g] = map[string]bool{}
		}
		domains[*g][d] = true
		if inDomain {
			c.InGangs += gpus
		}
	}
	shapes := map[gangShape]bool{}
	for _, pg := range groups.Items {
		k := groupKey{pg.Namespace, pg.Name}
		if members[k] == 0 {
			continue
		}
		c.GroupsArrived++
		min := 1
		if gang := pg.Spec.SchedulingPolicy.Gang; gang != nil {
			min = int(gang.MinCount)
		}
		if perPod[k] > 0 {
			shapes[gangShape{int64(min), perPod[k]}] = true
		}
		switch n := bound[k]; {
		case n == 0:
		case n < min:
			errs = append(errs, fmt.Sprintf("group %s/%s: %d pods bound, minCount %d", pg.Namespace, pg.Name, n, min))
		default:
			c.GroupsPlaced++
		}
		if len(domains[k]) > 1 && len(pg.Spec.SchedulingConstraints.Topology) > 0 {
			errs = append(errs, fmt.Sprintf("group %s/%s bound in %d domains", pg.Namespace, pg.Name, len(domains[k])))
		}
	}
	for s := range shapes {
		c.Shapes = append(c.Shapes, fmt.Sprintf("%dx%d", s.pods, s.gpus))
	}
	sort.Strings(c.Shapes)
	for d, names := range byDomain {
		if !used[d] {
			c.WholeDomains++
		}
		c.Stranded += strandedIn(names, free, shapes)
	}
	if len(errs) > 0 {
		return c, true, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return c, true, nil
}

// strandedIn is the free GPUs of one domain's nodes that no shape can use:
// all of them when no shape fits the domain, else those below a whole pod
// of the smallest per-pod size among the shapes that fit.
func strandedIn(nodes []string, free map[string]int64, shapes map[gangShape]bool) int64 {
	var total int64
	smallest := int64(0)
	for s := range shapes {
		var slots int64
		for _, n := range nodes {
			slots += max(free[n], 0) / s.gpus
		}
		if slots >= s.pods && (smallest == 0 || s.gpus < smallest) {
			smallest = s.gpus
		}
	}
	for _, n := range nodes {
		f := max(free[n], 0)
		if smallest == 0 {
			total += f
		} else {
			total += f % smallest
		}
	}
	return total
}

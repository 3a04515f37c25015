package localup

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// The --workload mode (docs/gangs.md): pod groups in NVLink domains.
const (
	// workloadGates are the feature gates of kube-apiserver and the
	// scheduler: the Workload API and the scheduler's pod-group cycle
	// (beta, off by default in v1.37.2), and topology-aware placement
	// (alpha).
	workloadGates = "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
	// workloadAPI serves Workload and PodGroup (a beta API is off unless
	// asked for).
	workloadAPI = "--runtime-config=scheduling.k8s.io/v1beta1=true"
	// cliqueLabel is the GFD label of a multi-node NVLink domain:
	// <fabric cluster UUID>.<clique id>.
	cliqueLabel  = "nvidia.com/gpu.clique"
	cliqueFabric = "7f3d2c1a-5b6e-4f80-9a1b-2c3d4e5f6a7b"
	// cliques of traysPerClique GB200 compute trays of gpusPerTray GPUs: a
	// GB200 NVL72 rack.
	cliques        = 4
	traysPerClique = 18
	gpusPerTray    = 4
	jobLabel       = "localup.devicefit.io/job"
)

// cliqueFleet is the --workload fleet.
func cliqueFleet() []pool {
	var pools []pool
	for c := range cliques {
		pools = append(pools, pool{
			name: fmt.Sprintf("clique-%d", c), nodes: traysPerClique, cpu: "144", memory: "960Gi",
			labels: gpuLabels("NVIDIA-GB200", 189471, 10, 0, gpusPerTray, "blackwell", "GB200-NVL72",
				cliqueLabel, fmt.Sprintf("%s.%d", cliqueFabric, c)),
			devices: v1.ResourceList{resourceGPU: resource.MustParse(fmt.Sprint(gpusPerTray))},
		})
	}
	return pools
}

// job is a gang (pods > 1, one PodGroup, all pods in one clique) or a single
// pod, each pod asking for gpus GPUs.
type job struct {
	name       string
	pods, gpus int
}

// gangJobs draws the --workload mix (seeded): gangs of 2, 4, 8 or 16 pods of
// a whole tray each, and single pods of 1, 2 or 4 GPUs, in random order,
// until the GPUs asked for reach 110% of the fleet's.
func gangJobs(seed int64) []job {
	rng := rand.New(rand.NewSource(seed))
	capacity := cliques * traysPerClique * gpusPerTray
	var jobs []job
	for asked := 0; asked*10 < capacity*11; {
		var j job
		if rng.Intn(2) == 0 {
			j = job{name: fmt.Sprintf("single-%03d", len(jobs)), pods: 1, gpus: []int{1, 2, 4}[rng.Intn(3)]}
		} else {
			j = job{name: fmt.Sprintf("gang-%03d", len(jobs)), pods: []int{2, 4, 8, 16}[rng.Intn(4)], gpus: gpusPerTray}
		}
		jobs = append(jobs, j)
		asked += j.pods * j.gpus
	}
	return jobs
}

// submitJobs creates, for each gang, a Workload with one gang template
// (minCount = its pods, topology key the clique), its PodGroup and its
// pods; single pods are created alone.
func submitJobs(ctx context.Context, cs kubernetes.Interface, jobs []job) (int, error) {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	pods := 0
	for _, j := range jobs {
		var group string
		if j.pods > 1 {
			policy := schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(j.pods)}}
			constraints := &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: cliqueLabel}}}
			wl := &schedulingv1beta1.Workload{
				ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: namespace},
				Spec: schedulingv1beta1.WorkloadSpec{PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
					Name: "workers", SchedulingPolicy: policy, SchedulingConstraints: constraints,
				}}},
			}
			if _, err := cs.SchedulingV1beta1().Workloads(namespace).Create(ctx, wl, metav1.CreateOptions{}); err != nil {
				return pods, fmt.Errorf("creating Workload %s: %w", j.name, err)
			}
			group = j.name + "-workers"
			pg := &schedulingv1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Name: group, Namespace: namespace},
				Spec: schedulingv1beta1.PodGroupSpec{
					WorkloadRef:           &schedulingv1beta1.WorkloadReference{WorkloadName: j.name, TemplateName: "workers"},
					SchedulingPolicy:      policy,
					SchedulingConstraints: constraints,
				},
			}
			if _, err := cs.SchedulingV1beta1().PodGroups(namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
				return pods, fmt.Errorf("creating PodGroup %s: %w", group, err)
			}
		}
		for i := range j.pods {
			req := v1.ResourceList{
				resourceGPU:       resource.MustParse(fmt.Sprint(j.gpus)),
				v1.ResourceCPU:    resource.MustParse(fmt.Sprint(8 * j.gpus)),
				v1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 32*j.gpus)),
			}
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%02d", j.name, i), Namespace: namespace, Labels: map[string]string{jobLabel: j.name}},
				Spec: v1.PodSpec{
					SchedulerName: schedulerName,
					Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
						Resources: v1.ResourceRequirements{Requests: req, Limits: v1.ResourceList{resourceGPU: req[resourceGPU]}}}},
				},
			}
			if group != "" {
				pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
			}
			if _, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return pods, fmt.Errorf("creating pod %s: %w", pod.Name, err)
			}
			pods++
		}
	}
	return pods, nil
}

// cliqueRow is one clique at the end of the run.
type cliqueRow struct {
	name                 string
	gpus, allocated      int64
	freeTrays, usedTrays int
	groups               map[string]bool
}

// gangReport prints, per clique, the GPUs allocated and the trays left
// whole, and per job size the jobs placed; it returns what contradicts the
// gang rules (a gang split between cliques or bound in part, a node
// overcommitted).
func gangReport(out io.Writer, nodes []v1.Node, pods []v1.Pod, jobs []job) []string {
	var problems []string
	cliqueOf := map[string]string{}
	rows := map[string]*cliqueRow{}
	for _, n := range nodes {
		c := n.Labels[cliqueLabel]
		cliqueOf[n.Name] = c
		r := rows[c]
		if r == nil {
			r = &cliqueRow{name: c, groups: map[string]bool{}}
			rows[c] = r
		}
		q := n.Status.Allocatable[resourceGPU]
		r.gpus += q.Value()
	}
	usedOn := map[string]int64{}
	boundOf := map[string][]string{} // job → cliques of its bound pods
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		q := p.Spec.Containers[0].Resources.Requests[resourceGPU]
		usedOn[p.Spec.NodeName] += q.Value()
		j := p.Labels[jobLabel]
		boundOf[j] = append(boundOf[j], cliqueOf[p.Spec.NodeName])
	}
	for _, n := range nodes {
		r := rows[cliqueOf[n.Name]]
		used := usedOn[n.Name]
		r.allocated += used
		q := n.Status.Allocatable[resourceGPU]
		switch {
		case used > q.Value():
			problems = append(problems, fmt.Sprintf("node %s: %d GPUs bound, %d allocatable", n.Name, used, q.Value()))
		case used == 0:
			r.freeTrays++
		default:
			r.usedTrays++
		}
	}
	type sizeRow struct{ jobs, placed int }
	bySize := map[string]*sizeRow{}
	for _, j := range jobs {
		key := fmt.Sprintf("gang %2d x %d GPUs", j.pods, j.gpus)
		if j.pods == 1 {
			key = fmt.Sprintf("single  %d GPU(s)", j.gpus)
		}
		s := bySize[key]
		if s == nil {
			s = &sizeRow{}
			bySize[key] = s
		}
		s.jobs++
		bound := boundOf[j.name]
		switch {
		case len(bound) == 0:
		case len(bound) != j.pods:
			problems = append(problems, fmt.Sprintf("%s: %d of its %d pods bound (gangs bind all or nothing)", j.name, len(bound), j.pods))
		default:
			s.placed++
			for _, c := range bound[1:] {
				if c != bound[0] {
					problems = append(problems, fmt.Sprintf("%s: pods in cliques %v (one clique asked)", j.name, bound))
					break
				}
			}
			if j.pods > 1 {
				rows[bound[0]].groups[j.name] = true
			}
		}
	}

	names := make([]string, 0, len(rows))
	for c := range rows {
		names = append(names, c)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "\nNVLink cliques (%s): GPUs allocated, trays free / in use, gangs placed\n", cliqueLabel)
	var whole int
	var allocated, total int64
	for _, c := range names {
		r := rows[c]
		if r.usedTrays == 0 {
			whole++
		}
		allocated += r.allocated
		total += r.gpus
		fmt.Fprintf(out, "  %-44s %4d/%-4d GPUs  trays free %2d  in use %2d  gangs %d\n", r.name, r.allocated, r.gpus, r.freeTrays, r.usedTrays, len(r.groups))
	}
	fmt.Fprintf(out, "  %-44s %4d/%-4d GPUs (%.1f%%), %d whole clique(s) left\n", "all", allocated, total, 100*float64(allocated)/float64(max(total, 1)), whole)
	keys := make([]string, 0, len(bySize))
	for k := range bySize {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(out, "\nJobs placed (a gang only if all its pods are bound in one clique):")
	for _, k := range keys {
		fmt.Fprintf(out, "  %-20s %3d of %3d\n", k, bySize[k].placed, bySize[k].jobs)
	}
	return problems
}

// runWorkload is localup --workload: the control plane and the scheduler
// with the Workload API and topology-aware placement on, the clique fleet,
// the seeded mix of gangs and single pods, the report per clique.
func runWorkload(ctx context.Context, o Options, dir string, procs *[]*controlplane.Process) error {
	binDir, config, err := o.absPaths()
	if err != nil {
		return err
	}
	t := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: binDir, Dir: dir, UserAgent: "devicefit-localup", Grace: o.Grace,
		APIServerArgs: []string{workloadGates, workloadAPI}})
	if err != nil {
		return err
	}
	*procs = append(*procs, cp.Processes()...)
	fmt.Printf("Control plane ready in %.1fs: etcd, kube-apiserver at %s (%s %s)\n", time.Since(t).Seconds(), cp.URL, workloadGates, workloadAPI)

	t = time.Now()
	sched, _, err := startScheduler(ctx, binDir, dir, config, cp, workloadGates)
	if err != nil {
		return err
	}
	*procs = append(*procs, sched.Process)
	nodes, err := registerFleet(ctx, cp.Client, cliqueFleet())
	if err != nil {
		return err
	}
	if err := sched.WaitReady(ctx, 90*time.Second); err != nil {
		return err
	}
	fmt.Printf("devicefit-scheduler ready in %.1fs (%s); %d nodes registered: %d NVLink cliques of %d trays x %d GPUs\n",
		time.Since(t).Seconds(), workloadGates, nodes, cliques, traysPerClique, gpusPerTray)

	jobs := gangJobs(o.Seed)
	n, err := submitJobs(ctx, cp.Client, jobs)
	if err != nil {
		return err
	}
	fmt.Printf("Submitted %d jobs, %d pods (seed %d): gangs of 2-16 whole trays in one clique (Workload + PodGroup, topology key %s) and single pods of 1-4 GPUs:\n",
		len(jobs), n, o.Seed, cliqueLabel)
	settled, err := waitSettled(ctx, os.Stdout, cp.Client, n, o.Timeout, sched.Process)
	if err != nil {
		return err
	}
	nodeList, err := cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	if problems := gangReport(os.Stdout, nodeList.Items, settled, jobs); len(problems) > 0 {
		return fmt.Errorf("the placement breaks the gang rules:\n  %s", strings.Join(problems, "\n  "))
	}
	fmt.Println("\nChecks passed: every gang is bound whole in one clique or not at all; no node has more GPUs bound than allocatable.")
	if o.Keep {
		fmt.Printf("\nThe cluster stays up until Ctrl-C:\n  export KUBECONFIG=%s\n  %s get pods,podgroups -n %s -o wide\n",
			cp.AdminKubeconfig, filepath.Join(o.BinDir, "kubectl"), namespace)
		select {
		case <-ctx.Done():
		case <-firstExit(*procs):
			return firstExitError(*procs)
		}
	}
	return nil
}

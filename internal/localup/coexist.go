package localup

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/devicefit/devicefit/internal/clustercheck"
	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/routing"
)

// The local run is a cluster with two schedulers, as every cluster devicefit
// joins (docs/coexistence.md): the upstream kube-scheduler with its default
// profile places the pods that name no scheduler, and the routing policy
// sends those that ask for a device to devicefit.

// routedEvery: every routedEvery-th device pod is created without
// schedulerName, as a user who forgot it would; the routing policy must give
// it devicefit's.
const routedEvery = 3

// podScheduler is the schedulerName a workload pod is created with: none
// for CPU pods (the default scheduler's) and, when the routing policy is
// installed (routed), for every routedEvery-th device pod; devicefit's for
// the others. Without the policy (a control plane older than
// MutatingAdmissionPolicy v1) a device pod must name devicefit.
func podScheduler(c class, i int, routed bool) string {
	switch {
	case len(c.devices) == 0 && c.claim == nil:
		return ""
	case routed && i%routedEvery == routedEvery-1:
		return ""
	}
	return schedulerName
}

// startDefaultScheduler is controlplane.StartDefaultScheduler, told to
// emulate minor when the control plane is older than bin/kube-scheduler
// (emulate, support.Emulation): the skew policy forbids a scheduler newer
// than the API server, and at its own minor it would list APIs the server
// does not serve and never become ready.
func startDefaultScheduler(binDir, dir, kubeconfig string, emulate *version.Version) (*controlplane.Scheduler, error) {
	if emulate == nil {
		return controlplane.StartDefaultScheduler(binDir, dir, kubeconfig)
	}
	return controlplane.StartDefaultScheduler(binDir, dir, kubeconfig, "--emulated-version="+minorString(emulate))
}

// installRouting creates the routing policy for the configuration's
// DeviceFit args (kubectl devicefit routing-policy's) and waits until the
// API server applies it.
func installRouting(ctx context.Context, cs kubernetes.Interface, config string) error {
	profile, err := cli.LoadProfile(ctx, nil, config, "", schedulerName)
	if err != nil {
		return err
	}
	policy, binding, err := routing.Policy(routing.Options{SchedulerName: schedulerName, Resources: profile.Fit.DeviceResources})
	if err != nil {
		return err
	}
	adm := cs.AdmissionregistrationV1()
	if _, err := adm.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the routing policy: %w", err)
	}
	if _, err := adm.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the routing policy's binding: %w", err)
	}
	// The API server loads policies from an informer: probe with a dry-run
	// GPU pod until it comes back routed.
	probe := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "routing-probe", Namespace: metav1.NamespaceDefault},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10.1", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
		}}}},
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && p.Spec.SchedulerName == schedulerName, nil
	})
}

// printSchedulers writes which scheduler placed how many pods, and returns
// the problems: a device pod not named for devicefit, or bound by another
// scheduler; a CPU pod routed.
func printSchedulers(out io.Writer, pods []v1.Pod, by map[string]string, routedNames map[string]bool) []string {
	type count struct{ device, cpu, routed int }
	counts := map[string]*count{}
	var problems []string
	for i := range pods {
		p := &pods[i]
		device := isDevicePod(p)
		switch {
		case device && p.Spec.SchedulerName != schedulerName:
			problems = append(problems, fmt.Sprintf("device pod %s has schedulerName %q: the routing policy did not route it", p.Name, p.Spec.SchedulerName))
		case !device && p.Spec.SchedulerName != v1.DefaultSchedulerName:
			problems = append(problems, fmt.Sprintf("CPU pod %s has schedulerName %q, want %s", p.Name, p.Spec.SchedulerName, v1.DefaultSchedulerName))
		}
		if p.Spec.NodeName == "" {
			continue
		}
		who := by[p.Name]
		if who == "" {
			who = "(no Scheduled event)"
		}
		if device && who != schedulerName {
			problems = append(problems, fmt.Sprintf("device pod %s was bound to %s by %s, not %s", p.Name, p.Spec.NodeName, who, schedulerName))
		}
		c := counts[who]
		if c == nil {
			c = &count{}
			counts[who] = c
		}
		if device {
			c.device++
			if routedNames[p.Name] {
				c.routed++
			}
		} else {
			c.cpu++
		}
	}
	fmt.Fprintln(out, "\nPlaced by (the Scheduled event's reporting controller):")
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		c := counts[n]
		routed := ""
		if len(routedNames) > 0 {
			routed = fmt.Sprintf(" (%d of them created without schedulerName, routed by %s)", c.routed, routing.Name)
		}
		fmt.Fprintf(out, "  %-20s %3d device pods%s, %d CPU pods\n", n, c.device, routed, c.cpu)
	}
	return problems
}

// isDevicePod: the pod asks for one of DeviceFit's default device
// resources or has resource claims (devices.AsksForDevices).
func isDevicePod(p *v1.Pod) bool { return devices.AsksForDevices(p, defaultDevices) }

// defaultDevices are DeviceFit's default device resources, which the local
// run's configuration keeps (valid: TestDefaultResourcePatterns).
var defaultDevices, _ = devices.NewResourceSet(devices.DefaultResourcePatterns())

// checkOvercommit: no node's allocatable is over-committed by the pods the
// two schedulers bound (clustercheck.Overcommitted), one line per resource.
func checkOvercommit(nodes []v1.Node, pods []v1.Pod, s *draState) []string {
	over := clustercheck.Overcommitted(nodes, pods, s.DRA)
	var problems []string
	for _, res := range slices.Sorted(maps.Keys(over)) {
		problems = append(problems, fmt.Sprintf("%s over-committed on %s", res, strings.Join(over[res], ", ")))
	}
	return problems
}

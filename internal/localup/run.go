// Package localup is the local run of devicefit (cmd/localup, make run):
// etcd, kube-apiserver and kube-controller-manager on 127.0.0.1, the real
// devicefit-scheduler binary with the configuration from manifests/ and the
// upstream kube-scheduler beside it, a simulated GPU fleet (nodes with GPU
// Feature Discovery labels and device capacity, DRA ResourceSlices; no
// kubelet), a demo workload, and a report of where every pod went, who
// placed it and why the others could not go anywhere, checked independently
// (internal/clustercheck).
//
// Files: run.go (the run), kubeversion.go (the control plane's minor,
// --kube-version), features.go (the device features it serves, which decide
// the fixtures and pods), fleet.go, dra.go, workload.go and gangs.go (the
// fixtures), coexist.go (the second scheduler and the routing policy),
// report.go, shares.go, metrics.go, progress.go and day2.go (the report and
// its checks), scheduler.go (the scheduler process).
package localup

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/internal/clustercheck"
	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/pkg/routing"
)

// Options are the local run's command-line settings.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kubectl and devicefit-scheduler.
	BinDir string
	// Config is the KubeSchedulerConfiguration devicefit runs with.
	Config string
	// Keep leaves the cluster running after the report until ctx ends.
	Keep bool
	// Timeout bounds how long the workload may take to settle.
	Timeout time.Duration
	// Seed draws the workload's pod sizes and submission order.
	Seed int64
	// Grace is how long each process may take to exit after SIGTERM.
	Grace time.Duration
	// Workload: pod groups in NVLink domains instead of the device mix.
	Workload bool
	// KubeVersion is the control plane's Kubernetes minor, e.g. "1.35"
	// (kubeversion.go): NewestKubeVersion's ("" too) from BinDir, an older
	// one's from BinDir/kube-<minor>.
	KubeVersion string
}

// Run runs the local cluster in dir and reports on it. Every process it
// starts is appended to procs, for the caller to stop (also on error).
func Run(ctx context.Context, o Options, dir string, procs *[]*controlplane.Process) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Workload {
		return runWorkload(ctx, o, dir, procs)
	}
	return runLocal(ctx, o, dir, procs)
}

// absPaths returns --bin-dir and --config as absolute paths, which the
// processes and files localup hands them to need.
func (o Options) absPaths() (binDir, config string, err error) {
	if binDir, err = filepath.Abs(o.BinDir); err != nil {
		return "", "", err
	}
	config, err = filepath.Abs(o.Config)
	return binDir, config, err
}

func runLocal(ctx context.Context, o Options, dir string, procs *[]*controlplane.Process) error {
	binDir, config, err := o.absPaths()
	if err != nil {
		return err
	}
	version, err := exec.CommandContext(ctx, filepath.Join(binDir, "devicefit-scheduler"), "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w (run `make build` first)", filepath.Join(binDir, "devicefit-scheduler"), err)
	}
	cpBinDir, minor, err := o.controlPlaneBinDir(binDir)
	if err != nil {
		return err
	}
	fmt.Printf("devicefit local run: %s in %s\n", strings.TrimSpace(string(version)), dir)

	t := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: cpBinDir, Dir: dir, UserAgent: "devicefit-localup", Grace: o.Grace})
	if err != nil {
		return err
	}
	*procs = append(*procs, cp.Processes()...)
	cluster, emulate, features, err := controlPlaneFeatures(cp.Client.Discovery())
	if err != nil {
		return err
	}
	if err := checkServerMinor(cluster, minor, cpBinDir); err != nil {
		return err
	}
	feats, off, err := servedOf(features)
	if err != nil {
		return err
	}
	// DRA needs controllers: the resourceclaim controller turns the pods'
	// ResourceClaimTemplates into claims and releases the claims of pods
	// that are gone; the garbage collector deletes the scheduler's own
	// claims for DRA-backed extended resources with their pods.
	if err := cp.StartControllerManager(ctx, "resourceclaim-controller", "garbage-collector-controller"); err != nil {
		return err
	}
	*procs = append(*procs, cp.ControllerManager)
	shownBinDir := o.BinDir
	if cpBinDir != binDir {
		shownBinDir = filepath.Join(o.BinDir, filepath.Base(cpBinDir))
	}
	fmt.Printf("Control plane: Kubernetes %s (%s) ready in %.1fs: etcd, kube-apiserver at %s, kube-controller-manager (resourceclaim, garbage-collector)\n",
		cluster.GitVersion, shownBinDir, time.Since(t).Seconds(), cp.URL)
	printFeaturesOff(os.Stdout, cluster, off)

	t = time.Now()
	sched, le, err := startScheduler(ctx, binDir, dir, config, cp)
	if err != nil {
		return err
	}
	*procs = append(*procs, sched.Process)
	// Register the fleet while the scheduler boots; it picks the nodes up
	// through its informers either way.
	pools := fleet()
	nodes, err := registerFleet(ctx, cp.Client, pools)
	if err != nil {
		return err
	}
	draNodes, err := registerDRA(ctx, cp.Client, feats)
	if err != nil {
		return err
	}
	nodes += draNodes
	if err := sched.WaitReady(ctx, 90*time.Second); err != nil {
		return err
	}
	fmt.Printf("devicefit-scheduler ready in %.1fs (config %s, lease %s/%s); %d nodes registered\n",
		time.Since(t).Seconds(), o.Config, le.ResourceNamespace, le.ResourceName, nodes)

	// The upstream scheduler beside it, and the routing policy that sends
	// it no device pod (docs/coexistence.md) where the control plane
	// serves one.
	t = time.Now()
	upstream, err := startDefaultScheduler(binDir, dir, cp.SchedulerKubeconfig, emulate)
	if err != nil {
		return err
	}
	*procs = append(*procs, upstream.Process)
	if err := upstream.WaitReady(ctx, 90*time.Second); err != nil {
		return controlplane.Blame(upstream.Process, err)
	}
	emulating := ""
	if emulate != nil {
		emulating = ", --emulated-version=" + minorString(emulate)
	}
	if feats.has(featureRouting) {
		if err := installRouting(ctx, cp.Client, config); err != nil {
			return err
		}
		fmt.Printf("kube-scheduler (upstream, default profile%s) ready and the routing policy %s applied in %.1fs\n",
			emulating, routing.Name, time.Since(t).Seconds())
	} else {
		fmt.Printf("kube-scheduler (upstream, default profile%s) ready in %.1fs; no routing policy: every device pod names %s\n",
			emulating, time.Since(t).Seconds(), schedulerName)
	}

	classes := workload(feats)
	pods := buildPods(classes, o.Seed, feats.has(featureRouting))
	if err := submit(ctx, cp.Client, classes, pods); err != nil {
		return err
	}
	routed := map[string]bool{}
	var cpuPods int
	for _, p := range pods {
		switch {
		case !isDevicePod(p):
			cpuPods++
		case p.Spec.SchedulerName == "":
			routed[p.Name] = true
		}
	}
	named := "all of them with schedulerName " + schedulerName
	if feats.has(featureRouting) {
		named = fmt.Sprintf("%d of them without schedulerName (for the routing policy)", len(routed))
	}
	fmt.Printf("Submitted %d pods (seed %d): %d device pods, %s,\n"+
		"and %d CPU pods for the default scheduler; waiting for each to be bound or unschedulable:\n",
		len(pods), o.Seed, len(pods)-cpuPods, named, cpuPods)
	settled, err := waitSettled(ctx, os.Stdout, cp.Client, len(pods), o.Timeout, sched.Process)
	if err != nil {
		return err
	}

	nodeList, err := cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	invalid := map[string]bool{}
	for _, c := range classes {
		invalid[c.name] = c.invalid
	}
	draNow, err := readDRA(ctx, cp.Client)
	if err != nil {
		return err
	}
	rows := placement(nodeList.Items, settled, draNow)
	printPlacement(os.Stdout, rows)
	printDRA(os.Stdout, draNow, settled)
	shared := sharedGPUs(draNow.Slices, draNow.Claims)
	printShares(os.Stdout, shared)
	m, metricProblems, err := awaitMetrics(ctx, sched, rows, shared)
	if err != nil {
		return controlplane.Blame(sched.Process, err)
	}
	printDevicefitMetrics(os.Stdout, m, sched.URL)
	printUnschedulable(os.Stdout, settled, invalid)
	by, err := clustercheck.PlacedBy(ctx, cp.Client, namespace)
	if err != nil {
		return err
	}
	schedulerProblems := printSchedulers(os.Stdout, settled, by, routed)
	if err := printDay2(ctx, os.Stdout, binDir, cp.AdminKubeconfig, config); err != nil {
		return err
	}

	problems := append(check(nodeList.Items, settled, classes, draNow), metricProblems...)
	problems = append(problems, schedulerProblems...)
	problems = append(problems, checkShares(shared)...)
	problems = append(problems, checkOvercommit(nodeList.Items, settled, draNow)...)
	if problems = append(problems, checkDRA(draNow, settled, classes)...); len(problems) > 0 {
		return fmt.Errorf("the local run's checks failed:\n  %s", strings.Join(problems, "\n  "))
	}
	fmt.Println("\n" + checksPassed(feats))

	if o.Keep {
		fmt.Printf("\nThe cluster stays up until Ctrl-C:\n  export KUBECONFIG=%s\n  %s get pods -n %s -o wide\n",
			cp.AdminKubeconfig, filepath.Join(o.BinDir, "kubectl"), namespace)
		for _, p := range *procs {
			fmt.Printf("  %-20s log %s\n", p.Name, p.LogPath)
		}
		select {
		case <-ctx.Done():
		case <-firstExit(*procs):
			return firstExitError(*procs)
		}
	}
	return nil
}

// checksPassed is what the checks of a run on a control plane serving s
// established: the checks are the same on every minor, but a check of
// fixtures that were left out (shared counters, shared GPUs) proved nothing
// and is not claimed.
func checksPassed(s served) string {
	placed := "every device pod was placed by devicefit, routed or named,"
	if !s.has(featureRouting) {
		placed = "every device pod was placed by devicefit, which each names (no routing policy here),"
	}
	var draChecks []string
	if s.has(featureDRA) {
		draChecks = append(draChecks, "no DRA device is in two claims")
	}
	if s.has(featurePartitionable) {
		draChecks = append(draChecks, "no shared counter is over its value")
	}
	if s.has(featureConsumable) {
		draChecks = append(draChecks, "no shared GPU gives more than its shares")
	}
	lines := []string{
		"Checks passed: " + placed + " and every CPU pod by the default scheduler;",
		"every bound pod is on a product its selector admits (on DRA nodes: every device its claims hold);",
		"every invalid pod is unschedulable; no node is over-committed on any resource (two schedulers bind here);",
	}
	if len(draChecks) > 0 {
		lines = append(lines, strings.Join(draChecks, ", ")+";")
	}
	metrics := "the scheduler's devicefit_devices count as allocated exactly the devices the bound pods hold"
	if s.has(featureConsumable) {
		lines = append(lines, metrics+",", "and its devicefit_device_shares as used exactly the shares the claims consume.")
	} else {
		lines = append(lines, metrics+".")
	}
	return strings.Join(lines, "\n")
}

// awaitMetrics scrapes the scheduler's /metrics until its device gauges
// agree with the pods bound according to the API server, and its share
// gauges with the shares the claims consume: the gauges are
// computed from the scheduler's informer cache, which sees the last bindings
// a moment after the API server. Disagreement after 10 seconds is a problem.
func awaitMetrics(ctx context.Context, s *controlplane.Scheduler, rows []*productRow, shared []sharedGPU) (*devicefitMetrics, []string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := scrapeDevicefitMetrics(ctx, s)
		if err != nil {
			return nil, nil, err
		}
		problems := append(m.checkAgainst(rows), m.checkShareMetrics(shared)...)
		if len(problems) == 0 || time.Now().After(deadline) {
			return m, problems, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// firstExit is closed when any of procs exits.
func firstExit(procs []*controlplane.Process) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	for _, p := range procs {
		go func(p *controlplane.Process) {
			<-p.Done()
			once.Do(func() { close(ch) })
		}(p)
	}
	return ch
}

func firstExitError(procs []*controlplane.Process) error {
	for _, p := range procs {
		if err := p.Exited(); err != nil {
			return err
		}
	}
	return nil
}

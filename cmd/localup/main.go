// Command localup is the local run of devicefit: it starts etcd and
// kube-apiserver on 127.0.0.1, starts the real devicefit-scheduler binary with
// the configuration from manifests/, registers a simulated GPU fleet (nodes
// with GPU Feature Discovery labels and device capacity; no kubelet), submits
// a demo workload, reports where every pod went and why the others could not
// go anywhere, and stops everything again.
//
// Everything it starts listens on 127.0.0.1 only and lives in one temporary
// directory, removed at the end unless the run failed (then the logs are kept
// for inspection).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/devicefit/devicefit/internal/cmdflags"
	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/pkg/routing"
)

type options struct {
	binDir  string
	config  string
	keep    bool
	timeout time.Duration
	seed    int64
	grace   time.Duration
	// workload: pod groups in NVLink domains instead of the device mix.
	workload bool
}

func main() {
	// The children are started with Pdeathsig, which the kernel ties to the
	// thread that forked them, not to the process. Keeping the main goroutine
	// (which starts every child) on the main thread means that signal fires
	// only when localup itself dies.
	runtime.LockOSThread()
	os.Exit(run())
}

func run() int {
	o, code, exit := parseFlags(os.Args[1:], os.Stdout, os.Stderr)
	if exit {
		return code
	}
	defer klog.Flush()

	// The first Ctrl-C cancels ctx and starts an orderly shutdown; the
	// handler stays installed, so further Ctrl-Cs do not cut the cleanup
	// short and leave processes behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "devicefit-localup-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "localup:", err)
		return 1
	}
	var procs []*controlplane.Process
	start := time.Now()
	if o.workload {
		err = runWorkload(ctx, o, dir, &procs)
	} else {
		err = runLocal(ctx, o, dir, &procs)
	}

	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Stop(o.grace)
	}
	switch {
	case err == nil:
		os.RemoveAll(dir)
		fmt.Printf("\nDone in %.1fs; every process stopped, %s removed.\n", time.Since(start).Seconds(), dir)
		return 0
	case ctx.Err() != nil:
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "\nlocalup: interrupted; every process stopped.")
		return 130
	default:
		reportFailure(err, dir)
		return 1
	}
}

// newFlags is localup's command line: its own flags into o, then klog's.
func newFlags(o *options) *cmdflags.Command {
	cmd := cmdflags.New("localup", "localup [flags]")
	fs := cmd.Flags()
	fs.StringVar(&o.binDir, "bin-dir", "bin", "directory holding etcd, kube-apiserver and devicefit-scheduler (make build tools)")
	fs.StringVar(&o.config, "config", "manifests/scheduler-config.yaml", "KubeSchedulerConfiguration to run the scheduler with")
	fs.BoolVar(&o.keep, "keep", false, "leave the cluster running after the report and print its kubeconfig; Ctrl-C stops it")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long the workload may take to settle")
	fs.Int64Var(&o.seed, "seed", 42, "seed of the workload's pod sizes and submission order")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "how long each process may take to exit after SIGTERM before it is killed")
	fs.BoolVar(&o.workload, "workload", false, "pod groups in NVLink domains instead of the device mix (docs/gangs.md): GenericWorkload and TopologyAwareWorkloadScheduling on, 4 cliques of 18 GB200 trays, gangs of 2-16 trays and single pods")
	return cmd
}

// parseFlags returns the options of args, or exit with the code to exit with
// (after --help, --version or a bad flag).
func parseFlags(args []string, stdout, stderr io.Writer) (o options, code int, exit bool) {
	rest, code, exit := newFlags(&o).Parse(args, stdout, stderr)
	if !exit && len(rest) > 0 {
		fmt.Fprintf(stderr, "localup: unexpected arguments %q\n", rest)
		return o, 2, true
	}
	return o, code, exit
}

// reportFailure prints the error, where each log is, and the end of the log
// of the process the failure is attributed to.
// The logs are listed from dir rather than from procs: a control plane that
// failed to start has stopped its processes already, and they are not in
// procs.
func reportFailure(err error, dir string) {
	fmt.Fprintf(os.Stderr, "\nlocalup: FAILED: %v\n", err)
	fmt.Fprintf(os.Stderr, "Logs (kept, with the rest of the run, in %s):\n", dir)
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		fmt.Fprintf(os.Stderr, "  %-20s %s\n", strings.TrimSuffix(filepath.Base(l), ".log"), l)
	}
	var pe *controlplane.ProcessError
	if errors.As(err, &pe) {
		fmt.Fprintf(os.Stderr, "\nLast lines of %s:\n%s\n", pe.Process.LogPath, controlplane.Tail(pe.Process.LogPath, 40))
	}
}

// absPaths returns --bin-dir and --config as absolute paths, which the
// processes and files localup hands them to need.
func (o options) absPaths() (binDir, config string, err error) {
	if binDir, err = filepath.Abs(o.binDir); err != nil {
		return "", "", err
	}
	config, err = filepath.Abs(o.config)
	return binDir, config, err
}

func runLocal(ctx context.Context, o options, dir string, procs *[]*controlplane.Process) error {
	binDir, config, err := o.absPaths()
	if err != nil {
		return err
	}
	version, err := exec.CommandContext(ctx, filepath.Join(binDir, "devicefit-scheduler"), "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w (run `make build` first)", filepath.Join(binDir, "devicefit-scheduler"), err)
	}
	fmt.Printf("devicefit local run: %s in %s\n", strings.TrimSpace(string(version)), dir)

	t := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: binDir, Dir: dir, UserAgent: "devicefit-localup", Grace: o.grace})
	if err != nil {
		return err
	}
	*procs = append(*procs, cp.Processes()...)
	// DRA needs controllers: the resourceclaim controller turns the pods'
	// ResourceClaimTemplates into claims and releases the claims of pods
	// that are gone; the garbage collector deletes the scheduler's own
	// claims for DRA-backed extended resources with their pods.
	if err := cp.StartControllerManager(ctx, "resourceclaim-controller", "garbage-collector-controller"); err != nil {
		return err
	}
	*procs = append(*procs, cp.ControllerManager)
	fmt.Printf("Control plane ready in %.1fs: etcd, kube-apiserver at %s, kube-controller-manager (resourceclaim, garbage-collector)\n",
		time.Since(t).Seconds(), cp.URL)

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
	draNodes, err := registerDRA(ctx, cp.Client)
	if err != nil {
		return err
	}
	nodes += draNodes
	if err := sched.WaitReady(ctx, 90*time.Second); err != nil {
		return err
	}
	fmt.Printf("devicefit-scheduler ready in %.1fs (config %s, lease %s/%s); %d nodes registered\n",
		time.Since(t).Seconds(), o.config, le.ResourceNamespace, le.ResourceName, nodes)

	// The upstream scheduler beside it, and the routing policy that sends
	// it no device pod (docs/coexistence.md).
	t = time.Now()
	upstream, err := controlplane.StartDefaultScheduler(binDir, dir, cp.SchedulerKubeconfig)
	if err != nil {
		return err
	}
	*procs = append(*procs, upstream.Process)
	if err := upstream.WaitReady(ctx, 90*time.Second); err != nil {
		return controlplane.Blame(upstream.Process, err)
	}
	if err := installRouting(ctx, cp.Client, config); err != nil {
		return err
	}
	fmt.Printf("kube-scheduler (upstream, default profile) ready and the routing policy %s applied in %.1fs\n",
		routing.Name, time.Since(t).Seconds())

	classes := workload()
	pods := buildPods(classes, o.seed)
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
	fmt.Printf("Submitted %d pods (seed %d): %d device pods, %d of them without schedulerName (for the routing policy),\n"+
		"and %d CPU pods for the default scheduler; waiting for each to be bound or unschedulable:\n",
		len(pods), o.seed, len(pods)-cpuPods, len(routed), cpuPods)
	settled, err := waitSettled(ctx, os.Stdout, cp.Client, len(pods), o.timeout, sched.Process)
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
	shared := sharedGPUs(draNow.slices, draNow.claims)
	printShares(os.Stdout, shared)
	m, metricProblems, err := awaitMetrics(ctx, sched, rows, shared)
	if err != nil {
		return controlplane.Blame(sched.Process, err)
	}
	printDevicefitMetrics(os.Stdout, m, sched.URL)
	printUnschedulable(os.Stdout, settled, invalid)
	by, err := placedBy(ctx, cp.Client)
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
	if problems = append(problems, checkDRA(draNow, settled, classes)...); len(problems) > 0 {
		return fmt.Errorf("the local run's checks failed:\n  %s", strings.Join(problems, "\n  "))
	}
	fmt.Println("\nChecks passed: every device pod was placed by devicefit, routed or named, and every CPU pod by the default scheduler;\n" +
		"every bound pod is on a product its selector admits (on DRA nodes: every device its claims hold);\n" +
		"every invalid pod is unschedulable; no DRA device is in two claims, no shared counter is over its value\n" +
		"and no shared GPU gives more than its shares;\n" +
		"the scheduler's devicefit_devices count as allocated exactly the devices the bound pods hold,\n" +
		"and its devicefit_device_shares as used exactly the shares the claims consume.")

	if o.keep {
		fmt.Printf("\nThe cluster stays up until Ctrl-C:\n  export KUBECONFIG=%s\n  %s get pods -n %s -o wide\n",
			cp.AdminKubeconfig, filepath.Join(o.binDir, "kubectl"), namespace)
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

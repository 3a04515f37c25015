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
	"flag"
	"fmt"
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
)

type options struct {
	binDir  string
	config  string
	keep    bool
	timeout time.Duration
	seed    int64
	grace   time.Duration
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
	klog.InitFlags(nil)
	var o options
	flag.StringVar(&o.binDir, "bin-dir", "bin", "directory holding etcd, kube-apiserver and devicefit-scheduler (make build tools)")
	flag.StringVar(&o.config, "config", "manifests/scheduler-config.yaml", "KubeSchedulerConfiguration to run the scheduler with")
	flag.BoolVar(&o.keep, "keep", false, "leave the cluster running after the report and print its kubeconfig; Ctrl-C stops it")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long the workload may take to settle")
	flag.Int64Var(&o.seed, "seed", 42, "seed of the workload's pod sizes and submission order")
	flag.DurationVar(&o.grace, "grace", 10*time.Second, "how long each process may take to exit after SIGTERM before it is killed")
	flag.Parse()
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
	var procs []*process
	start := time.Now()
	err = runLocal(ctx, o, dir, &procs)

	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(o.grace)
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
		reportFailure(err, procs, dir)
		return 1
	}
}

// reportFailure prints the error, where each log is, and the end of the log
// of the process the failure is attributed to.
func reportFailure(err error, procs []*process, dir string) {
	fmt.Fprintf(os.Stderr, "\nlocalup: FAILED: %v\n", err)
	fmt.Fprintf(os.Stderr, "Logs (kept, with the rest of the run, in %s):\n", dir)
	for _, p := range procs {
		fmt.Fprintf(os.Stderr, "  %-20s %s\n", p.name, p.logPath)
	}
	var pe *processError
	if errors.As(err, &pe) {
		fmt.Fprintf(os.Stderr, "\nLast lines of %s:\n%s\n", pe.p.logPath, tail(pe.p.logPath, 40))
	}
}

func runLocal(ctx context.Context, o options, dir string, procs *[]*process) error {
	binDir, err := filepath.Abs(o.binDir)
	if err != nil {
		return err
	}
	config, err := filepath.Abs(o.config)
	if err != nil {
		return err
	}
	version, err := exec.CommandContext(ctx, filepath.Join(binDir, "devicefit-scheduler"), "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w (run `make build` first)", filepath.Join(binDir, "devicefit-scheduler"), err)
	}
	fmt.Printf("devicefit local run: %s in %s\n", strings.TrimSpace(string(version)), dir)

	t := time.Now()
	cp, err := startControlPlane(ctx, binDir, dir, procs)
	if err != nil {
		return err
	}
	fmt.Printf("Control plane ready in %.1fs: etcd and kube-apiserver at %s\n", time.Since(t).Seconds(), cp.apiURL)

	t = time.Now()
	rendered, le, err := renderSchedulerConfig(config, dir, cp.schedKube)
	if err != nil {
		return err
	}
	if err := grantLeaderElection(ctx, cp, le); err != nil {
		return err
	}
	sched, err := startScheduler(binDir, dir, rendered, cp, procs)
	if err != nil {
		return err
	}
	// Register the fleet while the scheduler boots; it picks the nodes up
	// through its informers either way.
	pools := fleet()
	nodes, err := registerFleet(ctx, cp.client, pools)
	if err != nil {
		return err
	}
	if err := sched.waitReady(ctx); err != nil {
		return err
	}
	fmt.Printf("devicefit-scheduler ready in %.1fs (config %s, lease %s/%s); %d nodes registered\n",
		time.Since(t).Seconds(), o.config, le.resourceNamespace, le.resourceName, nodes)

	classes := workload()
	pods := buildPods(classes, o.seed)
	if err := submit(ctx, cp.client, pods); err != nil {
		return err
	}
	fmt.Printf("Submitted %d pods (schedulerName %s, seed %d); waiting for each to be bound or unschedulable:\n",
		len(pods), schedulerName, o.seed)
	settled, err := waitSettled(ctx, os.Stdout, cp.client, len(pods), o.timeout, sched.proc)
	if err != nil {
		return err
	}

	nodeList, err := cp.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	invalid := map[string]bool{}
	for _, c := range classes {
		invalid[c.name] = c.invalid
	}
	printPlacement(os.Stdout, placement(nodeList.Items, settled))
	printUnschedulable(os.Stdout, settled, invalid)
	if err := printMetrics(ctx, sched); err != nil {
		return blame(sched.proc, err)
	}

	if problems := check(nodeList.Items, settled, classes); len(problems) > 0 {
		return fmt.Errorf("the placement contradicts the workload's selectors:\n  %s", strings.Join(problems, "\n  "))
	}
	fmt.Println("\nChecks passed: every bound pod is on a product its selector admits; every invalid pod is unschedulable.")

	if o.keep {
		fmt.Printf("\nThe cluster stays up until Ctrl-C:\n  export KUBECONFIG=%s\n  %s get pods -n %s -o wide\n",
			cp.adminKube, filepath.Join(o.binDir, "kubectl"), namespace)
		for _, p := range *procs {
			fmt.Printf("  %-20s log %s\n", p.name, p.logPath)
		}
		select {
		case <-ctx.Done():
		case <-firstExit(*procs):
			return firstExitError(*procs)
		}
	}
	return nil
}

// printMetrics shows the scheduler's own view of the run, read from its
// authenticated /metrics endpoint.
func printMetrics(ctx context.Context, s *scheduler) error {
	lines, err := s.metrics(ctx, "scheduler_schedule_attempts_total", "devicefit_")
	if err != nil {
		return err
	}
	fmt.Println("\nScheduler metrics (" + s.url + "/metrics):")
	for _, l := range lines {
		fmt.Println("  " + l)
	}
	return nil
}

// firstExit is closed when any of procs exits.
func firstExit(procs []*process) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	for _, p := range procs {
		go func(p *process) {
			<-p.done
			once.Do(func() { close(ch) })
		}(p)
	}
	return ch
}

func firstExitError(procs []*process) error {
	for _, p := range procs {
		if err := p.exited(); err != nil {
			return err
		}
	}
	return nil
}

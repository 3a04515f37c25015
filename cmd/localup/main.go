// Command localup is the local run of devicefit: it starts etcd and
// kube-apiserver on 127.0.0.1, starts the real devicefit-scheduler binary with
// the configuration from manifests/, registers a simulated GPU fleet (nodes
// with GPU Feature Discovery labels and device capacity; no kubelet), submits
// a demo workload, reports where every pod went and why the others could not
// go anywhere, and stops everything again. --kube-version runs an older
// supported control plane (bin/kube-<minor>/) under the same schedulers, with
// the demo cut to what that minor serves.
//
// Everything it starts listens on 127.0.0.1 only and lives in one temporary
// directory, removed at the end unless the run failed (then the logs are kept
// for inspection). This is the command line; the run is internal/localup.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/devicefit/devicefit/internal/cmdflags"
	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/localup"
	"github.com/devicefit/devicefit/pkg/support"
)

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
	err = localup.Run(ctx, o, dir, &procs)

	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Stop(o.Grace)
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
func newFlags(o *localup.Options) *cmdflags.Command {
	cmd := cmdflags.New("localup", "localup [flags]")
	fs := cmd.Flags()
	fs.StringVar(&o.BinDir, "bin-dir", "bin", "directory holding etcd, kube-apiserver and devicefit-scheduler (make build tools)")
	fs.StringVar(&o.Config, "config", "manifests/scheduler-config.yaml", "KubeSchedulerConfiguration to run the scheduler with")
	fs.BoolVar(&o.Keep, "keep", false, "leave the cluster running after the report and print its kubeconfig; Ctrl-C stops it")
	fs.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "how long the workload may take to settle")
	fs.Int64Var(&o.Seed, "seed", 42, "seed of the workload's pod sizes and submission order")
	fs.DurationVar(&o.Grace, "grace", 10*time.Second, "how long each process may take to exit after SIGTERM before it is killed")
	fs.StringVar(&o.KubeVersion, "kube-version", localup.NewestKubeVersion(), "Kubernetes minor of the control plane, "+support.RangeString()+
		": an older one runs etcd, kube-apiserver and kube-controller-manager from <bin-dir>/kube-<minor>/ (make skew-tools), "+
		"and the demo leaves out the device features that minor does not serve, saying which")
	fs.BoolVar(&o.Workload, "workload", false, "pod groups in NVLink domains instead of the device mix (docs/gangs.md): GenericWorkload and TopologyAwareWorkloadScheduling on, 4 cliques of 18 GB200 trays, gangs of 2-16 trays and single pods")
	return cmd
}

// parseFlags returns the options of args, or exit with the code to exit with
// (after --help, --version or a bad flag).
func parseFlags(args []string, stdout, stderr io.Writer) (o localup.Options, code int, exit bool) {
	rest, code, exit := newFlags(&o).Parse(args, stdout, stderr)
	if exit {
		return o, code, exit
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "localup: unexpected arguments %q\n", rest)
		return o, 2, true
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintln(stderr, "localup:", err)
		return o, 2, true
	}
	return o, 0, false
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

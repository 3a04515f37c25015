// Command devicefit-defragmenter moves opted-in pods, within a budget, so
// that pending device pods fit and, optionally, whole device nodes stay
// free. It plans with the scheduler's own profile (the code of `kubectl
// devicefit defrag`), one replica at a time under leader election.
//
//	devicefit-defragmenter --config defragmenter.yaml [--kubeconfig FILE]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/devicefit/devicefit/internal/cmdflags"
	"github.com/devicefit/devicefit/pkg/apis/defragmenter/v1alpha1"
	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/defrag"
)

// Name is the component's name: the Events' reporting controller and the
// user agent.
const Name = "devicefit-defragmenter"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cmdflags.New(Name, Name+" --config FILE [flags]")
	fs := cmd.Flags()
	configFile := fs.String("config", "", "DefragmenterConfiguration file (devicefit.io/v1alpha1; required)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server (default: in-cluster)")
	bind := fs.String("health-metrics-bind-address", ":10262", "address of /healthz and /metrics (plain HTTP; \"0\" turns them off)")
	if _, code, exit := cmd.Parse(args, stdout, stderr); exit {
		return code
	}
	if *configFile == "" {
		fmt.Fprintf(stderr, "%s: --config is required\n", Name)
		return 2
	}
	cfg, profile, err := defrag.LoadConfig(*configFile)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("defragmenter"))
	if err := serve(ctx, cfg, profile, *kubeconfig, *bind); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		return 1
	}
	return 0
}

// serve starts the health and metrics server, the informers the plans read
// and, while leading, the controller.
func serve(ctx context.Context, cfg *v1alpha1.DefragmenterConfiguration, profile *cli.Profile, kubeconfig, bind string) error {
	logger := klog.FromContext(ctx)
	rest, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rest.UserAgent = Name
	cs, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}
	if bind != "0" {
		ln, err := net.Listen("tcp", bind)
		if err != nil {
			return fmt.Errorf("--health-metrics-bind-address: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
		mux.Handle("/metrics", legacyregistry.Handler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(err, "Health and metrics server")
			}
		}()
		defer srv.Close()
		logger.Info("Serving /healthz and /metrics", "address", ln.Addr().String())
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, Name)
	factory := informers.NewSharedInformerFactory(cs, 0)
	controller, err := defrag.New(ctx, cfg, cs, factory, profile, recorder, clock.RealClock{})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	run := func(ctx context.Context) {
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				logger.Error(nil, "Informer did not sync", "type", typ)
				return
			}
		}
		controller.Run(ctx)
	}
	le := cfg.LeaderElection
	if le.LeaderElect == nil || !*le.LeaderElect {
		run(ctx)
		return nil
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: host + "_" + uuid.NewString(), EventRecorder: nil})
	if err != nil {
		return fmt.Errorf("leaderElection: %w", err)
	}
	var lost error
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: run,
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					// As kube-scheduler: a replica that lost its lease stops,
					// and its Deployment restarts it as a follower.
					lost = fmt.Errorf("leader election lost (lease %s/%s)", le.ResourceNamespace, le.ResourceName)
				}
			},
		},
	})
	return lost
}

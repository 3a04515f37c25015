// Package integration runs the devicefit plugins inside the upstream
// kube-scheduler against a real kube-apiserver backed by a real etcd, all
// started in-process by the tests and listening on 127.0.0.1 only. No kubelet
// runs: nodes are API objects whose status the tests write, and pods are
// bound, never started.
//
// The package is deliberately a single Go package: every test binary that
// imports k8s.io/kubernetes/test/integration/util links a whole kube-apiserver,
// and linking that once is what keeps the suite affordable on small machines.
//
// Layout:
//   - main_test.go       TestMain: one embedded etcd for the whole package
//   - cluster_test.go    TestDeviceFit (the only top-level test: one apiserver,
//     one suite after another), profiles, the in-process scheduler
//   - objects_test.go    GFD-labelled nodes, device pods
//   - wait_test.go       polling helpers and the no-overcommit invariant
//   - placement_test.go  suite Placement: exact feasible node sets and reasons
//   - overcommit_test.go suite NoOvercommit: 339 pods, 24 nodes, churn
//   - dra_test.go        suite DRAExtendedResource: DeviceClass-served resources
//   - reasons_test.go    suite PendingReasons: messages on nodes the list leaves out
//   - gangs_test.go      TestGangs: pod groups with the GenericWorkload and
//     TopologyAwareWorkloadScheduling gates, on an apiserver of its own
//
// Run: go test ./test/integration/ -count=1 [-run 'TestDeviceFit/Placement'] [-v]
// (-short skips the package).
package integration

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdURLEnv is what k8s.io/kubernetes/test/integration/framework reads
// (GetEtcdURL) to find the etcd the test apiservers store into.
const etcdURLEnv = "KUBE_INTEGRATION_ETCD_URL"

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runWithEtcd(m))
}

// runWithEtcd starts one embedded etcd on 127.0.0.1 (kernel-chosen ports, data
// in a temp dir), points the integration framework at it, runs the tests and
// tears everything down again. It returns the exit code of m.Run.
func runWithEtcd(m *testing.M) int {
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "test/integration: skipped in -short mode (needs an in-process etcd and kube-apiserver)")
		return 0
	}
	dataDir, err := os.MkdirTemp("", "devicefit-integration-etcd-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating etcd data dir: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dataDir)

	clientURL, stop, err := startEmbeddedEtcd(dataDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting embedded etcd: %v\n", err)
		return 1
	}
	defer stop()

	if err := os.Setenv(etcdURLEnv, clientURL); err != nil {
		fmt.Fprintf(os.Stderr, "setting %s: %v\n", etcdURLEnv, err)
		return 1
	}
	return m.Run()
}

func startEmbeddedEtcd(dataDir string) (string, func(), error) {
	cfg := embed.NewConfig()
	cfg.Name = "devicefit-integration"
	cfg.Dir = dataDir
	// etcd logs errors only; during Close it reports its own listeners
	// shutting down as errors ("http: Server closed"), so the level is raised
	// to fatal just before closing.
	level := zap.NewAtomicLevelAt(zap.ErrorLevel)
	zcfg := zap.NewProductionConfig()
	zcfg.Level = level
	zcfg.OutputPaths = []string{"stderr"}
	zcfg.ErrorOutputPaths = []string{"stderr"}
	lg, err := zcfg.Build()
	if err != nil {
		return "", nil, err
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	cfg.LogOutputs = []string{"stderr"} // not journald, whatever the host runs
	// Test data is disposable: skip fsync, it dominates etcd latency on small VMs.
	cfg.UnsafeNoFsync = true
	cfg.QuotaBackendBytes = 2 << 30

	// Port 0 everywhere: the kernel picks free ports, the real client address is
	// read back from the listener. Peer URLs only need to be self-consistent for
	// a single-member cluster.
	local := func(s string) url.URL {
		u, err := url.Parse(s)
		if err != nil {
			panic(err)
		}
		return *u
	}
	cfg.ListenClientUrls = []url.URL{local("http://127.0.0.1:0")}
	cfg.AdvertiseClientUrls = []url.URL{local("http://127.0.0.1:0")}
	cfg.ListenPeerUrls = []url.URL{local("http://127.0.0.1:0")}
	cfg.AdvertisePeerUrls = []url.URL{local("http://127.0.0.1:0")}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return "", nil, fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return "", nil, fmt.Errorf("etcd did not become ready within 60s")
	}
	if len(e.Clients) == 0 {
		e.Close()
		return "", nil, fmt.Errorf("etcd has no client listener")
	}
	stop := func() {
		level.SetLevel(zap.FatalLevel)
		e.Close()
		_ = lg.Sync()
	}
	return "http://" + e.Clients[0].Addr().String(), stop, nil
}

// Package controlplane starts a throw-away Kubernetes control plane, etcd and
// kube-apiserver as child processes on 127.0.0.1, with fresh certificates and
// tokens, and a kube-scheduler-compatible binary against it. It is shared by
// the local run (cmd/localup) and the end-to-end tests (test/e2e), and uses
// the binaries the Makefile builds into bin/ (`make build tools`).
//
// There is no kubelet, and no controller-manager unless a caller starts one
// with only the controllers it needs (StartControllerManager): nodes are API
// objects whose status the caller writes, pods are bound and never run, and
// service account tokens come only from the TokenRequest API.
package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

const (
	// AdminUser is in system:masters, so RBAC lets it do anything.
	AdminUser = "devicefit-admin"
	// SchedulerUser is the identity the bootstrap RBAC policy grants the
	// kube-scheduler's permissions to (ClusterRole system:kube-scheduler).
	SchedulerUser = "system:kube-scheduler"
)

// Options configure Start.
type Options struct {
	// BinDir holds the etcd and kube-apiserver binaries.
	BinDir string
	// Dir receives etcd's data, the certificates, tokens and kubeconfigs and
	// every log. It is created if missing; it is never removed.
	Dir string
	// UserAgent of Client; "devicefit-controlplane" if empty.
	UserAgent string
	// Grace is how long each process may take to exit after SIGTERM before
	// Stop kills it; 10s if zero.
	Grace time.Duration
	// APIServerArgs are appended to kube-apiserver's command line, e.g.
	// feature gates and --runtime-config.
	APIServerArgs []string
}

// ControlPlane is etcd plus kube-apiserver on 127.0.0.1, with their state,
// certificates and credentials under Dir.
type ControlPlane struct {
	Dir string
	// URL is the apiserver's https://127.0.0.1:<port>.
	URL string
	// CAFile is the apiserver's self-signed serving certificate, the CA its
	// clients trust.
	CAFile string
	// AdminKubeconfig and AdminToken authenticate as AdminUser.
	AdminKubeconfig string
	AdminToken      string
	// SchedulerKubeconfig and SchedulerToken authenticate as SchedulerUser.
	SchedulerKubeconfig string
	SchedulerToken      string
	// RESTConfig is AdminKubeconfig's, with QPS 200 and burst 400; Client
	// uses it.
	RESTConfig *rest.Config
	Client     kubernetes.Interface
	// Etcd and APIServer are the two processes; ControllerManager is set
	// once StartControllerManager started it.
	Etcd, APIServer, ControllerManager *Process

	grace   time.Duration
	apiPort int
	// What the apiserver was started with, for StartAPIServer.
	binDir, etcdURL, userAgent string
	apiArgs                    []string
	apiStarts                  int
}

// Start starts etcd and kube-apiserver and waits until the apiserver's
// /readyz passes. On error it stops whatever it started (Dir and the logs
// stay); a failure of one of the processes is a *ProcessError.
func Start(ctx context.Context, o Options) (*ControlPlane, error) {
	if o.UserAgent == "" {
		o.UserAgent = "devicefit-controlplane"
	}
	if o.Grace == 0 {
		o.Grace = 10 * time.Second
	}
	binDir, err := filepath.Abs(o.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir, grace: o.Grace, binDir: binDir, userAgent: o.UserAgent, apiArgs: o.APIServerArgs}
	if err := cp.start(ctx); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context) error {
	etcdURL, err := cp.startEtcd(ctx, cp.binDir)
	if err != nil {
		return err
	}
	cp.etcdURL = etcdURL
	if err := cp.writeCredentials(); err != nil {
		return err
	}
	return cp.startAPIServer(ctx)
}

// Processes are the processes started, in start order.
func (cp *ControlPlane) Processes() []*Process {
	var out []*Process
	for _, p := range []*Process{cp.Etcd, cp.APIServer, cp.ControllerManager} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Stop stops the controller-manager, the apiserver, then etcd. Dir stays.
func (cp *ControlPlane) Stop() {
	procs := cp.Processes()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Stop(cp.grace)
	}
}

// StopAPIServer stops kube-apiserver (SIGTERM, SIGKILL after the grace of
// Options) and leaves etcd running, as a control-plane upgrade or a crash of
// the apiserver would. Clients see connection errors until StartAPIServer.
// kube-apiserver stops listening as soon as it gets SIGTERM, but with
// watches open it tends to take the whole grace to exit.
func (cp *ControlPlane) StopAPIServer() {
	if cp.APIServer != nil {
		cp.APIServer.Stop(cp.grace)
	}
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the
// same flags: the same etcd and data, port, certificates and tokens, so
// every kubeconfig, RESTConfig and Client made before keeps working (Client
// is the same object). It waits for /readyz as Start does. The stopped
// process's log is kept as kube-apiserver.<n>.log; the new one writes
// kube-apiserver.log again.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	if cp.APIServer != nil {
		if err := cp.APIServer.Exited(); err == nil {
			return fmt.Errorf("kube-apiserver (pid %d) is still running: StopAPIServer first", cp.APIServer.Pid())
		}
		kept := filepath.Join(cp.Dir, fmt.Sprintf("kube-apiserver.%d.log", cp.apiStarts))
		if err := os.Rename(cp.APIServer.LogPath, kept); err != nil {
			return err
		}
		cp.APIServer.LogPath = kept
	}
	return cp.startAPIServer(ctx)
}

// RestartAPIServer is StopAPIServer, then StartAPIServer.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	cp.StopAPIServer()
	return cp.StartAPIServer(ctx)
}

// WriteKubeconfig writes a kubeconfig for the apiserver that authenticates
// with the bearer token, e.g. one from the TokenRequest API.
func (cp *ControlPlane) WriteKubeconfig(path, user, token string) error {
	return writeKubeconfig(path, cp.URL, cp.CAFile, user, token)
}

func (cp *ControlPlane) startEtcd(ctx context.Context, binDir string) (string, error) {
	clientPort, err := FreePort()
	if err != nil {
		return "", err
	}
	peerPort, err := FreePort()
	if err != nil {
		return "", err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p, err := StartProcess("etcd", filepath.Join(binDir, "etcd"), []string{
		"--name=devicefit",
		"--data-dir=" + filepath.Join(cp.Dir, "etcd-data"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=devicefit=" + peerURL,
		// The data is thrown away: fsync would only slow a small VM.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}, cp.Dir)
	if err != nil {
		return "", err
	}
	cp.Etcd = p

	if err := WaitHTTPOK(ctx, p, clientURL+"/health", 200*time.Millisecond, 30*time.Second); err != nil {
		return "", err
	}
	klog.InfoS("etcd is healthy", "url", clientURL)
	return clientURL, nil
}

func (cp *ControlPlane) startAPIServer(ctx context.Context) error {
	pki := filepath.Join(cp.Dir, "pki")
	p, err := StartProcess("kube-apiserver", filepath.Join(cp.binDir, "kube-apiserver"), append([]string{
		"--etcd-servers=" + cp.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cp.apiPort),
		"--cert-dir=" + pki,
		"--tls-cert-file=" + cp.CAFile,
		"--tls-private-key-file=" + filepath.Join(pki, "apiserver.key"),
		"--token-auth-file=" + filepath.Join(pki, "tokens.csv"),
		"--client-ca-file=" + filepath.Join(pki, "client-ca.crt"),
		// The front-proxy settings kubeadm uses.
		"--requestheader-client-ca-file=" + filepath.Join(pki, "front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--authorization-mode=Node,RBAC",
		// As kubeadm and every real cluster: privileged containers are up to
		// admission (Pod Security), not refused outright by validation.
		"--allow-privileged=true",
		// Service account tokens are signed with sa.key, so the TokenRequest
		// API works without a controller-manager; the authenticator looks the
		// service account up, so it has to exist.
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(pki, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		// On loopback the default reconciler would publish 127.0.0.1 as the
		// kubernetes service endpoint, which the apiserver refuses.
		"--endpoint-reconciler-type=none",
		// There is no kubelet and no controller-manager: ServiceAccount would
		// wait for service account tokens no controller creates, and
		// TaintNodesByCondition would taint every new node not-ready with
		// no node-lifecycle controller to lift the taint.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--profiling=false",
	}, cp.apiArgs...), cp.Dir)
	if err != nil {
		return err
	}
	cp.APIServer = p
	cp.apiStarts++

	// Once: a restarted apiserver keeps the clients callers already hold.
	if cp.Client == nil {
		cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
		if err != nil {
			return err
		}
		// Hundreds of pods are created and polled; the default 5 QPS would
		// make callers wait on the client, not on the scheduler.
		cfg.QPS, cfg.Burst = 200, 400
		cfg.UserAgent = cp.userAgent
		cp.RESTConfig = cfg
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		cp.Client = cs
	}
	cs := cp.Client

	var last string
	err = Poll(ctx, 500*time.Millisecond, 2*time.Minute, p, func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = err.Error()
			if len(body) > 0 {
				last = string(body)
			}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return WaitFailed(p, err, "waiting for %s/readyz (last answer: %q)", cp.URL, last)
	}
	klog.InfoS("kube-apiserver is ready", "url", cp.URL)
	return nil
}

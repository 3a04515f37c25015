package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

const (
	// adminUser is in system:masters, so RBAC lets it do anything.
	adminUser = "devicefit-admin"
	// schedulerUser is the identity the bootstrap RBAC policy grants the
	// kube-scheduler's permissions to (ClusterRole system:kube-scheduler).
	schedulerUser = "system:kube-scheduler"
)

// controlPlane is etcd plus kube-apiserver on 127.0.0.1, with their state,
// certificates and credentials under dir.
type controlPlane struct {
	dir        string
	etcd       *process
	apiserver  *process
	apiURL     string
	apiPort    int
	caFile     string // the apiserver's serving certificate chain
	adminKube  string // kubeconfig of adminUser
	schedKube  string // kubeconfig of schedulerUser
	adminToken string
	client     kubernetes.Interface
	restConfig *rest.Config
}

// startControlPlane starts etcd and kube-apiserver and waits until the
// apiserver's /readyz passes.
func startControlPlane(ctx context.Context, binDir, dir string, procs *[]*process) (*controlPlane, error) {
	cp := &controlPlane{dir: dir}
	etcdURL, err := cp.startEtcd(ctx, binDir, procs)
	if err != nil {
		return nil, err
	}
	if err := cp.writeCredentials(); err != nil {
		return nil, err
	}
	if err := cp.startAPIServer(ctx, binDir, etcdURL, procs); err != nil {
		return nil, err
	}
	return cp, nil
}

func (cp *controlPlane) startEtcd(ctx context.Context, binDir string, procs *[]*process) (string, error) {
	clientPort, err := freePort()
	if err != nil {
		return "", err
	}
	peerPort, err := freePort()
	if err != nil {
		return "", err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p, err := startProcess("etcd", filepath.Join(binDir, "etcd"), []string{
		"--name=localup",
		"--data-dir=" + filepath.Join(cp.dir, "etcd-data"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=localup=" + peerURL,
		// The run's data is thrown away: fsync would only slow a small VM.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}, cp.dir)
	if err != nil {
		return "", err
	}
	*procs = append(*procs, p)
	cp.etcd = p

	httpClient := &http.Client{Timeout: 2 * time.Second}
	err = poll(ctx, 200*time.Millisecond, 30*time.Second, p, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return "", waitFailed(p, err, "waiting for %s/health", clientURL)
	}
	klog.InfoS("etcd is healthy", "url", clientURL)
	return clientURL, nil
}

func (cp *controlPlane) startAPIServer(ctx context.Context, binDir, etcdURL string, procs *[]*process) error {
	pki := filepath.Join(cp.dir, "pki")
	p, err := startProcess("kube-apiserver", filepath.Join(binDir, "kube-apiserver"), []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cp.apiPort),
		"--cert-dir=" + pki,
		"--tls-cert-file=" + cp.caFile,
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
	}, cp.dir)
	if err != nil {
		return err
	}
	*procs = append(*procs, p)
	cp.apiserver = p

	cfg, err := clientcmd.BuildConfigFromFlags("", cp.adminKube)
	if err != nil {
		return err
	}
	// Hundreds of pods are created and polled; the default 5 QPS would make
	// the run wait on the client, not on the scheduler.
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "devicefit-localup"
	cp.restConfig = cfg
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cp.client = cs

	var last string
	err = poll(ctx, 500*time.Millisecond, 2*time.Minute, p, func(ctx context.Context) (bool, error) {
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
		return waitFailed(p, err, "waiting for %s/readyz (last answer: %q)", cp.apiURL, last)
	}
	klog.InfoS("kube-apiserver is ready", "url", cp.apiURL)
	return nil
}

// poll runs cond every interval until it returns true, the timeout passes,
// ctx ends or p exits, whichever comes first. If p exits, the error is p's
// *processError.
func poll(ctx context.Context, interval, timeout time.Duration, p *process, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
}

// waitFailed attributes a failed poll of p to p. When p died, that is the
// whole story; otherwise the error says what was being waited for.
func waitFailed(p *process, err error, format string, args ...interface{}) error {
	var pe *processError
	if errors.As(err, &pe) {
		return err
	}
	return &processError{p: p, err: fmt.Errorf(format+": %w", append(args, err)...)}
}

// freePort asks the kernel for a free port on 127.0.0.1. The port is released
// before the child binds it; nothing else on a developer machine races for
// ephemeral ports often enough to matter.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

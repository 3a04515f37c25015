package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// scheduler is the real devicefit-scheduler binary, run as schedulerUser.
type scheduler struct {
	proc    *process
	url     string // https://127.0.0.1:<secure port>
	certDir string
	http    *http.Client // trusts the scheduler's self-signed serving cert
	token   string       // bearer token for /metrics (delegated authn/authz)
}

// leaderElection is the part of the KubeSchedulerConfiguration localup reads.
type leaderElection struct {
	resourceName, resourceNamespace string
}

// renderSchedulerConfig copies the KubeSchedulerConfiguration at src into dir
// with clientConnection.kubeconfig set. kube-scheduler ignores --kubeconfig
// whenever --config is given, so the kubeconfig has to be in the file; the
// file in manifests/ has none because in a cluster the scheduler uses its
// service account.
func renderSchedulerConfig(src, dir, kubeconfig string) (string, leaderElection, error) {
	le := leaderElection{resourceName: "kube-scheduler", resourceNamespace: "kube-system"}
	data, err := os.ReadFile(src)
	if err != nil {
		return "", le, err
	}
	var cfg map[string]interface{}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", le, fmt.Errorf("%s: %w", src, err)
	}
	if cfg == nil || cfg["kind"] != "KubeSchedulerConfiguration" {
		return "", le, fmt.Errorf("%s: not a KubeSchedulerConfiguration", src)
	}
	cc, _ := cfg["clientConnection"].(map[string]interface{})
	if cc == nil {
		cc = map[string]interface{}{}
	}
	cc["kubeconfig"] = kubeconfig
	cfg["clientConnection"] = cc
	if l, ok := cfg["leaderElection"].(map[string]interface{}); ok {
		if v, ok := l["resourceName"].(string); ok && v != "" {
			le.resourceName = v
		}
		if v, ok := l["resourceNamespace"].(string); ok && v != "" {
			le.resourceNamespace = v
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", le, err
	}
	dst := filepath.Join(dir, "scheduler-config.yaml")
	return dst, le, os.WriteFile(dst, out, 0o600)
}

// grantLeaderElection lets schedulerUser hold the lease named in the config.
// The bootstrap ClusterRole system:kube-scheduler covers every API the
// scheduler reads and writes, but its lease rule names only "kube-scheduler";
// a secondary scheduler needs its own lease, as in the manifests' RBAC.
func grantLeaderElection(ctx context.Context, cp *controlPlane, le leaderElection) error {
	name := "devicefit-scheduler:leader-election"
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: le.resourceNamespace},
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{"coordination.k8s.io"},
			Resources:     []string{"leases"},
			ResourceNames: []string{le.resourceName},
			Verbs:         []string{"get", "update", "patch"},
		}},
	}
	if _, err := cp.client.RbacV1().Roles(le.resourceNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Role %s/%s: %w", le.resourceNamespace, name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: le.resourceNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: schedulerUser}},
	}
	if _, err := cp.client.RbacV1().RoleBindings(le.resourceNamespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating RoleBinding %s/%s: %w", le.resourceNamespace, name, err)
	}
	return nil
}

// startScheduler starts bin/devicefit-scheduler with the rendered config. It
// does not wait: the fleet is registered while the scheduler boots.
func startScheduler(binDir, dir, config string, cp *controlPlane, procs *[]*process) (*scheduler, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &scheduler{
		url:     "https://127.0.0.1:" + strconv.Itoa(port),
		certDir: filepath.Join(dir, "scheduler-certs"),
		token:   cp.adminToken,
	}
	p, err := startProcess("devicefit-scheduler", filepath.Join(binDir, "devicefit-scheduler"), []string{
		"--config=" + config,
		// Without these the secure port cannot authenticate or authorize
		// anyone, and /metrics answers 403 to everybody.
		"--authentication-kubeconfig=" + cp.schedKube,
		"--authorization-kubeconfig=" + cp.schedKube,
		// The default is 0.0.0.0:10259.
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// A fresh directory: kube-scheduler reuses the pair it finds there.
		"--cert-dir=" + s.certDir,
		"--v=2",
	}, dir)
	if err != nil {
		return nil, err
	}
	*procs = append(*procs, p)
	s.proc = p
	return s, nil
}

// waitReady waits for the scheduler's /readyz, which passes once its
// informers have synced. The serving certificate is self-signed by the
// scheduler at start-up; it is trusted as soon as it appears in --cert-dir.
func (s *scheduler) waitReady(ctx context.Context) error {
	var last string
	err := poll(ctx, 250*time.Millisecond, 90*time.Second, s.proc, func(ctx context.Context) (bool, error) {
		if s.http == nil {
			pem, err := os.ReadFile(filepath.Join(s.certDir, "kube-scheduler.crt"))
			if err != nil {
				last = "no serving certificate yet"
				return false, nil
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				last = "serving certificate not parsed yet"
				return false, nil
			}
			s.http = &http.Client{
				Timeout:   5 * time.Second,
				Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
			}
		}
		code, body, err := s.get(ctx, "/readyz")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
		return code == http.StatusOK, nil
	})
	if err != nil {
		return waitFailed(s.proc, err, "waiting for %s/readyz (last answer: %q)", s.url, last)
	}
	klog.InfoS("devicefit-scheduler is ready", "url", s.url)
	return nil
}

func (s *scheduler) get(ctx context.Context, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	return resp.StatusCode, string(body), err
}

// metrics returns the scheduler's own /metrics samples whose name starts with
// one of prefixes, in exposition order.
func (s *scheduler) metrics(ctx context.Context, prefixes ...string) ([]string, error) {
	code, body, err := s.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %d %s", s.url, code, strings.TrimSpace(body))
	}
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				out = append(out, line)
				break
			}
		}
	}
	return out, nil
}

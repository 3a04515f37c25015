package controlplane

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

	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// LeaderElection is the lease a KubeSchedulerConfiguration names.
type LeaderElection struct {
	ResourceName, ResourceNamespace string
}

// RenderSchedulerConfig returns the KubeSchedulerConfiguration data with
// clientConnection.kubeconfig set to kubeconfig, and the lease it names
// (kube-scheduler's default kube-system/kube-scheduler where it names none).
// kube-scheduler ignores --kubeconfig whenever --config is given, so the
// kubeconfig has to be in the file; the shipped configuration has none
// because in a cluster the scheduler uses its service account.
func RenderSchedulerConfig(data []byte, kubeconfig string) ([]byte, LeaderElection, error) {
	le := LeaderElection{ResourceName: "kube-scheduler", ResourceNamespace: "kube-system"}
	var cfg map[string]interface{}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, le, err
	}
	if cfg == nil || cfg["kind"] != "KubeSchedulerConfiguration" {
		return nil, le, fmt.Errorf("not a KubeSchedulerConfiguration")
	}
	cc, _ := cfg["clientConnection"].(map[string]interface{})
	if cc == nil {
		cc = map[string]interface{}{}
	}
	cc["kubeconfig"] = kubeconfig
	cfg["clientConnection"] = cc
	if l, ok := cfg["leaderElection"].(map[string]interface{}); ok {
		if v, ok := l["resourceName"].(string); ok && v != "" {
			le.ResourceName = v
		}
		if v, ok := l["resourceNamespace"].(string); ok && v != "" {
			le.ResourceNamespace = v
		}
	}
	out, err := yaml.Marshal(cfg)
	return out, le, err
}

// SchedulerOptions configure StartScheduler.
type SchedulerOptions struct {
	// Binary is the scheduler, e.g. bin/devicefit-scheduler.
	Binary string
	// Config is the KubeSchedulerConfiguration file (--config), with
	// clientConnection.kubeconfig set (RenderSchedulerConfig).
	Config string
	// Kubeconfig is the identity the secure port delegates authentication
	// and authorization with (--authentication-kubeconfig and
	// --authorization-kubeconfig). Without it the secure port cannot
	// authenticate or authorize anyone and /metrics answers 403 to everybody.
	Kubeconfig string
	// Dir receives the log <Name>.log and the serving certificate in
	// <Name>-certs/.
	Dir string
	// Name of the process; "devicefit-scheduler" if empty.
	Name string
	// Token is the bearer token Get sends.
	Token string
	// ExtraArgs are appended to the command line, e.g. "--v=2".
	ExtraArgs []string
}

// Scheduler is a kube-scheduler-compatible binary serving on 127.0.0.1.
type Scheduler struct {
	Process *Process
	// URL is https://127.0.0.1:<secure port>.
	URL string
	// CertDir is the --cert-dir where the scheduler writes its self-signed
	// serving certificate (CertFile) at start-up.
	CertDir string
	// Token is the bearer token Get sends.
	Token string

	http *http.Client // trusts the serving certificate; set by WaitReady
}

// StartScheduler starts the scheduler on a free secure port of 127.0.0.1 with
// a fresh --cert-dir. It does not wait: see WaitReady.
func StartScheduler(o SchedulerOptions) (*Scheduler, error) {
	if o.Name == "" {
		o.Name = "devicefit-scheduler"
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s := &Scheduler{
		URL:     "https://127.0.0.1:" + strconv.Itoa(port),
		CertDir: filepath.Join(o.Dir, o.Name+"-certs"),
		Token:   o.Token,
	}
	// A fresh directory: kube-scheduler reuses the pair it finds there.
	if err := os.RemoveAll(s.CertDir); err != nil {
		return nil, err
	}
	args := []string{
		"--config=" + o.Config,
		"--authentication-kubeconfig=" + o.Kubeconfig,
		"--authorization-kubeconfig=" + o.Kubeconfig,
		// The default is 0.0.0.0:10259.
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + s.CertDir,
	}
	p, err := StartProcess(o.Name, o.Binary, append(args, o.ExtraArgs...), o.Dir)
	if err != nil {
		return nil, err
	}
	s.Process = p
	return s, nil
}

// CertFile is the scheduler's self-signed serving certificate chain
// (certificate, then the CA that signed it), valid for localhost and
// 127.0.0.1.
func (s *Scheduler) CertFile() string { return filepath.Join(s.CertDir, "kube-scheduler.crt") }

// WaitReady waits for the scheduler's /readyz, which passes once its
// informers have synced. The serving certificate is trusted as soon as it
// appears in CertDir.
func (s *Scheduler) WaitReady(ctx context.Context, timeout time.Duration) error {
	var last string
	err := Poll(ctx, 250*time.Millisecond, timeout, s.Process, func(ctx context.Context) (bool, error) {
		if s.http == nil {
			pem, err := os.ReadFile(s.CertFile())
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
		code, body, err := s.Get(ctx, "/readyz")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
		return code == http.StatusOK, nil
	})
	if err != nil {
		return WaitFailed(s.Process, err, "waiting for %s/readyz (last answer: %q)", s.URL, last)
	}
	klog.InfoS("Scheduler is ready", "process", s.Process.Name, "url", s.URL)
	return nil
}

// Get GETs path from the secure port with Token, returning the status code
// and body. It works once WaitReady has returned.
func (s *Scheduler) Get(ctx context.Context, path string) (int, string, error) {
	return s.GetWithToken(ctx, path, s.Token)
}

// GetWithToken is Get with another bearer token; "" sends none (anonymous).
func (s *Scheduler) GetWithToken(ctx context.Context, path, token string) (int, string, error) {
	if s.http == nil {
		return 0, "", fmt.Errorf("GET %s%s: the serving certificate is not known yet (WaitReady first)", s.URL, path)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	return resp.StatusCode, string(body), err
}

// Metrics returns the samples of /metrics whose name starts with one of
// prefixes, in exposition order.
func (s *Scheduler) Metrics(ctx context.Context, prefixes ...string) ([]string, error) {
	code, body, err := s.Get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %d %s", s.URL, code, strings.TrimSpace(body))
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

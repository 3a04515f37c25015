package e2eutil

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// DefragmenterName is the defragmenter component's ServiceAccount, lease
// and app.kubernetes.io/name (manifests/components/defragmenter).
const DefragmenterName = "devicefit-defragmenter"

// Defragmenter is a running bin/devicefit-defragmenter.
type Defragmenter struct {
	Process *controlplane.Process
	// MetricsURL is its /metrics, on --health-metrics-bind-address.
	MetricsURL string
}

// RunDefragmenter runs bin/devicefit-defragmenter as the defragmenter
// component's Deployment runs it: the configuration of the component's
// ConfigMap, naming the scheduler configuration at schedulerConfig and
// changed by edit, and the component's ServiceAccount. It returns once the
// process holds the lease, and stops it when the test ends.
func (e *Env) RunDefragmenter(t *testing.T, ctx context.Context, name, schedulerConfig string, edit func(map[string]interface{})) *Defragmenter {
	t.Helper()
	cs := e.CP.Client
	cms, err := cs.CoreV1().ConfigMaps(SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + DefragmenterName})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("the defragmenter component's ConfigMap: %v (%d found)", err, len(cms.Items))
	}
	var cfg map[string]interface{}
	if err := yaml.Unmarshal([]byte(cms.Items[0].Data["defragmenter-config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["schedulerConfigFile"] = schedulerConfig
	edit(cfg)
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.Dir, name+"-config.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := ServiceAccountKubeconfig(ctx, e.CP, e.Dir, SystemNamespace, DefragmenterName)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := controlplane.StartProcess(name, filepath.Join(e.BinDir, DefragmenterName),
		[]string{"--config", path, "--kubeconfig", kubeconfig, "--health-metrics-bind-address", addr, "--v=2"}, e.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("log of %s: %s", name, p.LogPath)
		}
	})
	err = controlplane.Poll(ctx, 250*time.Millisecond, 60*time.Second, p, func(ctx context.Context) (bool, error) {
		lease, err := cs.CoordinationV1().Leases(SystemNamespace).Get(ctx, DefragmenterName, metav1.GetOptions{})
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
	if err != nil {
		t.Fatalf("%s did not take its lease: %v", name, WithLog(p, err))
	}
	return &Defragmenter{Process: p, MetricsURL: "http://" + addr + "/metrics"}
}

// WaitMetrics waits until /metrics holds every line of want.
func (d *Defragmenter) WaitMetrics(t *testing.T, ctx context.Context, want ...string) {
	t.Helper()
	var text string
	err := controlplane.Poll(ctx, 250*time.Millisecond, 60*time.Second, d.Process, func(ctx context.Context) (bool, error) {
		var err error
		if text, err = get(ctx, d.MetricsURL); err != nil {
			return false, err
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("/metrics lacks some of %q: %v\n%s", want, err, linesWithPrefix(text, "devicefit_defragmenter"))
	}
}

// Metrics is /metrics now.
func (d *Defragmenter) Metrics(t *testing.T, ctx context.Context) string {
	t.Helper()
	text, err := get(ctx, d.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}

func linesWithPrefix(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

package e2e

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/internal/controlplane"
)

const scrapeJob = "devicefit-scheduler"

// promCheck is one PromQL assertion: query must come to a single sample of
// value want before the deadline.
type promCheck struct {
	query string
	want  float64
}

// promChecks are the assertions on what Prometheus scraped from the
// scheduler after the scenario; one row per metric, e.g.
//
//	{`sum(devicefit_placed_devices_total{job="` + scrapeJob + `"})`, float64(devices)},
//
// (use sum() where a metric has several series: queryScalar wants one).
func promChecks(sc *scenarioResult) []promCheck {
	pods, devices := sc.devicePods()
	return []promCheck{
		{`up{job="` + scrapeJob + `"}`, 1},
		{`scheduler_schedule_attempts_total{job="` + scrapeJob + `",profile="devicefit",result="scheduled"}`, float64(len(sc.pods))},
		{`sum(devicefit_placements_total{job="` + scrapeJob + `"})`, float64(pods)},
		{`sum(devicefit_placed_devices_total{job="` + scrapeJob + `"})`, float64(devices)},
		{`sum(devicefit_placed_devices_total{job="` + scrapeJob + `",product="` + productMIGBad + `"}) or vector(0)`, 0},

		// The inventory: 8+8+8 whole GPUs, 16 L4 replicas, 8 MIG-INVALID.
		{`sum(devicefit_devices{job="` + scrapeJob + `",resource="nvidia.com/gpu",state="allocatable"})`, 48},
		{`sum(devicefit_devices{job="` + scrapeJob + `",resource="nvidia.com/gpu",state="allocated"})`, float64(devices)},
		{`sum(devicefit_devices{job="` + scrapeJob + `",resource="nvidia.com/gpu",state="free"})`, float64(48 - devices)},
		// Stranded whatever the placement: no job can use GPUs whose MIG
		// setup is broken.
		{`devicefit_devices{job="` + scrapeJob + `",product="` + productMIGBad + `",state="stranded"}`, 8},
		{`devicefit_devices{job="` + scrapeJob + `",product="` + productMIGBad + `",state="free"}`, 8},
		// Free, but no job asks for amd.com/gpu: none is known stranded.
		{`devicefit_devices{job="` + scrapeJob + `",resource="amd.com/gpu",product="` + productMI300X + `",state="free"}`, 4},
		{`devicefit_devices{job="` + scrapeJob + `",resource="amd.com/gpu",product="` + productMI300X + `",state="stranded"}`, 0},
		{`devicefit_fragmentation_ratio{job="` + scrapeJob + `",resource="amd.com/gpu"}`, 0},
		// Of the free nvidia.com/gpu, the 8 MIG-INVALID at least are stranded.
		{`devicefit_fragmentation_ratio{job="` + scrapeJob + `",resource="nvidia.com/gpu"} >= bool ` + fmt.Sprint(8.0/float64(48-devices)), 1},
		// The unresolvable pod of the test: at least one PreFilter rejection.
		{`devicefit_filter_rejections_total{job="` + scrapeJob + `",reason="no_matching_node"} >= bool 1`, 1},
	}
}

// TestPrometheusScrapesScheduler: a real Prometheus, authenticated as a
// service account bound to the manifests' devicefit:metrics-reader
// ClusterRole and verifying the scheduler's serving certificate, scrapes the
// scheduler's /metrics; the scraped values match the scenario.
func TestPrometheusScrapesScheduler(t *testing.T) {
	sched, sc := sharedScenario(t)
	ctx := testContext(t, 3*time.Minute)
	// A product that exists nowhere: DeviceFit rejects the pod at PreFilter.
	ns := newNamespace(t)
	if err := createPods(ctx, []*v1.Pod{devicePod(ns, "no-such-product", resourceGPU, 1, "devicefit.io/products", "NVIDIA-B300")}); err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, ctx, sched)

	// Poll every check until all hold (the first scrapes may predate the
	// last binding) or the deadline passes, then report each.
	checks := promChecks(sc)
	got := make([]float64, len(checks))
	errs := make([]error, len(checks))
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok := true
		for i, c := range checks {
			got[i], errs[i] = prom.queryScalar(ctx, c.query)
			ok = ok && errs[i] == nil && near(got[i], c.want)
		}
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	for i, c := range checks {
		switch {
		case errs[i] != nil:
			t.Errorf("%s: %v", c.query, errs[i])
		case !near(got[i], c.want):
			t.Errorf("%s = %v, want %v", c.query, got[i], c.want)
		default:
			t.Logf("%s = %v", c.query, got[i])
		}
	}
	if t.Failed() {
		prom.logTargets(t, ctx)
		if lines, err := sched.Metrics(ctx, "devicefit_"); err == nil {
			t.Logf("the scheduler's devicefit metrics now:\n%s", strings.Join(lines, "\n"))
		}
	}
}

// near compares within float rounding: stranded devices are sums of
// normalised workload weights, 8 · (w1 + w2 + ...) where the weights add up
// to 1 only up to rounding.
func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

// prometheus is a Prometheus server of the test.
type prometheus struct {
	proc *controlplane.Process
	url  string
	api  promv1.API
}

// startPrometheus starts Prometheus on a free port of 127.0.0.1 with a
// throw-away TSDB and one scrape job for the scheduler, every second, with
// the token of a service account of a new namespace bound to
// devicefit:metrics-reader. It is stopped when the test ends.
func startPrometheus(t *testing.T, ctx context.Context, sched *scheduler) *prometheus {
	t.Helper()
	binary, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus is not on PATH: %v (`make test-e2e` installs it, hack/install-prometheus.sh)", err)
	}
	token := metricsReaderToken(t, ctx, "prometheus")

	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "token", []byte(token))
	port, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	target := strings.TrimPrefix(sched.URL, "https://")
	// The scheduler's certificate file holds its serving certificate and
	// the self-signed CA that issued it; the serving certificate names
	// 127.0.0.1, so the target address verifies as it is.
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: %s
    scheme: https
    authorization:
      type: Bearer
      credentials_file: %s
    tls_config:
      ca_file: %s
    static_configs:
      - targets: [%q]
`, scrapeJob, tokenFile, sched.CertFile(), target)
	configFile := writeFile(t, dir, "prometheus.yml", []byte(config))
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := controlplane.StartProcess("prometheus", binary, []string{
		"--config.file=" + configFile,
		"--storage.tsdb.path=" + filepath.Join(dir, "tsdb"),
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}, s.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", p.LogPath, controlplane.Tail(p.LogPath, 20))
		}
	})
	prom := &prometheus{proc: p, url: "http://" + addr}
	client, err := api.NewClient(api.Config{Address: prom.url})
	if err != nil {
		t.Fatal(err)
	}
	prom.api = promv1.NewAPI(client)

	if err := controlplane.WaitHTTPOK(ctx, p, prom.url+"/-/ready", 250*time.Millisecond, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return prom
}

// queryScalar evaluates promql now and returns its value, which must be a
// scalar or a vector of exactly one sample.
func (p *prometheus) queryScalar(ctx context.Context, promql string) (float64, error) {
	v, warnings, err := p.api.Query(ctx, promql, time.Now())
	if err != nil {
		return 0, err
	}
	if len(warnings) > 0 {
		return 0, fmt.Errorf("warnings: %v", warnings)
	}
	switch r := v.(type) {
	case *model.Scalar:
		return float64(r.Value), nil
	case model.Vector:
		if len(r) != 1 {
			return 0, fmt.Errorf("%d samples, want 1: %v", len(r), r)
		}
		return float64(r[0].Value), nil
	default:
		return 0, fmt.Errorf("result of type %s, want a scalar or vector", v.Type())
	}
}

// logTargets logs the scrape targets' health and last error, the first thing
// to look at when a query comes back empty.
func (p *prometheus) logTargets(t *testing.T, ctx context.Context) {
	targets, err := p.api.Targets(ctx)
	if err != nil {
		t.Logf("targets: %v", err)
		return
	}
	for _, a := range targets.Active {
		t.Logf("target %s job %s: health %s, last error %q", a.ScrapeURL, a.Labels["job"], a.Health, a.LastError)
	}
}

// metricsReaderToken returns a token of a new service account, named name
// in a namespace of its own, bound to the manifests' devicefit:metrics-reader
// ClusterRole: what a scraper of the scheduler's /metrics needs. The
// binding is deleted when the test ends.
func metricsReaderToken(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	cs := s.cp.Client
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, metricsReaderRole, metav1.GetOptions{}); err != nil {
		t.Fatalf("ClusterRole %s from the manifests: %v", metricsReaderRole, err)
	}
	ns := newNamespace(t)
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + ":" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	token, err := serviceAccountToken(ctx, ns, sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/pkg/cli"
)

// devicefitPlugin runs bin/kubectl-devicefit with the admin kubeconfig.
func devicefitPlugin() e2eutil.Kubectl {
	return s.env.Kubectl("kubectl-devicefit")
}

// gaugeKey is one devicefit_devices series.
type gaugeKey struct{ resource, product, state string }

var gaugeLine = regexp.MustCompile(`^devicefit_devices\{(.*)\} (\S+)$`)
var gaugeLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// deviceGauges reads devicefit_devices from the scheduler's /metrics with
// a metrics reader's token.
func deviceGauges(ctx context.Context, sched *scheduler, token string) (map[gaugeKey]float64, error) {
	code, body, err := sched.GetWithToken(ctx, "/metrics", token)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d %s", code, body)
	}
	out := map[gaugeKey]float64{}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "devicefit_devices{") {
			continue
		}
		m := gaugeLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("unexpected metrics line %q", line)
		}
		labels := map[string]string{}
		for _, l := range gaugeLabel.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[gaugeKey{labels["resource"], labels["product"], labels["state"]}] = v
	}
	return out, nil
}

// TestInventoryEqualsGauges: `kubectl devicefit inventory`, reading the API
// server only (and the scheduler's configuration from the Deployment's
// ConfigMap), counts per resource and product exactly the allocatable,
// allocated, free and stranded devices the running scheduler's
// devicefit_devices gauges report: stranded against the same workload, the
// profile's prior and the jobs bound and pending (DevicePack
// EstimateWorkload), up to float rounding (the scheduler sums the nodes in
// its lister's order).
func TestInventoryEqualsGauges(t *testing.T) {
	sched, _ := sharedScenario(t)
	ctx := testContext(t, 2*time.Minute)
	plugin := devicefitPlugin()
	token := metricsReaderToken(t, ctx, "inventory")

	var inv cli.Inventory
	var gauges map[gaugeKey]float64
	var mismatch []string
	// The gauges follow the scheduler's informers: poll until they agree.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, err := plugin.Run(ctx, nil, "inventory", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		inv = cli.Inventory{}
		if err := json.Unmarshal([]byte(out), &inv); err != nil {
			t.Fatalf("inventory -o json: %v\n%s", err, out)
		}
		if gauges, err = deviceGauges(ctx, sched, token); err != nil {
			t.Fatal(err)
		}
		mismatch = compareInventory(inv, gauges)
		if len(mismatch) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	for _, m := range mismatch {
		t.Error(m)
	}
	if len(inv.Rows) == 0 {
		t.Fatalf("inventory has no rows")
	}
	// Every series of the gauges has its row.
	for k := range gauges {
		if !hasRow(inv, k.resource, k.product) {
			t.Errorf("gauge %v has no inventory row", k)
		}
	}
	if !strings.HasPrefix(inv.Workload, "the observed workload of configmap devicefit-system/devicefit-scheduler-config-") {
		t.Errorf("workload %q: want the deployed ConfigMap's observed workload", inv.Workload)
	}

	// The table, and its note on stderr.
	out, errOut, err := plugin.Run(ctx, nil, "inventory")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RESOURCE", "PRODUCT", "STRANDED", productH100, "(total)"} {
		if !strings.Contains(out, want) {
			t.Errorf("inventory table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "Stranded against: the observed workload") {
		t.Errorf("inventory's stderr: %q", errOut)
	}
	t.Logf("kubectl devicefit inventory:\n%s", out)

	// A bad flag exits 1 with the reason.
	_, _, err = plugin.Run(ctx, nil, "inventory", "--by", "rack")
	if err == nil || !strings.Contains(err.Error(), `--by "rack": want product, node or pool`) || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("--by rack: want exit status 1 and the reason, got %v", err)
	}
}

func hasRow(inv cli.Inventory, resource, product string) bool {
	for _, r := range inv.Rows {
		if r.Resource == resource && r.Product == product {
			return true
		}
	}
	return false
}

// compareInventory lists the differences between the inventory and the
// gauges.
func compareInventory(inv cli.Inventory, gauges map[gaugeKey]float64) []string {
	var out []string
	for _, r := range inv.Rows {
		for state, v := range map[string]float64{
			"allocatable": float64(r.Allocatable), "allocated": float64(r.Allocated),
			"free": float64(r.Free), "stranded": r.Stranded,
		} {
			if g, ok := gauges[gaugeKey{r.Resource, r.Product, state}]; !ok || !near(g, v) {
				out = append(out, fmt.Sprintf("%s %s %s: inventory %v, gauge %v (present %v)", r.Resource, r.Product, state, v, g, ok))
			}
		}
	}
	return out
}

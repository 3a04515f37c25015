package localup

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// deviceGauge is one (resource, product) of devicefit_devices.
type deviceGauge struct {
	resource, product                      string
	allocatable, allocated, free, stranded float64
}

// shareGauge is one (resource, product) of devicefit_device_shares, in
// whole devices.
type shareGauge struct {
	resource, product    string
	used, free, stranded float64
}

// devicefitMetrics is what the scheduler's own /metrics says about the run.
type devicefitMetrics struct {
	devices       []deviceGauge // by resource, then product
	shares        []shareGauge  // by resource, then product
	fragmentation map[string]float64
	placements    map[string]float64 // "resource product" -> pods
	rejections    map[string]float64 // reason -> count, nonzero only
	attempts      map[string]float64 // result -> attempts of profile devicefit
}

// scrapeDevicefitMetrics reads the scheduler's /metrics with the admin token.
func scrapeDevicefitMetrics(ctx context.Context, s *controlplane.Scheduler) (*devicefitMetrics, error) {
	code, body, err := s.Get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %d %s", s.URL, code, strings.TrimSpace(body))
	}
	return parseDevicefitMetrics(body)
}

func parseDevicefitMetrics(body string) (*devicefitMetrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	m := &devicefitMetrics{
		fragmentation: map[string]float64{}, placements: map[string]float64{},
		rejections: map[string]float64{}, attempts: map[string]float64{},
	}
	m.devices = byResourceProduct(families["devicefit_devices"], func(r, p string) deviceGauge { return deviceGauge{resource: r, product: p} },
		func(g *deviceGauge, state string, v float64) {
			switch state {
			case "allocatable":
				g.allocatable = v
			case "allocated":
				g.allocated = v
			case "free":
				g.free = v
			case "stranded":
				g.stranded = v
			}
		})
	m.shares = byResourceProduct(families["devicefit_device_shares"], func(r, p string) shareGauge { return shareGauge{resource: r, product: p} },
		func(g *shareGauge, state string, v float64) {
			switch state {
			case "used":
				g.used = v
			case "free":
				g.free = v
			case "stranded":
				g.stranded = v
			}
		})
	for _, s := range samples(families["devicefit_fragmentation_ratio"]) {
		m.fragmentation[s.labels["resource"]] = s.value
	}
	for _, s := range samples(families["devicefit_placements_total"]) {
		m.placements[s.labels["resource"]+" "+s.labels["product"]] = s.value
	}
	for _, s := range samples(families["devicefit_filter_rejections_total"]) {
		if s.value > 0 {
			m.rejections[s.labels["reason"]] = s.value
		}
	}
	for _, s := range samples(families["scheduler_schedule_attempts_total"]) {
		if s.labels["profile"] == schedulerName {
			m.attempts[s.labels["result"]] = s.value
		}
	}
	return m, nil
}

// byResourceProduct gathers a gauge family labelled resource, product and
// state into one G per (resource, product), sorted by resource, then
// product; set stores a state's value.
func byResourceProduct[G any](f *dto.MetricFamily, newGauge func(resource, product string) G, set func(g *G, state string, v float64)) []G {
	byKey := map[[2]string]*G{}
	var keys [][2]string
	for _, s := range samples(f) {
		key := [2]string{s.labels["resource"], s.labels["product"]}
		g := byKey[key]
		if g == nil {
			v := newGauge(key[0], key[1])
			g = &v
			byKey[key] = g
			keys = append(keys, key)
		}
		set(g, s.labels["state"], s.value)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	out := make([]G, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out
}

type sample struct {
	labels map[string]string
	value  float64
}

// samples flattens the gauges and counters of a family (nil: none).
func samples(f *dto.MetricFamily) []sample {
	if f == nil {
		return nil
	}
	var out []sample
	for _, m := range f.GetMetric() {
		s := sample{labels: map[string]string{}}
		for _, l := range m.GetLabel() {
			s.labels[l.GetName()] = l.GetValue()
		}
		switch {
		case m.GetGauge() != nil:
			s.value = m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			s.value = m.GetCounter().GetValue()
		default:
			continue
		}
		out = append(out, s)
	}
	return out
}

func printDevicefitMetrics(out io.Writer, m *devicefitMetrics, url string) {
	fmt.Fprintf(out, "\nDevices as the scheduler's metrics count them (%s/metrics, devicefit_devices):\n", url)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tPRODUCT\tALLOCATABLE\tALLOCATED\tFREE\tSTRANDED\tPLACED PODS")
	for _, g := range m.devices {
		fmt.Fprintf(tw, "%s\t%s\t%g\t%g\t%g\t%.2f\t%g\n", g.resource, g.product, g.allocatable, g.allocated, g.free,
			g.stranded, m.placements[g.resource+" "+g.product])
	}
	tw.Flush()
	if len(m.shares) > 0 {
		fmt.Fprintln(out, "Shared devices (devicefit_device_shares, in whole devices):")
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "RESOURCE\tPRODUCT\tUSED\tFREE\tSTRANDED")
		for _, g := range m.shares {
			fmt.Fprintf(tw, "%s\t%s\t%.3g\t%.3g\t%.3g\n", g.resource, g.product, g.used, g.free, g.stranded)
		}
		tw.Flush()
	}
	fmt.Fprintf(out, "Fragmentation (stranded / free):")
	for _, r := range sortedKeys(m.fragmentation) {
		fmt.Fprintf(out, "  %s %.3f", r, m.fragmentation[r])
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Scheduling attempts (profile %s):", schedulerName)
	for _, r := range sortedKeys(m.attempts) {
		fmt.Fprintf(out, "  %s %g", r, m.attempts[r])
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "DeviceFit rejections by reason:")
	if len(m.rejections) == 0 {
		fmt.Fprintf(out, " none")
	}
	for _, r := range sortedKeys(m.rejections) {
		fmt.Fprintf(out, "  %s %g", r, m.rejections[r])
	}
	fmt.Fprintln(out)
}

// checkAgainst compares the devices the metrics count as allocated with the
// devices the bound pods request according to the API server, per resource.
// The product label of the metrics is per resource (a MIG slice has its own),
// so the comparison is by resource.
func (m *devicefitMetrics) checkAgainst(rows []*productRow) []string {
	fromAPI := map[string]float64{}
	for _, r := range rows {
		for name, n := range r.bound {
			fromAPI[string(name)] += float64(n)
		}
	}
	fromMetrics := map[string]float64{}
	for _, g := range m.devices {
		fromMetrics[g.resource] += g.allocated
	}
	var problems []string
	for _, r := range sortedKeys(fromAPI) {
		if math.Abs(fromAPI[r]-fromMetrics[r]) > 0 {
			problems = append(problems, fmt.Sprintf("%s: %g devices bound according to the API server, %g allocated according to devicefit_devices",
				r, fromAPI[r], fromMetrics[r]))
		}
	}
	return problems
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

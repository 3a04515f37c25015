package replay

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// syntheticResult is a replay result with the named policies, each arriving
// up to arrivedTo percent, for laying out charts without replaying.
func syntheticResult(arrivedTo int, names ...string) *Result {
	res := &Result{}
	for i, name := range names {
		p := &PolicyResult{Name: name}
		for pct := 0; pct <= arrivedTo; pct++ {
			alloc := min(float64(pct), 100-float64(i)*3.33)
			p.Points = append(p.Points, Point{ArrivedPct: float64(pct), AllocatedPct: alloc})
		}
		p.Final = p.Points[len(p.Points)-1]
		res.Policies = append(res.Policies, p)
	}
	return res
}

// TestChartTextDoesNotOverlap lays out charts with one to six policies and
// short, long, overlong and non-Latin names: no two texts (title, tick
// labels, axis titles, legend entries with their swatches) may share a
// pixel, and each must be inside the canvas.
func TestChartTextDoesNotOverlap(t *testing.T) {
	builtin := []string{"default", "mostallocated", "devicefit", "devicefit-shares", "fgd", "binpack"}
	long := []string{
		"default-profile-with-a-long-name", "mostallocated-requested-to-capacity-ratio",
		"devicefit-scarcity-weight-200", "devicefit-no-prescreen-all-nodes", "fgd-tuned", "another-profile",
	}
	type chartCase struct {
		name      string
		names     []string
		arrivedTo int
		title     string
	}
	tests := []chartCase{
		{name: "shipped three", names: builtin[:3], arrivedTo: 130, title: "openb_pod_list_multigpu50.csv on openb_node_list_gpu_node.csv, round-up, tune 1.3, shuffle seed 42"},
		{name: "overlong title", names: builtin[:2], arrivedTo: 130, title: strings.Repeat("openb_pod_list_gpuspec10.csv ", 12)},
		{name: "not at 100% yet", names: builtin[:4], arrivedTo: 60, title: "short"},
		{name: "name wider than the canvas", names: []string{strings.Repeat("W", 200), "default"}, arrivedTo: 120, title: "t"},
		{name: "non-Latin names", names: []string{"調度器デフォルト", "ГПУ-упаковка", "devicefit"}, arrivedTo: 120, title: "混合"},
	}
	for n := 1; n <= 6; n++ {
		tests = append(tests,
			chartCase{name: fmt.Sprintf("%d built-in", n), names: builtin[:n], arrivedTo: 120, title: "built-in policies"},
			chartCase{name: fmt.Sprintf("%d long", n), names: long[:n], arrivedTo: 125, title: "long policy names"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := layoutChart(syntheticResult(tc.arrivedTo, tc.names...), tc.title)
			var legend []string
			for _, it := range c.texts {
				if it.swatch != "" {
					legend = append(legend, it.text)
				}
			}
			if len(legend) != len(tc.names) {
				t.Fatalf("%d legend entries, want %d: %q", len(legend), len(tc.names), legend)
			}
			canvas := box{x0: 0, y0: 0, x1: c.width, y1: c.height}
			for i, a := range c.texts {
				ab := a.box()
				if ab.x0 < canvas.x0 || ab.y0 < canvas.y0 || ab.x1 > canvas.x1 || ab.y1 > canvas.y1 {
					t.Errorf("%q at %+v leaves the %gx%g canvas", a.text, ab, c.width, c.height)
				}
				for _, b := range c.texts[i+1:] {
					if bb := b.box(); ab.overlaps(bb) {
						t.Errorf("%q at %+v overlaps %q at %+v", a.text, ab, b.text, bb)
					}
				}
			}
		})
	}
}

func TestTextBox(t *testing.T) {
	// "00" is 2 × 556/1000 em; at 10 px and the 15% margin, 12.788 px.
	const w = 2 * 0.556 * 10 * sansWidthMargin
	tests := []struct {
		name string
		item textItem
		want box
	}{
		{name: "start", item: textItem{x: 100, y: 50, size: 10, anchor: "start", text: "00"}, want: box{100, 42.4, 100 + w, 52.4}},
		{name: "middle", item: textItem{x: 100, y: 50, size: 10, anchor: "middle", text: "00"}, want: box{100 - w/2, 42.4, 100 + w/2, 52.4}},
		{name: "end", item: textItem{x: 100, y: 50, size: 10, anchor: "end", text: "00"}, want: box{100 - w, 42.4, 100, 52.4}},
		{name: "vertical middle", item: textItem{x: 100, y: 50, size: 10, anchor: "middle", vertical: true, text: "00"}, want: box{92.4, 50 - w/2, 102.4, 50 + w/2}},
		{name: "legend swatch", item: textItem{x: 100, y: 50, size: 10, anchor: "start", text: "00", swatch: "red"}, want: box{100, 42.4, 100 + swatchWidth + swatchGap + w, 52.4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.item.box(), cmp.AllowUnexported(box{}), cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
				t.Errorf("box (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFitText(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		width float64
		want  string
	}{
		{name: "fits", text: "devicefit", width: 100, want: "devicefit"},
		{name: "cut", text: "devicefit", width: textWidth("devi…", fontSize), want: "devi…"},
		{name: "cut between runes", text: "デフォルト", width: textWidth("デフ…", fontSize) + 1, want: "デフ…"},
		{name: "nothing fits", text: "devicefit", width: 1, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fitText(tc.text, fontSize, tc.width)); diff != "" {
				t.Errorf("fitText (-want,+got):\n%s", diff)
			}
		})
	}
}

package replay

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// palette holds the line colours of the chart, one per policy in order.
var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// panel is one plot area of the chart.
type panel struct {
	x, y, w, h             float64 // pixels
	xmin, xmax, ymin, ymax float64 // data
}

func (p panel) px(x float64) float64 { return p.x + (x-p.xmin)/(p.xmax-p.xmin)*p.w }
func (p panel) py(y float64) float64 { return p.y + p.h - (y-p.ymin)/(p.ymax-p.ymin)*p.h }

// WriteSVG draws allocated % against arrived % for every policy, like
// Fig. 7 of the FGD paper: the whole replay on the left, and on the right a
// zoom on arrived >= 80%, where the policies part. The dashed line is the
// ideal (everything that arrived is allocated, up to 100%).
func WriteSVG(w io.Writer, res *Result, title string) error {
	const width, height = 960.0, 470.0
	xmax := 10.0
	for _, p := range res.Policies {
		xmax = math.Max(xmax, math.Ceil(p.Final.ArrivedPct/10)*10)
	}
	zoomFrom := math.Min(80, xmax-10)
	ylo := 100.0
	for _, p := range res.Policies {
		for _, pt := range p.Points {
			if pt.ArrivedPct >= zoomFrom {
				ylo = math.Min(ylo, pt.AllocatedPct)
			}
		}
	}
	ylo = math.Max(0, math.Floor((ylo-1)/5)*5)
	left := panel{x: 60, y: 50, w: 380, h: 340, xmin: 0, xmax: xmax, ymin: 0, ymax: 100}
	right := panel{x: 530, y: 50, w: 380, h: 340, xmin: zoomFrom, xmax: xmax, ymin: ylo, ymax: 100}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%g" y="24" text-anchor="middle" font-size="15">%s</text>`+"\n", width/2, html.EscapeString(title))
	for _, p := range []panel{left, right} {
		axes(&b, p)
		// Ideal: allocated = min(arrived, 100).
		ideal := [][2]float64{{p.xmin, math.Min(p.xmin, 100)}}
		if p.xmin < 100 && p.xmax > 100 {
			ideal = append(ideal, [2]float64{100, 100})
		}
		ideal = append(ideal, [2]float64{p.xmax, math.Min(p.xmax, 100)})
		polyline(&b, p, ideal, "#999999", `stroke-dasharray="4 4"`)
		for i, pol := range res.Policies {
			var pts [][2]float64
			for _, pt := range pol.Points {
				if pt.ArrivedPct >= p.xmin {
					pts = append(pts, [2]float64{pt.ArrivedPct, pt.AllocatedPct})
				}
			}
			pts = append(pts, [2]float64{pol.Final.ArrivedPct, pol.Final.AllocatedPct})
			polyline(&b, p, pts, palette[i%len(palette)], "")
		}
	}
	// Legend under the panels, with the allocation at 100% arrived.
	for i, pol := range res.Policies {
		x := 60 + float64(i%4)*220
		y := 435 + float64(i/4)*18
		label := pol.Name
		if pt, ok := pol.At(100); ok {
			label += fmt.Sprintf(" (%.2f%% at 100%% arrived)", pt.AllocatedPct)
		}
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2.5"/>`, x, y-4, x+22, y-4, palette[i%len(palette)])
		fmt.Fprintf(&b, `<text x="%g" y="%g">%s</text>`+"\n", x+28, y, html.EscapeString(label))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func axes(b *strings.Builder, p panel) {
	fmt.Fprintf(b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", p.x, p.y, p.w, p.h)
	for _, t := range ticks(p.xmin, p.xmax) {
		x := p.px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#e5e5e5"/>`, x, p.y, x, p.y+p.h)
		fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="middle">%g</text>`+"\n", x, p.y+p.h+16, t)
	}
	for _, t := range ticks(p.ymin, p.ymax) {
		y := p.py(t)
		fmt.Fprintf(b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#e5e5e5"/>`, p.x, y, p.x+p.w, y)
		fmt.Fprintf(b, `<text x="%g" y="%.1f" text-anchor="end">%g</text>`+"\n", p.x-6, y+4, t)
	}
	fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="middle">arrived device demand (%% of capacity)</text>`+"\n", p.x+p.w/2, p.y+p.h+34)
	fmt.Fprintf(b, `<text transform="translate(%g %g) rotate(-90)" text-anchor="middle">allocated devices (%%)</text>`+"\n", p.x-40, p.y+p.h/2)
}

// ticks returns round values between lo and hi, about five to ten of them.
func ticks(lo, hi float64) []float64 {
	span := hi - lo
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 20, 25, 50} {
		step = s
		if span/s <= 10 {
			break
		}
	}
	var out []float64
	for t := math.Ceil(lo/step) * step; t <= hi+1e-9; t += step {
		out = append(out, t)
	}
	return out
}

func polyline(b *strings.Builder, p panel, pts [][2]float64, colour, extra string) {
	var coords []string
	for _, pt := range pts {
		y := math.Max(p.ymin, math.Min(p.ymax, pt[1]))
		coords = append(coords, fmt.Sprintf("%.1f,%.1f", p.px(pt[0]), p.py(y)))
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2" %s/>`+"\n", strings.Join(coords, " "), colour, extra)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

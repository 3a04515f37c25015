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

// Geometry of the chart, in px. The panels sit at fixed places; what is
// below them (tick labels, axis titles, legend rows) is stacked from measured
// text, and the canvas grows with the legend.
const (
	chartWidth    = 960.0
	chartMargin   = 20.0 // between any text and the canvas edge
	fontSize      = 12.0
	titleSize     = 15.0
	minTitleSize  = 10.0
	swatchWidth   = 22.0
	swatchGap     = 6.0  // between a legend swatch and its label
	legendGap     = 24.0 // between two legend entries of a row
	legendRowStep = 20.0
)

// textItem is one line of text of the chart, anchored at (x, y) on its
// baseline as SVG's <text> is.
type textItem struct {
	x, y   float64
	size   float64
	anchor string // start, middle or end
	// vertical text is rotated by -90° about (x, y), reading upwards.
	vertical bool
	text     string
	// swatch, when set, is the colour of a legend line drawn at x, before
	// the text, which then starts at x+swatchWidth+swatchGap.
	swatch string
}

// box is an axis-aligned rectangle on the canvas.
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool {
	return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1
}

// box is where the item's ink can be, with the widths of svgtext.go.
func (t textItem) box() box {
	w := textWidth(t.text, t.size)
	if t.swatch != "" {
		w += swatchWidth + swatchGap
	}
	start := 0.0 // along the baseline, from the anchor
	switch t.anchor {
	case "middle":
		start = -w / 2
	case "end":
		start = -w
	}
	up, down := textAscent*t.size, textDescent*t.size
	if t.vertical {
		return box{x0: t.x - up, y0: t.y - start - w, x1: t.x + down, y1: t.y - start}
	}
	return box{x0: t.x + start, y0: t.y - up, x1: t.x + start + w, y1: t.y + down}
}

// chart is the laid-out figure: the two panels and every text.
type chart struct {
	width, height float64
	panels        []panel
	texts         []textItem
}

// ChartTitle is the chart's title when none is given: the inputs of the
// replay, which its JSON keeps, so that `replay svg` draws a result again
// with the title the replay gave it.
func ChartTitle(in Inputs) string {
	return fmt.Sprintf("%s on %s, %s, tune %g, %s seed %d", in.Pods, in.Nodes, in.Fractional, in.Tune, in.Order, in.Seed)
}

// WriteSVG draws allocated % against arrived % for every policy, like
// Fig. 7 of the FGD paper: the whole replay on the left, and on the right a
// zoom on arrived >= 80%, where the policies part. The dashed line is the
// ideal (everything that arrived is allocated, up to 100%).
func WriteSVG(w io.Writer, res *Result, title string) error {
	c := layoutChart(res, title)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="%g">`+"\n", c.width, c.height, c.width, c.height, fontSize)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for _, p := range c.panels {
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
	for _, t := range c.texts {
		writeText(&b, t)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeText(b *strings.Builder, t textItem) {
	x := t.x
	if t.swatch != "" {
		fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2.5"/>`, x, t.y-4, x+swatchWidth, t.y-4, t.swatch)
		x += swatchWidth + swatchGap
	}
	attrs := ""
	if t.anchor != "start" {
		attrs += fmt.Sprintf(` text-anchor="%s"`, t.anchor)
	}
	if t.size != fontSize {
		attrs += fmt.Sprintf(` font-size="%g"`, t.size)
	}
	if t.vertical {
		fmt.Fprintf(b, `<text transform="translate(%g %g) rotate(-90)"%s>%s</text>`+"\n", x, t.y, attrs, html.EscapeString(t.text))
		return
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f"%s>%s</text>`+"\n", x, t.y, attrs, html.EscapeString(t.text))
}

// layoutChart places the panels, the title, the tick labels, the axis titles
// and the legend.
func layoutChart(res *Result, title string) chart {
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
	c := chart{width: chartWidth, panels: []panel{
		{x: 60, y: 50, w: 380, h: 340, xmin: 0, xmax: xmax, ymin: 0, ymax: 100},
		{x: 530, y: 50, w: 380, h: 340, xmin: zoomFrom, xmax: xmax, ymin: ylo, ymax: 100},
	}}

	// A long title (the replay's file names and flags) is set smaller, and
	// cut only if even that does not fit.
	room := chartWidth - 2*chartMargin
	size := titleSize
	for size > minTitleSize && textWidth(title, size) > room {
		size--
	}
	c.texts = append(c.texts, textItem{x: chartWidth / 2, y: 24, size: size, anchor: "middle", text: fitText(title, size, room)})

	bottom := 0.0
	for _, p := range c.panels {
		tickY := p.y + p.h + 16
		for _, t := range ticks(p.xmin, p.xmax) {
			c.texts = append(c.texts, textItem{x: p.px(t), y: tickY, size: fontSize, anchor: "middle", text: fmt.Sprintf("%g", t)})
		}
		for _, t := range ticks(p.ymin, p.ymax) {
			c.texts = append(c.texts, textItem{x: p.x - 6, y: p.py(t) + 4, size: fontSize, anchor: "end", text: fmt.Sprintf("%g", t)})
		}
		// The x title goes one line below the tick labels.
		titleY := tickY + (textDescent+textAscent)*fontSize + 6
		c.texts = append(c.texts,
			textItem{x: p.x + p.w/2, y: titleY, size: fontSize, anchor: "middle", text: "arrived device demand (% of capacity)"},
			textItem{x: p.x - 40, y: p.y + p.h/2, size: fontSize, anchor: "middle", vertical: true, text: "allocated devices (%)"})
		bottom = math.Max(bottom, titleY+textDescent*fontSize)
	}

	// Legend below the axis titles, with the allocation at 100% arrived:
	// entries flow left to right and wrap to a new row when the next one
	// would cross the margin.
	left, right := c.panels[0].x, chartWidth-chartMargin
	x, y := left, bottom+10+textAscent*fontSize
	for i, pol := range res.Policies {
		label := pol.Name
		if pt, ok := pol.At(100); ok {
			label += fmt.Sprintf(" (%.2f%% at 100%% arrived)", pt.AllocatedPct)
		}
		label = fitText(label, fontSize, right-left-swatchWidth-swatchGap)
		item := textItem{x: x, y: y, size: fontSize, anchor: "start", text: label, swatch: palette[i%len(palette)]}
		if w := item.box().x1 - item.box().x0; x > left && x+w > right {
			x, y = left, y+legendRowStep
			item.x, item.y = x, y
		}
		c.texts = append(c.texts, item)
		x = item.box().x1 + legendGap
	}
	c.height = math.Ceil(y + textDescent*fontSize + chartMargin)
	return c
}

func axes(b *strings.Builder, p panel) {
	fmt.Fprintf(b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", p.x, p.y, p.w, p.h)
	for _, t := range ticks(p.xmin, p.xmax) {
		x := p.px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#e5e5e5"/>`+"\n", x, p.y, x, p.y+p.h)
	}
	for _, t := range ticks(p.ymin, p.ymax) {
		y := p.py(t)
		fmt.Fprintf(b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#e5e5e5"/>`+"\n", p.x, y, p.x+p.w, y)
	}
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

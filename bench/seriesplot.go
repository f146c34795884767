package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// The plot's layout: two panels side by side, each an axes box of
// plotW by plotH pixels, and a legend below them.
const (
	plotW, plotH       = 350.0, 215.0
	plotTop            = 30.0
	plotLeft, plotGap  = 55.0, 420.0
	plotWidth          = 840.0
	raftcatColor       = "#d9480f"
	anchorColor        = "#1c7ed6"
	legendTop, legendH = 300.0, 18.0
)

// panel is one chart of the plot: a value of each side at each point.
type panel struct {
	title, unit string
	value       func(r *Result) float64
}

// line is one system's points and how it is drawn.
type line struct {
	name, color string
	results     []*Result
}

// WriteSVG draws the series: commits/s and p99 commit latency against
// clients (a log2 axis), a line per system with its points marked, each
// y axis from 0 to a round number. It needs only a browser to read, and
// GitHub shows it in markdown.
func (s Series) WriteSVG(w io.Writer) error {
	lines := s.lines()
	height := legendTop + legendH*float64(len(lines)) + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", plotWidth, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	panels := []panel{
		{"Throughput", "commits/s", func(r *Result) float64 { return r.CommitsPerSec }},
		{"p99 commit latency", "ms", func(r *Result) float64 { return r.Latency.P99 }},
	}
	for i, p := range panels {
		s.writePanel(&b, plotLeft+float64(i)*plotGap, p, lines)
	}
	for i, l := range lines {
		y := legendTop + legendH*float64(i)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			plotLeft, y, l.color, plotLeft+15, y+9, html.EscapeString(l.name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// lines are raftcat's and, when there is one, the anchor's, named by the
// systems' own names in the first point.
func (s Series) lines() []line {
	rc := line{name: "raftcat", color: raftcatColor}
	an := line{name: s.Anchor, color: anchorColor}
	for _, p := range s.Points {
		rc.results, an.results = append(rc.results, p.Raftcat), append(an.results, p.Anchor)
		if p.Raftcat != nil && rc.name == "raftcat" {
			rc.name = p.Raftcat.System
		}
		if p.Anchor != nil && an.name == s.Anchor {
			an.name = p.Anchor.System
		}
	}
	if s.Anchor == "" {
		return []line{rc}
	}
	return []line{rc, an}
}

// writePanel draws one panel with its left edge at left.
func (s Series) writePanel(b *strings.Builder, left float64, p panel, lines []line) {
	bottom := plotTop + plotH
	fmt.Fprintf(b, `<text x="%.1f" y="18" text-anchor="middle" font-weight="bold">%s</text>`+"\n", left+plotW/2, p.title)
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#444"/>`+"\n", left, bottom, left+plotW, bottom)
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#444"/>`+"\n", left, plotTop, left, bottom)
	top, step := niceScale(maxValue(lines, p.value))
	y := func(v float64) float64 { return bottom - plotH*v/top }
	for i := 0; float64(i)*step <= top+step/2; i++ {
		v := float64(i) * step
		fmt.Fprintf(b, `<text x="%.0f" y="%.2f" text-anchor="end" font-size="10">%s</text>`+"\n", left-5, y(v)+4, tickLabel(v))
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.2f" x2="%.0f" y2="%.2f" stroke="#ddd"/>`+"\n", left, y(v), left+plotW, y(v))
	}
	x := s.xScale(left)
	for _, pt := range s.Points {
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle" font-size="10">%d</text>`+"\n", x(pt.Clients), bottom+15, pt.Clients)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle" font-size="11">clients</text>`+"\n", left+plotW/2, bottom+32)
	mid := plotTop + plotH/2
	fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="middle" font-size="11" transform="rotate(-90 %.0f %.1f)">%s</text>`+"\n",
		left-43, mid, left-43, mid, p.unit)
	for _, l := range lines {
		s.writeLine(b, l, x, func(r *Result) float64 { return y(p.value(r)) })
	}
}

// writeLine draws a system's points, marked, joined by a path; a point
// it has no result for is left out.
func (s Series) writeLine(b *strings.Builder, l line, x func(clients int) float64, y func(r *Result) float64) {
	var path []string
	var marks strings.Builder
	for i, r := range l.results {
		if r == nil {
			continue
		}
		px, py := x(s.Points[i].Clients), y(r)
		path = append(path, fmt.Sprintf("%.1f,%.1f", px, py))
		fmt.Fprintf(&marks, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px, py, l.color)
	}
	if len(path) > 0 {
		fmt.Fprintf(b, `<path d="M%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(path, " L"), l.color)
		b.WriteString(marks.String())
	}
}

// xScale places a client count on a panel's log2 axis, the series'
// smallest count at the left edge and its largest at the right (a lone
// count in the middle).
func (s Series) xScale(left float64) func(clients int) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range s.Points {
		v := math.Log2(float64(max(p.Clients, 1)))
		lo, hi = min(lo, v), max(hi, v)
	}
	return func(clients int) float64 {
		if hi <= lo {
			return left + plotW/2
		}
		return left + plotW*(math.Log2(float64(max(clients, 1)))-lo)/(hi-lo)
	}
}

// maxValue is the largest value any line has.
func maxValue(lines []line, value func(r *Result) float64) float64 {
	m := 0.0
	for _, l := range lines {
		for _, r := range l.results {
			if r != nil {
				m = max(m, value(r))
			}
		}
	}
	return m
}

// niceScale is a y axis from 0 holding m: its top and the step between
// ticks, a step of 1, 2 or 5 times a power of ten giving at most five.
func niceScale(m float64) (top, step float64) {
	if m <= 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return 1, 1
	}
	pow := math.Pow(10, math.Floor(math.Log10(m/5)))
	for _, f := range []float64{1, 2, 5, 10} {
		step = f * pow
		if m/step <= 5 {
			break
		}
	}
	return step * math.Ceil(m/step), step
}

// tickLabel spells a tick's value: whole numbers as such, small steps
// with the decimals they need.
func tickLabel(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

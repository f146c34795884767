package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgParts are what a drawing holds, read back with encoding/xml.
type svgParts struct {
	texts   []string
	strokes []string // of the paths, one per line drawn
	marks   map[string]int
	yTicks  []float64 // the labels of the first panel's y axis, in order
}

// readSVG decodes an SVG strictly, failing the test on malformed XML.
func readSVG(t *testing.T, svg []byte) svgParts {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	d.Strict = true
	p := svgParts{marks: map[string]int{}}
	var inText bool
	var attrs map[string]string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return p
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attrs = map[string]string{}
			for _, a := range el.Attr {
				attrs[a.Name.Local] = a.Value
			}
			inText = el.Name.Local == "text"
			switch el.Name.Local {
			case "path":
				p.strokes = append(p.strokes, attrs["stroke"])
			case "circle":
				p.marks[attrs["fill"]]++
			}
		case xml.CharData:
			if inText {
				p.texts = append(p.texts, string(el))
				if attrs["text-anchor"] == "end" && len(p.strokes) == 0 {
					v, _ := strconv.ParseFloat(string(el), 64)
					p.yTicks = append(p.yTicks, v)
				}
			}
		case xml.EndElement:
			inText = false
		}
	}
}

// seriesOf is a series of two systems with the given commits/s and p99
// at each client count.
func seriesOf(clients []int, rc, pg []float64) Series {
	s := Series{Protocol: "delta", ClientsPerTable: 2, Anchor: "PostgreSQL"}
	for i, n := range clients {
		s.Points = append(s.Points, pointOf(Report{Clients: n, Tables: max(1, n/2), Protocol: "delta",
			Raftcat:             &Result{System: "raftcat", Commits: 10, CommitsPerSec: rc[i], Latency: Latencies{P50: 1, P99: rc[i] / 10}, ServerCPUMsPerCommit: 1.5},
			Postgres:            &Result{System: "postgres (primary + 2 sync replicas, ANY 1)", Commits: 10, CommitsPerSec: pg[i], Latency: Latencies{P50: 2, P99: pg[i] / 10}, ServerCPUMsPerCommit: 1},
			PostgresRoundRatios: []float64{rc[i] / pg[i], rc[i] / pg[i]}}))
	}
	return s
}

// TestSeriesSVGDrawsBothSystems: the plot is well-formed XML with, in
// each of its two panels, a line and a mark per point for raftcat and
// for its anchor, both named in the legend, its axes labelled and the
// y axis from 0 in round steps.
func TestSeriesSVGDrawsBothSystems(t *testing.T) {
	s := seriesOf([]int{1, 8, 32, 64, 128}, []float64{821, 829, 1449, 1475, 1848}, []float64{691, 1235, 1343, 1339, 1268})
	var b bytes.Buffer
	if err := s.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	p := readSVG(t, b.Bytes())
	if want := []string{raftcatColor, anchorColor, raftcatColor, anchorColor}; !slices.Equal(p.strokes, want) {
		t.Errorf("lines drawn in %v, want %v", p.strokes, want)
	}
	if p.marks[raftcatColor] != 10 || p.marks[anchorColor] != 10 {
		t.Errorf("points marked %v, want 10 of each system (5 per panel)", p.marks)
	}
	for _, want := range []string{"Throughput", "p99 commit latency", "commits/s", "ms", "clients", "1", "128",
		"raftcat", "postgres (primary + 2 sync replicas, ANY 1)"} {
		if !slices.Contains(p.texts, want) {
			t.Errorf("no text %q in the plot: %q", want, p.texts)
		}
	}
	if want := []float64{0, 500, 1000, 1500, 2000}; !slices.Equal(p.yTicks, want) {
		t.Errorf("throughput axis ticks %v, want %v", p.yTicks, want)
	}
}

// TestSeriesSVGEscapesNames: a system's name is text, not markup.
func TestSeriesSVGEscapesNames(t *testing.T) {
	s := seriesOf([]int{1}, []float64{3}, []float64{2})
	s.Points[0].Anchor.System = "a <b> & c"
	var b bytes.Buffer
	if err := s.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	if p := readSVG(t, b.Bytes()); !slices.Contains(p.texts, "a <b> & c") {
		t.Fatalf("legend %q", p.texts)
	}
}

// TestNiceScale: the top of a y axis holds the largest value, in at most
// five steps of 1, 2 or 5 times a power of ten.
func TestNiceScale(t *testing.T) {
	for _, c := range []struct{ max, top, step float64 }{
		{1848, 2000, 500}, {545, 600, 200}, {81.34, 100, 20}, {100, 100, 20}, {3, 3, 1}, {0.7, 0.8, 0.2}, {0, 1, 1},
	} {
		if top, step := niceScale(c.max); top != c.top || step != c.step {
			t.Errorf("niceScale(%v) = %v, %v; want %v, %v", c.max, top, step, c.top, c.step)
		}
	}
}

// TestSeriesMarkdown: a row per point, with both sides, the ratio by
// round and the server CPU per commit.
func TestSeriesMarkdown(t *testing.T) {
	md := seriesOf([]int{1, 8}, []float64{821, 1449}, []float64{691, 1235}).Markdown()
	lines := strings.Split(strings.TrimSpace(md), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "| clients | tables | raftcat commits/s | p50 / p99 ms | PostgreSQL commits/s |") {
		t.Fatalf("table:\n%s", md)
	}
	if want := "| 8 | 4 | 1,449 | 1.0 / 145 | 1,235 | 2.0 / 124 | 1.17 (1.17, 1.17) | 1.50 / 1.00 |"; lines[3] != want {
		t.Errorf("row\n%s\nwant\n%s", lines[3], want)
	}
}

// TestSeriesPointOfIcebergSQL: with the Iceberg workload through iceberg-go
// the sides are raftcat's REST catalog and iceberg-go's SQL catalog.
func TestSeriesPointOfIcebergSQL(t *testing.T) {
	rep := Report{Clients: 4, Tables: 2, Protocol: "iceberg",
		Iceberg:               &Result{System: "raftcat (iceberg-go REST)", CommitsPerSec: 300, ServerCPUMsPerCommit: 3},
		IcebergSQL:            &Result{System: "sql-catalog", CommitsPerSec: 200, ServerCPUMsPerCommit: 2},
		IcebergSQLRoundRatios: []float64{1.4, 1.6}}
	p := pointOf(rep)
	if p.Raftcat != rep.Iceberg || p.Anchor != rep.IcebergSQL || p.ThroughputRatio != 1.5 || p.ServerCPURatio != 1.5 ||
		!slices.Equal(p.RoundRatios, rep.IcebergSQLRoundRatios) || anchorName(rep) != "iceberg-go SQL catalog" {
		t.Fatalf("point %+v", p)
	}
}

// TestSeriesTablesFor: two clients per table by default, one table at
// least.
func TestSeriesTablesFor(t *testing.T) {
	sc := SeriesConfig{ClientsPerTable: 2}
	for clients, want := range map[int]int{1: 1, 2: 1, 8: 4, 128: 64} {
		if got := sc.TablesFor(clients); got != want {
			t.Errorf("TablesFor(%d) = %d, want %d", clients, got, want)
		}
	}
}

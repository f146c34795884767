package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/bench"
)

// `raftcat bench series` refuses bad series flags in one line naming the
// flag, with exit 2, before starting anything.
func TestBenchSeriesRefusesBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--series", "1,0"}, `invalid value "1,0" for flag --series: want client counts of 1 or more, increasing`},
		{[]string{"--series", "8,1"}, `invalid value "8,1" for flag --series`},
		{[]string{"--series", "1,8,8"}, `invalid value "1,8,8" for flag --series`},
		{[]string{"--series", "1,x"}, `invalid value "1,x" for flag --series`},
		{[]string{"--series", ""}, `invalid value "" for flag --series`},
		{[]string{"--clients-per-table", "0"}, "--clients-per-table is 1 or more"},
		{[]string{"--clients-per-table", "two"}, `invalid value "two" for --clients-per-table: want a whole number`},
		{[]string{"--protocol", "lance"}, "--protocol is delta or iceberg in a series"},
		{[]string{"--protocol", "iceberg"}, "--protocol iceberg in a series compares iceberg-go on raftcat with iceberg-go's SQL catalog: give --against-postgres"},
		{[]string{"--clients", "4"}, "flag provided but not defined: --clients"},
		{[]string{"--target", "nowhere"}, "raftcat bench series: --target is spread or leader"},
	} {
		var stdout, stderr bytes.Buffer
		code := benchCmd(append([]string{"series", "--out", out}, c.args...), &stdout, &stderr)
		if code != 2 || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, stdout.String(), stderr.String(), c.want)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused series wrote %s (%v)", out, err)
	}
}

// TestBenchSeriesSmoke runs `raftcat bench series` at 1 and 2 clients for
// a second each on the clusters it starts, with authentication and
// transport security on (--secure): the JSON holds both points,
// each with verified commits, the table a row each, and the plot is
// well-formed SVG with raftcat's line in both panels.
func TestBenchSeriesSmoke(t *testing.T) {
	dir := t.TempDir()
	out, plot := filepath.Join(dir, "series.json"), filepath.Join(dir, "series.svg")
	cmd := exec.Command(raftcatBinary(t), "bench", "series", "--series", "1,2", "--duration", "1s", "--warmup", "0s",
		"--secure", "--out", out, "--plot", plot)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("raftcat bench series: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	s := readSeries(t, out)
	if len(s.Points) != 2 || s.Anchor != "" || s.ClientsPerTable != 2 {
		t.Fatalf("series %+v", s)
	}
	for i, want := range []int{1, 2} {
		p := s.Points[i]
		if p.Clients != want || p.Tables != 1 || p.Raftcat == nil || p.Raftcat.Commits == 0 || !p.Raftcat.Verified ||
			p.Raftcat.Errors != 0 || p.Anchor != nil || p.Report.Clients != want || !p.Report.Secure || p.Report.Auth != "token" {
			t.Errorf("point %d: %+v (raftcat %+v)", i, p, p.Raftcat)
		}
	}
	for _, row := range []string{"\n| 1 | 1 | ", "\n| 2 | 1 | "} {
		if !strings.Contains(stdout.String(), row) {
			t.Errorf("no row %q in the table:\n%s", row, stdout.String())
		}
	}
	texts, lines := readSVGFile(t, plot)
	if lines != 2 || !strings.Contains(texts, "commits/s") || !strings.Contains(texts, "clients") || !strings.Contains(texts, "raftcat") {
		t.Errorf("plot with %d lines, texts %q", lines, texts)
	}
}

// TestBenchSeriesAgainstPostgres runs the series at 1 and 2 clients for a
// second each, raftcat with authentication on, against PostgreSQL with
// two synchronous replicas (Debian's
// postgresql package, which CI installs): each point compares both
// systems, by round too, and leaves no PostgreSQL behind; the plot draws
// a line for each in each panel.
func TestBenchSeriesAgainstPostgres(t *testing.T) {
	dir := t.TempDir()
	out, plot := filepath.Join(dir, "series.json"), filepath.Join(dir, "series.svg")
	output, err := exec.Command(raftcatBinary(t), "bench", "series", "--series", "1,2", "--duration", "1s", "--warmup", "0s",
		"--rounds", "2", "--against-postgres", "--auth", "token", "--out", out, "--plot", plot).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench series --against-postgres: %v\n%s", err, output)
	}
	for _, point := range strings.Split(string(output), "bench: series point:")[1:] {
		if left := postgresLeft(t, point); len(left) > 0 {
			t.Fatalf("left after the bench:\n%s", strings.Join(left, "\n"))
		}
	}
	s := readSeries(t, out)
	if len(s.Points) != 2 || s.Anchor != "PostgreSQL" {
		t.Fatalf("series %+v", s)
	}
	for _, p := range s.Points {
		if p.Raftcat == nil || p.Anchor == nil || p.Raftcat.Commits == 0 || p.Anchor.Commits == 0 || !p.Anchor.Verified ||
			p.ThroughputRatio <= 0 || p.ServerCPURatio <= 0 || len(p.RoundRatios) != 2 || p.Report.Auth != "token" {
			t.Fatalf("point %+v", p)
		}
	}
	if !strings.Contains(string(output), "| raftcat / PostgreSQL (by round) |") {
		t.Errorf("no table comparing with PostgreSQL:\n%s", output)
	}
	texts, lines := readSVGFile(t, plot)
	if lines != 4 || !strings.Contains(texts, "postgres (primary + 2 sync replicas, ANY 1)") {
		t.Errorf("plot with %d lines, texts %q", lines, texts)
	}
}

func readSeries(t *testing.T, path string) bench.Series {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s bench.Series
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("series is not JSON: %v\n%s", err, raw)
	}
	return s
}

// readSVGFile decodes an SVG file strictly and returns its texts, one a
// line, and the count of lines (paths) drawn.
func readSVGFile(t *testing.T, path string) (texts string, lines int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	d.Strict = true
	var b strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return b.String(), lines
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "path" {
				lines++
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(el)); s != "" {
				b.WriteString(s + "\n")
			}
		}
	}
}

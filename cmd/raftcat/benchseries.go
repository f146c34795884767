package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/raftcat/raftcat/bench"
)

// clientCounts is the value of --series: client counts, increasing.
type clientCounts []int

func (c *clientCounts) String() string {
	s := make([]string, len(*c))
	for i, n := range *c {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// errClientCounts says what --series wants.
var errClientCounts = errors.New("want client counts of 1 or more, increasing, such as 1,8,32,64,128")

func (c *clientCounts) Set(v string) error {
	var counts clientCounts
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(counts) > 0 && n <= counts[len(counts)-1]) {
			return errClientCounts
		}
		counts = append(counts, n)
	}
	*c = counts
	return nil
}

// runBenchSeries runs `raftcat bench series [flags]`: the commit
// measurement of `raftcat bench` at each client count of --series, as a
// markdown table, JSON and, with --plot, an SVG chart.
func runBenchSeries(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftcat bench series", flag.ContinueOnError)
	o := defineBenchFlags(fs)
	sc := bench.SeriesConfig{Clients: []int{1, 8, 32, 64, 128}}
	fs.Var((*clientCounts)(&sc.Clients), "series", "client counts, one point each, increasing (default 1,8,32,64,128)")
	fs.IntVar(&sc.ClientsPerTable, "clients-per-table", 2, "clients sharing a table: each point commits to max(1, clients / this) tables")
	fs.StringVar(&o.cfg.Protocol, "protocol", "delta", "delta: the Delta commit workload; iceberg (with --against-postgres): the Iceberg workload through iceberg-go on raftcat's REST catalog and on iceberg-go's SQL catalog on PostgreSQL")
	plot := fs.String("plot", "", "also draw the series as SVG to this file: commits/s and p99 against clients, a line per system")
	out := fs.String("out", "bench-series.json", "where to write the machine-readable series")
	if code, ok := parseFlags(fs, args, stdout, stderr, benchSeriesHelp); !ok {
		return code
	}
	if code, ok := wantArgs(fs, 0, "", stderr); !ok {
		return code
	}
	if msg := seriesFlagError(o.cfg, sc); msg != "" {
		return badUsage(fs, stderr, "%s", msg)
	}
	if code, ok := o.resolve(fs, stderr); !ok {
		return code
	}
	// Ctrl-C or SIGTERM cancels the run; the bench then stops the processes
	// it started and removes what it would have removed at its end.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	series, runErr := bench.RunSeries(ctx, o.cfg, sc, stderr)
	if code := writeSeries(series, *out, *plot, stderr); code != 0 {
		return code
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "raftcat bench series:", runErr)
		fmt.Fprintf(stderr, "the points measured written to %s\n", *out)
		return 1
	}
	fmt.Fprint(stdout, series.Markdown())
	fmt.Fprintf(stdout, "series written to %s\n", *out)
	if *plot != "" {
		fmt.Fprintf(stdout, "plot written to %s\n", *plot)
	}
	return 0
}

// seriesFlagError says what is wrong with the flags only a series has,
// or with those a series does not go with.
func seriesFlagError(cfg bench.Config, sc bench.SeriesConfig) string {
	switch {
	case sc.ClientsPerTable < 1:
		return "--clients-per-table is 1 or more"
	case cfg.Protocol != "delta" && cfg.Protocol != "iceberg":
		return "--protocol is delta or iceberg in a series"
	case cfg.Protocol == "iceberg" && !cfg.AgainstPostgres:
		return "--protocol iceberg in a series compares iceberg-go on raftcat with iceberg-go's SQL catalog: give --against-postgres"
	}
	return ""
}

// writeSeries writes the series as JSON to out and, when plot is given,
// as SVG to plot.
func writeSeries(s bench.Series, out, plot string, stderr io.Writer) int {
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(stderr, "raftcat bench series:", err)
		return 1
	}
	if plot == "" || len(s.Points) == 0 {
		return 0
	}
	var svg bytes.Buffer
	if err := s.WriteSVG(&svg); err != nil {
		fmt.Fprintln(stderr, "raftcat bench series:", err)
		return 1
	}
	if err := os.WriteFile(plot, svg.Bytes(), 0o644); err != nil {
		fmt.Fprintln(stderr, "raftcat bench series:", err)
		return 1
	}
	return 0
}

// benchSeriesHelp is the help of `raftcat bench series`.
var benchSeriesHelp = usageText("Usage: raftcat bench series [flags]\n\n" +
	"Measures how the commit path grows with its writers: for each client count N of --series it\n" +
	"runs the measurement 'raftcat bench --clients N --tables T' makes, with every other flag as\n" +
	"given, T being max(1, N / --clients-per-table) so that two clients share a table by default\n" +
	"(one table for one client); --series and --clients-per-table stand in for --clients and\n" +
	"--tables. Each point starts its own three-node cluster (and PostgreSQL or\n" +
	"etcd with --against-postgres or --against-etcd) and stops it before the next, so a point is\n" +
	"the run 'raftcat bench' would make alone; with --dir, point N keeps its data and logs under\n" +
	"clients-N there.\n\n" +
	"With --against-postgres raftcat's Delta API is compared with PostgreSQL's compare-and-swap\n" +
	"on a row, as 'raftcat bench --against-postgres' does; with --protocol iceberg\n" +
	"--against-postgres iceberg-go commits to raftcat's REST catalog and to iceberg-go's SQL\n" +
	"catalog on that PostgreSQL. That other system is the series' anchor (etcd with\n" +
	"--against-etcd alone); without one, raftcat runs alone.\n\n" +
	"At the end it prints a markdown table, a row per point: clients, tables, each side's\n" +
	"commits/s and p50 / p99 commit latency, raftcat's commits/s over the anchor's (by round\n" +
	"with --rounds 2 or more) and each side's server CPU per commit. --out gets the whole series\n" +
	"as JSON: per point the two sides' results, the ratios, and the report 'raftcat bench' would\n" +
	"have written. --plot draws commits/s and p99 against clients (a log2 axis) as SVG, a line\n" +
	"per system, for a browser or a markdown page. If a point fails, the points before it are\n" +
	"written and the command exits 1.\n\n" +
	"The series in docs/performance.md is\n\n" +
	"  raftcat bench series --against-postgres --rounds 2 --duration 6s --plot docs/scaling.svg\n\n")

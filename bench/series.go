package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"
)

// SeriesConfig says at which client counts a series measures.
type SeriesConfig struct {
	// Clients are the client counts, one point each, in order.
	Clients []int
	// ClientsPerTable sets each point's tables: max(1, clients /
	// ClientsPerTable), so that contention per table stays alike along
	// the series.
	ClientsPerTable int
}

// Series is how the commit path grows with its writers: the same
// measurement as Run at each client count, raftcat beside its anchor.
type Series struct {
	StartedAt       time.Time `json:"started_at"`
	Protocol        string    `json:"protocol"`
	ClientsPerTable int       `json:"clients_per_table"`
	// Anchor names the system raftcat is compared with (PostgreSQL,
	// iceberg-go's SQL catalog or etcd), empty without one.
	Anchor string        `json:"anchor,omitempty"`
	Points []SeriesPoint `json:"points"`
}

// SeriesPoint is one client count's measurement. Raftcat and Anchor are
// the two sides compared (with the Iceberg workload through iceberg-go,
// raftcat's REST catalog and iceberg-go's SQL catalog); the ratios are
// raftcat's over the anchor's. Report is the whole run, as `raftcat bench`
// writes it.
type SeriesPoint struct {
	Clients         int       `json:"clients"`
	Tables          int       `json:"tables"`
	Raftcat         *Result   `json:"raftcat"`
	Anchor          *Result   `json:"anchor,omitempty"`
	ThroughputRatio float64   `json:"throughput_ratio,omitempty"`
	P50Ratio        float64   `json:"p50_ratio,omitempty"`
	P99Ratio        float64   `json:"p99_ratio,omitempty"`
	ServerCPURatio  float64   `json:"server_cpu_ratio,omitempty"`
	RoundRatios     []float64 `json:"round_throughput_ratios,omitempty"`
	Report          Report    `json:"report"`
}

// TablesFor is the tables a point of clients writers commit to.
func (sc SeriesConfig) TablesFor(clients int) int {
	return max(1, clients/max(1, sc.ClientsPerTable))
}

// RunSeries runs Run once per client count of sc, with cfg's other
// settings. Each point starts its own cluster (and PostgreSQL or etcd)
// and stops it before the next, so that every point is the run `raftcat
// bench --clients N --tables T` makes; with cfg.Dir set, point N keeps
// its data under clients-N there. On an error it returns the points
// measured so far.
func RunSeries(ctx context.Context, cfg Config, sc SeriesConfig, log io.Writer) (Series, error) {
	s := Series{StartedAt: time.Now().UTC(), Protocol: cfg.Protocol, ClientsPerTable: sc.ClientsPerTable}
	if len(sc.Clients) == 0 || sc.ClientsPerTable < 1 {
		return s, errors.New("bench: a series needs client counts and clients per table >= 1")
	}
	dir := cfg.Dir
	for _, n := range sc.Clients {
		cfg.Clients, cfg.Tables = n, sc.TablesFor(n)
		if dir != "" {
			cfg.Dir = filepath.Join(dir, fmt.Sprintf("clients-%d", n))
		}
		fmt.Fprintf(log, "bench: series point: %d clients over %d tables\n", cfg.Clients, cfg.Tables)
		rep, err := Run(ctx, cfg, log)
		if err != nil {
			return s, fmt.Errorf("%d clients: %w", n, err)
		}
		p := pointOf(rep)
		s.Protocol, s.Anchor = rep.Protocol, anchorName(rep)
		s.Points = append(s.Points, p)
	}
	return s, nil
}

// pointOf takes from a report the two sides a series compares.
func pointOf(rep Report) SeriesPoint {
	p := SeriesPoint{Clients: rep.Clients, Tables: rep.Tables, Raftcat: rep.Raftcat, Report: rep}
	switch {
	case rep.IcebergSQL != nil:
		p.Raftcat, p.Anchor, p.RoundRatios = rep.Iceberg, rep.IcebergSQL, rep.IcebergSQLRoundRatios
	case rep.Postgres != nil:
		p.Anchor, p.RoundRatios = rep.Postgres, rep.PostgresRoundRatios
	case rep.Etcd != nil:
		p.Anchor, p.RoundRatios = rep.Etcd, rep.RoundRatios
	}
	if p.Anchor != nil && p.Raftcat != nil {
		p.ThroughputRatio, p.P50Ratio, p.P99Ratio = compare(*p.Raftcat, *p.Anchor)
		p.ServerCPURatio = ratio(p.Raftcat.ServerCPUMsPerCommit, p.Anchor.ServerCPUMsPerCommit)
	}
	return p
}

// anchorName is what a report compared raftcat with, as a series names it.
func anchorName(rep Report) string {
	switch {
	case rep.IcebergSQL != nil:
		return "iceberg-go SQL catalog"
	case rep.Postgres != nil:
		return "PostgreSQL"
	case rep.Etcd != nil:
		return "etcd"
	}
	return ""
}

// Markdown is the series as a markdown table, a row per point.
func (s Series) Markdown() string {
	anchor := cmp.Or(s.Anchor, "anchor")
	var b strings.Builder
	fmt.Fprintf(&b, "| clients | tables | raftcat commits/s | p50 / p99 ms | %s commits/s | p50 / p99 ms | raftcat / %s (by round) | server CPU ms/commit raftcat / %s |\n",
		anchor, anchor, anchor)
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, p := range s.Points {
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %s | %s |\n", p.Clients, p.Tables,
			commitsCell(p.Raftcat), latencyCell(p.Raftcat), commitsCell(p.Anchor), latencyCell(p.Anchor), p.ratioCell(), p.cpuCell())
	}
	return b.String()
}

// commitsCell is a result's commits/s with thousands separators.
func commitsCell(r *Result) string {
	if r == nil {
		return "–"
	}
	return thousands(int(math.Round(r.CommitsPerSec)))
}

// latencyCell is a result's p50 and p99 in milliseconds.
func latencyCell(r *Result) string {
	if r == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f / %.0f", r.Latency.P50, r.Latency.P99)
}

// ratioCell is the throughput ratio, with each round's in brackets.
func (p SeriesPoint) ratioCell() string {
	if p.Anchor == nil {
		return "–"
	}
	s := fmt.Sprintf("%.2f", p.ThroughputRatio)
	if len(p.RoundRatios) > 0 {
		rounds := make([]string, len(p.RoundRatios))
		for i, r := range p.RoundRatios {
			rounds[i] = fmt.Sprintf("%.2f", r)
		}
		s += " (" + strings.Join(rounds, ", ") + ")"
	}
	return s
}

// cpuCell is both sides' server CPU per commit.
func (p SeriesPoint) cpuCell() string {
	if p.Anchor == nil {
		return fmt.Sprintf("%.2f / –", p.Raftcat.ServerCPUMsPerCommit)
	}
	return fmt.Sprintf("%.2f / %.2f", p.Raftcat.ServerCPUMsPerCommit, p.Anchor.ServerCPUMsPerCommit)
}

// thousands spells n with thousands separators, as the docs' tables do.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

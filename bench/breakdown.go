package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/raftcat/raftcat/internal/metrics"
)

// A Stage is one part of a commit's path, as the nodes' own metrics time
// it: its mean over the measured windows.
type Stage struct {
	Name   string  `json:"name"`
	MeanMs float64 `json:"mean_ms"`
	Count  float64 `json:"count"`
	Note   string  `json:"note,omitempty"`
}

// stageDef reads one stage off the nodes' metrics: the family, the
// labels its series must have, and the unit its sums are in.
type stageDef struct {
	name, family string
	labels       map[string]string
	ms           bool // sums in milliseconds (go-metrics), else seconds
	note         string
}

// commitStages are the stages of a Delta commit sent to any node: the
// node the client reached (relaying it when it does not lead), the
// leader's handling, its proposal (group-commit wait, log write,
// replication, apply) and raft's own timings of those steps.
var commitStages = append([]stageDef{
	{name: "HTTP commit at the node the client reached", family: "raftcat_http_request_duration_seconds",
		labels: map[string]string{"protocol": "delta", "method": "POST", "forwarded": "false"}, note: "includes the relay hop when that node follows"},
	{name: "HTTP commit on the leader, relayed", family: "raftcat_http_request_duration_seconds",
		labels: map[string]string{"protocol": "delta", "method": "POST", "forwarded": "true"}, note: "parse, bind, propose, render"},
	{name: "HTTP load at the node the client reached", family: "raftcat_http_request_duration_seconds",
		labels: map[string]string{"protocol": "delta", "method": "GET", "forwarded": "false"}},
	{name: "HTTP load on the leader, relayed", family: "raftcat_http_request_duration_seconds",
		labels: map[string]string{"protocol": "delta", "method": "GET", "forwarded": "true"}},
}, proposeStages...)

// proposeStages are a commit's proposal on the leader and raft's steps,
// the same for every protocol.
var proposeStages = []stageDef{
	{name: "propose (leader)", family: "raftcat_propose_duration_seconds", labels: map[string]string{"outcome": "applied"},
		note: "applied commands: group-commit wait to result"},
	{name: "group-commit wait (leader)", family: "raftcat_group_commit_wait_seconds"},
	{name: "log write (leader)", family: "raftcat_raft_leader_dispatchLog", ms: true, note: "its sync runs while AppendEntries are out"},
	{name: "log sync (each node)", family: "raftcat_raft_log_sync_seconds"},
	{name: "acceptance held for the leader's sync", family: "raftcat_raft_leader_sync_wait_seconds", note: "per AppendEntries answer"},
	{name: "AppendEntries round trip (leader to a follower)", family: "raftcat_raft_replication_appendEntries_rpc", ms: true, note: "the follower's log write and fsync included"},
	{name: "log write with fsync (follower)", family: "raftcat_raft_rpc_appendEntries_storeLogs", ms: true},
	{name: "dispatch to commit (leader)", family: "raftcat_raft_commitTime", ms: true},
	{name: "apply a batch (each node)", family: "raftcat_raft_fsm_applyBatch", ms: true},
}

// icebergStages are the stages of an Iceberg commit through the REST
// catalog: the HTTP commit where the client reached and on the leader,
// the leader's own stages of building it (raftcat_write_stage_seconds),
// and the proposal and raft's steps as for Delta.
var icebergStages = append([]stageDef{
	{name: "HTTP commit at the node the client reached", family: "raftcat_http_request_duration_seconds",
		labels: map[string]string{"protocol": "iceberg", "method": "POST", "forwarded": "false"}, note: "includes the relay hop when that node follows"},
	{name: "HTTP commit on the leader, relayed", family: "raftcat_http_request_duration_seconds",
		labels: map[string]string{"protocol": "iceberg", "method": "POST", "forwarded": "true"}},
	{name: "HTTP load at the node the client reached", family: "raftcat_http_request_duration_seconds",
		labels: map[string]string{"protocol": "iceberg", "method": "GET", "forwarded": "false"}},
}, append(icebergWriteStages(), proposeStages...)...)

// icebergWriteStages are the leader's stages of building an Iceberg
// commit, as httpapi/iceberg names them.
func icebergWriteStages() []stageDef {
	var out []stageDef
	for _, st := range []struct{ name, note string }{
		{"decode", "requirements and updates from JSON"}, {"read base", "current metadata, cached"},
		{"requirements", ""}, {"update", "iceberg-go applies the updates and builds the metadata"},
		{"encode", "the metadata to JSON"}, {"file write", "create-only, synced"}, {"render", "the answer"},
	} {
		out = append(out, stageDef{name: "iceberg " + st.name + " (leader)", family: "raftcat_write_stage_seconds",
			labels: map[string]string{"protocol": "iceberg", "stage": st.name}, note: st.note})
	}
	return out
}

// metricsSnapshot is every node's metrics at one moment.
type metricsSnapshot []map[string]*dto.MetricFamily

// scrapeAll reads /metrics from every node with client c.
func scrapeAll(ctx context.Context, c *http.Client, urls []string) (metricsSnapshot, error) {
	out := make(metricsSnapshot, len(urls))
	for i, u := range urls {
		fams, err := scrape(ctx, c, u)
		if err != nil {
			return nil, err
		}
		out[i] = fams
	}
	return out, nil
}

func scrape(ctx context.Context, c *http.Client, base string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", base, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
}

// breakdown is the mean of every stage between two snapshots, pooled
// over the nodes (their sums over their counts).
func breakdown(defs []stageDef, before, after metricsSnapshot) []Stage {
	var out []Stage
	for _, d := range defs {
		sum, count := d.total(after)
		s0, c0 := d.total(before)
		sum, count = sum-s0, count-c0
		st := Stage{Name: d.name, Count: count, Note: d.note}
		if count > 0 {
			st.MeanMs = sum / count
			if !d.ms {
				st.MeanMs *= 1000
			}
		}
		out = append(out, st)
	}
	return out
}

// total sums the stage's series over every node.
func (d stageDef) total(snap metricsSnapshot) (sum, count float64) {
	for _, fams := range snap {
		for _, m := range fams[d.family].GetMetric() {
			if !metrics.HasLabels(m, d.labels) {
				continue
			}
			switch {
			case m.Histogram != nil:
				sum, count = sum+m.Histogram.GetSampleSum(), count+float64(m.Histogram.GetSampleCount())
			case m.Summary != nil:
				sum, count = sum+m.Summary.GetSampleSum(), count+float64(m.Summary.GetSampleCount())
			}
		}
	}
	return sum, count
}

// writeBreakdown prints the stages as a table; with off (the same
// stages on the cluster without authentication), side by side.
func writeBreakdown(w io.Writer, stages, off []Stage, what string) {
	if len(off) != len(stages) {
		off = nil
	}
	title := "where a commit's time goes (nodes' metrics)"
	if off == nil {
		fmt.Fprintf(w, "  %-50s %9s %9s\n", title, "mean ms", "count")
	} else {
		fmt.Fprintf(w, "  %-50s %9s %9s %9s\n", title, what+" on", what+" off", "count")
	}
	for i, s := range stages {
		line := fmt.Sprintf("  %-50s %9.3f %9.0f", s.Name, s.MeanMs, s.Count)
		if off != nil {
			line = fmt.Sprintf("  %-50s %9.3f %9.3f %9.0f", s.Name, s.MeanMs, off[i].MeanMs, s.Count)
		}
		if s.Note != "" {
			line += "  (" + s.Note + ")"
		}
		fmt.Fprintln(w, line)
	}
}

// breakdownStart scrapes the raftcat nodes before the rounds; nil when
// there is no breakdown to take (no cluster, another protocol or client
// shares the cluster, or the nodes serve no metrics).
func breakdownStart(ctx context.Context, cfg Config, rc *raftcatSystem, log io.Writer) metricsSnapshot {
	if rc == nil || (cfg.Protocol != "" && cfg.Protocol != "delta") || cfg.AgainstLean {
		return nil
	}
	snap, err := scrapeAll(ctx, rc.http, rc.urls)
	if err != nil {
		fmt.Fprintf(log, "bench: no breakdown of the commit path: %v\n", err)
		return nil
	}
	return snap
}

// breakdownEnd scrapes the nodes again and returns the stages' means.
func breakdownEnd(ctx context.Context, rc *raftcatSystem, before metricsSnapshot, log io.Writer) []Stage {
	if before == nil {
		return nil
	}
	after, err := scrapeAll(ctx, rc.http, rc.urls)
	if err != nil {
		fmt.Fprintf(log, "bench: no breakdown of the commit path: %v\n", err)
		return nil
	}
	return breakdown(commitStages, before, after)
}

// icebergBreakdown is breakdownEnd for the Iceberg commit path.
func icebergBreakdown(ctx context.Context, rc *raftcatSystem, before metricsSnapshot, log io.Writer) []Stage {
	if before == nil {
		return nil
	}
	after, err := scrapeAll(ctx, rc.http, rc.urls)
	if err != nil {
		fmt.Fprintf(log, "bench: no breakdown of the Iceberg commit path: %v\n", err)
		return nil
	}
	return breakdown(icebergStages, before, after)
}

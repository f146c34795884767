package bench

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// metricsAt is one node's metrics: a seconds histogram with a series the
// stage must ignore, and a go-metrics summary in milliseconds.
func metricsAt(propose, refused, fsync string) string {
	return `# TYPE raftcat_propose_duration_seconds histogram
raftcat_propose_duration_seconds_bucket{outcome="applied",le="+Inf"} ` + propose + `
raftcat_propose_duration_seconds_sum{outcome="applied"} ` + propose + `e-3
raftcat_propose_duration_seconds_count{outcome="applied"} ` + propose + `
raftcat_propose_duration_seconds_bucket{outcome="refused",le="+Inf"} ` + refused + `
raftcat_propose_duration_seconds_sum{outcome="refused"} 100
raftcat_propose_duration_seconds_count{outcome="refused"} ` + refused + `
# TYPE raftcat_raft_leader_dispatchLog summary
raftcat_raft_leader_dispatchLog_sum ` + fsync + `
raftcat_raft_leader_dispatchLog_count ` + fsync + `
`
}

func TestBreakdownMeansBetweenSnapshots(t *testing.T) {
	before := metricsSnapshot{parseMetrics(t, metricsAt("10", "1", "5")), parseMetrics(t, metricsAt("0", "0", "0"))}
	after := metricsSnapshot{parseMetrics(t, metricsAt("30", "9", "15")), parseMetrics(t, metricsAt("20", "0", "0"))}
	stages := map[string]Stage{}
	for _, s := range breakdown(commitStages, before, after) {
		stages[s.Name] = s
	}
	// 40 applied proposals of 1 ms each (the refused ones left out), and
	// 10 log writes of 1 ms (a summary already in milliseconds).
	if p := stages["propose (leader)"]; p.Count != 40 || p.MeanMs < 0.999 || p.MeanMs > 1.001 {
		t.Errorf("propose: %+v", p)
	}
	if f := stages["log write (leader)"]; f.Count != 10 || f.MeanMs != 1 {
		t.Errorf("log write: %+v", f)
	}
	if s := stages["group-commit wait (leader)"]; s.Count != 0 || s.MeanMs != 0 {
		t.Errorf("a stage without samples: %+v", s)
	}
}

// The Iceberg breakdown reads the leader's stages of building a commit
// by their stage label, and the proposal as Delta's does.
func TestIcebergBreakdownReadsTheWriteStages(t *testing.T) {
	at := func(n string) string {
		return `# TYPE raftcat_write_stage_seconds histogram
raftcat_write_stage_seconds_bucket{protocol="iceberg",stage="update",le="+Inf"} ` + n + `
raftcat_write_stage_seconds_sum{protocol="iceberg",stage="update"} ` + n + `e-3
raftcat_write_stage_seconds_count{protocol="iceberg",stage="update"} ` + n + `
raftcat_write_stage_seconds_bucket{protocol="iceberg",stage="encode",le="+Inf"} 0
raftcat_write_stage_seconds_sum{protocol="iceberg",stage="encode"} 0
raftcat_write_stage_seconds_count{protocol="iceberg",stage="encode"} 0
` + metricsAt(n, "0", "0")
	}
	stages := map[string]Stage{}
	for _, s := range breakdown(icebergStages, metricsSnapshot{parseMetrics(t, at("5"))}, metricsSnapshot{parseMetrics(t, at("25"))}) {
		stages[s.Name] = s
	}
	if u := stages["iceberg update (leader)"]; u.Count != 20 || u.MeanMs < 0.999 || u.MeanMs > 1.001 {
		t.Errorf("update: %+v", u)
	}
	if e := stages["iceberg encode (leader)"]; e.Count != 0 {
		t.Errorf("encode: %+v", e)
	}
	if p := stages["propose (leader)"]; p.Count != 20 {
		t.Errorf("propose: %+v", p)
	}
}

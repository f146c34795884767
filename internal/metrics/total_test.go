package metrics_test

import (
	"testing"

	armon "github.com/armon/go-metrics"
	gometrics "github.com/hashicorp/go-metrics"
	dto "github.com/prometheus/client_model/go"

	"github.com/raftcat/raftcat/internal/metrics"
)

// Counters that raft, memberlist and the raft log store report through
// either go-metrics module are Prometheus counters named with _total;
// gauges and timers keep their names.
func TestGoMetricsCountersEndInTotal(t *testing.T) {
	reg := metrics.Process("test")
	gometrics.IncrCounter([]string{"raft", "state", "follower"}, 1)
	gometrics.IncrCounterWithLabels([]string{"memberlist", "tcp", "sent"}, 3, []gometrics.Label{{Name: "k", Value: "v"}})
	armon.IncrCounter([]string{"raft", "boltdb", "txn"}, 2)
	gometrics.SetGauge([]string{"raft", "peers"}, 3)
	gometrics.AddSample([]string{"raft", "commitTime"}, 1.5)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]dto.MetricType{}
	for _, f := range families {
		types[f.GetName()] = f.GetType()
	}
	for name, want := range map[string]dto.MetricType{
		"raftcat_raft_state_follower_total": dto.MetricType_COUNTER,
		"raftcat_memberlist_tcp_sent_total": dto.MetricType_COUNTER,
		"raftcat_raft_boltdb_txn_total":     dto.MetricType_COUNTER,
		"raftcat_raft_peers":                dto.MetricType_GAUGE,
		"raftcat_raft_commitTime":           dto.MetricType_SUMMARY,
	} {
		if got, ok := types[name]; !ok || got != want {
			t.Errorf("%s: exposed %v (type %v), want type %v", name, ok, got, want)
		}
	}
	for _, old := range []string{"raftcat_raft_state_follower", "raftcat_memberlist_tcp_sent", "raftcat_raft_boltdb_txn"} {
		if _, ok := types[old]; ok {
			t.Errorf("%s is exposed without _total", old)
		}
	}
}

package metrics

import (
	armon "github.com/armon/go-metrics"
	gometrics "github.com/hashicorp/go-metrics"
)

// go-metrics counters (raft's raft.apply, raft.state.follower,
// memberlist's memberlist.tcp.sent...) reach the Prometheus sinks under
// their own key, which the sinks flatten into the metric name: a counter
// would be exposed without Prometheus's _total suffix. The sinks below
// add "total" as a last key part to every counter, so that
// raft.state.follower is exposed as raftcat_raft_state_follower_total;
// gauges and samples (timers) keep their names.

// withTotal returns key with "total" appended, in a new slice.
func withTotal(key []string) []string {
	return append(key[:len(key):len(key)], "total")
}

// totalSink is hashicorp/go-metrics' sink naming counters with _total.
type totalSink struct{ gometrics.MetricSink }

func (s totalSink) IncrCounter(key []string, val float32) {
	s.MetricSink.IncrCounter(withTotal(key), val)
}

func (s totalSink) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.MetricSink.IncrCounterWithLabels(withTotal(key), val, labels)
}

// SetPrecisionGauge and SetPrecisionGaugeWithLabels keep the wrapped
// sink's precision gauges (go-metrics looks for them on the sink).
func (s totalSink) SetPrecisionGauge(key []string, val float64) {
	s.SetPrecisionGaugeWithLabels(key, val, nil)
}

func (s totalSink) SetPrecisionGaugeWithLabels(key []string, val float64, labels []gometrics.Label) {
	if p, ok := s.MetricSink.(gometrics.PrecisionGaugeMetricSink); ok {
		p.SetPrecisionGaugeWithLabels(key, val, labels)
		return
	}
	s.MetricSink.SetGaugeWithLabels(key, float32(val), labels)
}

// armonTotalSink is the same for the older armon/go-metrics module, which
// the raft log store reports through.
type armonTotalSink struct{ armon.MetricSink }

func (s armonTotalSink) IncrCounter(key []string, val float32) {
	s.MetricSink.IncrCounter(withTotal(key), val)
}

func (s armonTotalSink) IncrCounterWithLabels(key []string, val float32, labels []armon.Label) {
	s.MetricSink.IncrCounterWithLabels(withTotal(key), val, labels)
}

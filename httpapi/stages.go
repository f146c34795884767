package httpapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A write's time on the leader splits into stages a protocol names (the
// Iceberg commit: decode, read base, requirements, update, encode, file
// write, render); raftcat_write_stage_seconds times each, so that where a
// commit's time goes can be read off the nodes' metrics (raftcat bench
// prints the breakdown). The proposal itself is timed by the cluster.

// stageSeconds is raftcat_write_stage_seconds.
func newStageSeconds(reg prometheus.Registerer) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raftcat_write_stage_seconds",
		Help:    "Time a write spends in each stage of its handling on the node that builds it, by protocol and stage.",
		Buckets: prometheus.ExponentialBuckets(0.00002, 2, 18)}, []string{"protocol", "stage"})
	reg.MustRegister(h)
	return h
}

// Stages names a protocol's stages up front, so that their series exist
// from the start.
func (s *Server) Stages(protocol string, stages ...string) {
	for _, st := range stages {
		s.metrics.stages.WithLabelValues(protocol, st)
	}
}

// Stage starts timing one stage of a write; the returned func ends it.
func (s *Server) Stage(protocol, stage string) func() {
	start := time.Now()
	return func() { s.metrics.stages.WithLabelValues(protocol, stage).Observe(time.Since(start).Seconds()) }
}

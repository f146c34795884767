// Package metrics gathers a node's Prometheus metrics: the node's own
// registry (HTTP, cluster, storage, state machine), and the process's:
// the Go runtime, the process, build info, and the go-metrics that raft,
// memberlist and the raft log store report, through Prometheus sinks.
package metrics

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	armon "github.com/armon/go-metrics"
	armonprom "github.com/armon/go-metrics/prometheus"
	gometrics "github.com/hashicorp/go-metrics"
	gometricsprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prefix starts every metric name raftcat defines; raft's and
// memberlist's become raftcat_raft_... and raftcat_memberlist_....
const Prefix = "raftcat"

var (
	processOnce sync.Once
	processReg  *prometheus.Registry
)

// Process returns the process-wide registry, setting it up on first use.
// go-metrics keeps one global sink per process, so nodes running in one
// process (tests) share raft's metrics.
func Process(version string) *prometheus.Registry {
	processOnce.Do(func() {
		processReg = prometheus.NewRegistry()
		processReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			buildInfo(version))
		mustSink(processReg)
	})
	return processReg
}

func buildInfo(version string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + "_build_info",
		Help:        "Always 1: the raftcat version and the Go version it was built with.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()}})
	g.Set(1)
	return g
}

// sinkExpiration drops a go-metrics series not updated for this long: the
// replication series of a server that left, a timer of an idle node.
const sinkExpiration = 5 * time.Minute

// mustSink routes raft's and memberlist's go-metrics (hashicorp's, and
// the older armon module the raft log store still reports through) into
// reg, counters named with _total (total.go).
func mustSink(reg prometheus.Registerer) {
	hs, err := gometricsprom.NewPrometheusSinkFrom(gometricsprom.PrometheusOpts{Registerer: reg,
		Name: Prefix + "_gometrics_sink", Expiration: sinkExpiration})
	if err != nil {
		panic(err)
	}
	cfg := gometrics.DefaultConfig(Prefix)
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	cfg.TimerGranularity = time.Millisecond
	if _, err := gometrics.NewGlobal(cfg, totalSink{hs}); err != nil {
		panic(err)
	}
	as, err := armonprom.NewPrometheusSinkFrom(armonprom.PrometheusOpts{Registerer: reg,
		Name: Prefix + "_armon_sink", Expiration: sinkExpiration})
	if err != nil {
		panic(err)
	}
	acfg := armon.DefaultConfig(Prefix)
	acfg.EnableHostname, acfg.EnableRuntimeMetrics = false, false
	if _, err := armon.NewGlobal(acfg, armonTotalSink{as}); err != nil {
		panic(err)
	}
}

// Handler serves node's metrics and the process's in the Prometheus
// text format; a metric that cannot be gathered is logged to log and
// left out.
func Handler(node prometheus.Gatherer, version string, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{Process(version), node},
		promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: errorLog{log}})
}

// errorLog is promhttp's error logger over slog.
type errorLog struct{ log *slog.Logger }

func (l errorLog) Println(v ...any) { l.log.Warn("gathering metrics", "err", fmt.Sprint(v...)) }

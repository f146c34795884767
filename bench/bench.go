// Package bench measures the commit path the way writers use it: every
// client loads a table, then commits the next version with a precondition,
// reloading and retrying when another writer won the version. The same
// workload runs against raftcat's Delta API and, for comparison, against a
// three-member etcd doing the equivalent compare-and-swap transaction.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Config says what to run.
type Config struct {
	URLs     []string      // an existing raftcat cluster; empty: start one
	Bin      string        // raftcat binary, to start a cluster
	Dir      string        // where started clusters keep their data and logs
	Tables   int           // tables the clients commit to (client i uses table i mod Tables)
	Clients  int           // concurrent sequential clients
	Duration time.Duration // measured time
	Warmup   time.Duration // time run but not measured, before Duration
	Leader   bool          // send every request to the leader instead of spreading over nodes
	// ServeFlags are extra `raftcat serve` flags for a started cluster.
	ServeFlags []string
	// AgainstEtcd also runs the workload on a three-member etcd.
	AgainstEtcd bool
	EtcdBin     string
}

// Report is the machine-readable result of one bench run.
type Report struct {
	StartedAt  time.Time `json:"started_at"`
	Tables     int       `json:"tables"`
	Clients    int       `json:"clients"`
	Target     string    `json:"target"` // spread or leader
	DurationS  float64   `json:"duration_s"`
	WarmupS    float64   `json:"warmup_s"`
	CPUs       int       `json:"cpus"`
	ServeFlags []string  `json:"serve_flags,omitempty"`
	Raftcat    *Result   `json:"raftcat"`
	Etcd       *Result   `json:"etcd,omitempty"`
	// Against etcd: raftcat's commits/s over etcd's (want >= 1.5 at 32
	// clients) and raftcat's p99 over etcd's (want <= 1).
	ThroughputRatio float64 `json:"throughput_ratio,omitempty"`
	P99Ratio        float64 `json:"p99_ratio,omitempty"`
	P50Ratio        float64 `json:"p50_ratio,omitempty"`
}

// system is one store the workload can run against.
type system interface {
	name() string
	// prepare creates the tables and returns per-client committers.
	prepare(ctx context.Context, tables, clients int) ([]committer, error)
	// verify checks every table after the run: its latest version counts
	// every commit a client saw acknowledged, plus at most the commits in
	// flight when the run ended (they may have applied unacknowledged).
	verify(ctx context.Context, clients int) error
	// pids are the server processes, for CPU accounting (none for a
	// cluster given by URL).
	pids() []int
	close()
}

// committer is one sequential writer. commit loads its table's latest
// version and commits the next one, retrying on conflict; it returns how
// many conflicts it saw.
type committer interface {
	commit(ctx context.Context) (conflicts int, err error)
	// requests are the writer's timed loads and commit attempts.
	requests() *requestTimes
}

// requestTimes records how long each of one writer's requests took, by
// kind, so that a commit's latency can be taken apart.
type requestTimes struct {
	loads, attempts timings
}

type timings struct {
	starts []time.Time
	took   []time.Duration
}

// since records a request that started at start and has just finished.
func (t *timings) since(start time.Time) {
	t.starts = append(t.starts, start)
	t.took = append(t.took, time.Since(start))
}

// within returns the durations of the requests that started at or after
// from and finished by until.
func (t *timings) within(from, until time.Time) []time.Duration {
	var out []time.Duration
	for i, s := range t.starts {
		if !s.Before(from) && !s.Add(t.took[i]).After(until) {
			out = append(out, t.took[i])
		}
	}
	return out
}

// tableCounts counts the acknowledged commits of each table.
type tableCounts []atomic.Int64

// check compares each table's latest version with its acknowledged
// commits; clientsPerTable bounds the commits in flight at the end.
func (tc tableCounts) check(latest func(table int) (int64, error), clients int) error {
	perTable := (clients + len(tc) - 1) / len(tc)
	for t := range tc {
		v, err := latest(t)
		if err != nil {
			return err
		}
		acked := tc[t].Load()
		if v < acked || v > acked+int64(perTable) {
			return fmt.Errorf("table %d is at version %d after %d acknowledged commits (up to %d in flight)", t, v, acked, perTable)
		}
	}
	return nil
}

// Run runs the workload on raftcat (and on etcd when asked) and returns
// the report. Progress goes to log.
func Run(ctx context.Context, cfg Config, log io.Writer) (Report, error) {
	if cfg.Tables < 1 || cfg.Clients < 1 || cfg.Duration <= 0 || cfg.Warmup < 0 {
		return Report{}, errors.New("bench: need tables >= 1, clients >= 1, duration > 0, warmup >= 0")
	}
	rep := Report{StartedAt: time.Now().UTC(), Tables: cfg.Tables, Clients: cfg.Clients, Target: "spread",
		DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(), CPUs: runtime.NumCPU(), ServeFlags: cfg.ServeFlags}
	if cfg.Leader {
		rep.Target = "leader"
	}
	if cfg.AgainstEtcd {
		if err := findEtcd(&cfg); err != nil {
			return rep, err
		}
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "raftcat-bench-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	rc, err := openRaftcat(ctx, cfg, log)
	if err != nil {
		return rep, err
	}
	r, err := measure(ctx, rc, cfg, log)
	rc.close()
	if err != nil {
		return rep, err
	}
	rep.Raftcat = &r
	if cfg.AgainstEtcd {
		et, err := startEtcd(ctx, cfg, filepath.Join(cfg.Dir, "etcd"), log)
		if err != nil {
			return rep, err
		}
		e, err := measure(ctx, et, cfg, log)
		et.close()
		if err != nil {
			return rep, err
		}
		rep.Etcd = &e
		rep.ThroughputRatio = ratio(r.CommitsPerSec, e.CommitsPerSec)
		rep.P99Ratio = ratio(r.Latency.P99, e.Latency.P99)
		rep.P50Ratio = ratio(r.Latency.P50, e.Latency.P50)
	}
	return rep, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// sample is one finished client commit.
type sample struct {
	start, end time.Time
	conflicts  int
	err        error
}

// measure runs the clients for warm-up plus duration and summarises the
// commits that started after the warm-up and finished within the window.
func measure(ctx context.Context, sys system, cfg Config, log io.Writer) (Result, error) {
	fmt.Fprintf(log, "bench: %s: creating %d tables\n", sys.name(), cfg.Tables)
	clients, err := sys.prepare(ctx, cfg.Tables, cfg.Clients)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", sys.name(), err)
	}
	fmt.Fprintf(log, "bench: %s: %d clients, %s warm-up, %s measured\n", sys.name(), len(clients), cfg.Warmup, cfg.Duration)
	begin := time.Now()
	from, until := begin.Add(cfg.Warmup), begin.Add(cfg.Warmup+cfg.Duration)
	runCtx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	per := make([][]sample, len(clients))
	cpu := startCPU(sys.pids(), from, until)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				s := sample{start: time.Now()}
				s.conflicts, s.err = c.commit(runCtx)
				s.end = time.Now()
				if s.start.Before(from) || s.end.After(until) {
					continue
				}
				per[i] = append(per[i], s)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	r := summarise(sys.name(), per, cfg.Duration)
	var loads, attempts []time.Duration
	for _, c := range clients {
		loads = append(loads, c.requests().loads.within(from, until)...)
		attempts = append(attempts, c.requests().attempts.within(from, until)...)
	}
	r.LoadLatency, r.AttemptLatency = percentiles(loads), percentiles(attempts)
	if err := sys.verify(ctx, cfg.Clients); err != nil {
		return r, fmt.Errorf("%s: %w", sys.name(), err)
	}
	r.Verified = true
	r.addCPU(cpu.result())
	fmt.Fprintf(log, "bench: %s\n", r.Line())
	return r, nil
}

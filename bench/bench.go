// Package bench measures the commit path the way writers use it: every
// client loads a table, then commits the next version with a precondition,
// reloading and retrying when another writer won the version. The same
// workload runs against raftcat's Delta API and, for comparison, against
// raftcat's Iceberg REST API (a new snapshot asserting the loaded one),
// against a three-member etcd doing the equivalent compare-and-swap
// transaction, and against PostgreSQL with streaming replicas doing the
// compare-and-swap on a row that PostgreSQL-backed catalogs do. An Iceberg
// workload written through iceberg-go compares raftcat's Iceberg REST
// catalog with iceberg-go's SQL catalog on that PostgreSQL.
package bench

import (
	"cmp"
	"context"
	"crypto/tls"
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
	// AgainstPostgres also runs the workload on PostgreSQL (Debian's
	// postgresql package), started from PostgresBinDir (empty: found) as a
	// primary with PostgresReplicas streaming replicas, any one of which
	// must have flushed a commit (0: a lone primary).
	AgainstPostgres  bool
	PostgresBinDir   string
	PostgresReplicas int
	// Rounds splits the measurement into this many windows of Duration
	// each; against etcd, PostgreSQL or Iceberg they alternate between the
	// systems, so that a machine whose speed drifts slows them alike (0 or
	// 1: one window).
	Rounds int
	// Protocol "iceberg" also runs the workload on the same cluster's
	// Iceberg REST API, alternating with the Delta one ("" or "delta":
	// Delta only). With AgainstPostgres, "iceberg" runs the Iceberg
	// workload through iceberg-go instead, on raftcat's REST catalog and on
	// iceberg-go's SQL catalog on the PostgreSQL started, and no Delta.
	Protocol string
	// Auth is how a started cluster authenticates: "none" (or empty), or
	// "token": every node runs with --auth=token, its admin token being
	// Token or a random one, and every request carries it.
	Auth string
	// Token is sent as Authorization: Bearer to the cluster at URLs (and
	// is the admin token of a cluster started with Auth "token").
	Token string
	// AgainstAuthOff also starts a cluster without authentication and
	// runs the workload on it, alternating with the cluster with it (Auth
	// must be "token"): what authentication costs.
	AgainstAuthOff bool
	// Secure starts the cluster with transport security on (TLS, mutual
	// TLS between nodes, encrypted gossip) and authentication (Auth
	// "token"), and beside it the same cluster without transport
	// security, the workload alternating between them: what TLS costs.
	Secure bool
	// TLS is what requests to the cluster at URLs trust (nil: the
	// system's roots).
	TLS *tls.Config
	// Client is the HTTP client raftcat's writers use: ClientLean (or
	// empty) or ClientNetHTTP.
	Client string
	// Balance is how raftcat's writers spread their requests over the
	// nodes: BalanceClient (or empty) or BalanceRequest.
	Balance string
	// AgainstLean also runs the workload on the same cluster with the
	// lean client, each writer keeping to one node, alternating rounds
	// with Client and Balance: what the users' client costs.
	AgainstLean bool
}

// AuthToken is the Auth of a cluster whose API needs a token.
const AuthToken = "token"

// Report is the machine-readable result of one bench run.
type Report struct {
	StartedAt time.Time `json:"started_at"`
	Tables    int       `json:"tables"`
	Clients   int       `json:"clients"`
	Target    string    `json:"target"` // spread or leader
	// LeaderURL is, with --target leader, the raftcat node every request
	// went to: the one that passed GET /readyz?leader.
	LeaderURL  string   `json:"leader_url,omitempty"`
	DurationS  float64  `json:"duration_s"`
	WarmupS    float64  `json:"warmup_s"`
	CPUs       int      `json:"cpus"`
	ServeFlags []string `json:"serve_flags,omitempty"`
	Raftcat    *Result  `json:"raftcat"`
	Etcd       *Result  `json:"etcd,omitempty"`
	// Against etcd: raftcat's commits/s over etcd's (want >= 1.5 at 32
	// clients) and raftcat's p99 over etcd's (want <= 1).
	ThroughputRatio float64 `json:"throughput_ratio,omitempty"`
	P99Ratio        float64 `json:"p99_ratio,omitempty"`
	P50Ratio        float64 `json:"p50_ratio,omitempty"`
	// Rounds is how many alternating windows were measured; with more
	// than one, RoundRatios are each round's throughput ratio (the
	// results above are over all rounds).
	Rounds      int       `json:"rounds"`
	RoundRatios []float64 `json:"round_throughput_ratios,omitempty"`
	// Against PostgreSQL, as against etcd: raftcat's commits/s and
	// latencies over PostgreSQL's, overall and by round. Postgres.System
	// says how it replicates; PostgresVersion is the server's.
	// Breakdown is where raftcat's commits spent their time, from the
	// nodes' own metrics over the measured rounds (Delta only).
	Breakdown []Stage `json:"breakdown,omitempty"`

	Postgres                *Result   `json:"postgres,omitempty"`
	PostgresVersion         string    `json:"postgres_version,omitempty"`
	PostgresThroughputRatio float64   `json:"postgres_throughput_ratio,omitempty"`
	PostgresP50Ratio        float64   `json:"postgres_p50_ratio,omitempty"`
	PostgresP99Ratio        float64   `json:"postgres_p99_ratio,omitempty"`
	PostgresRoundRatios     []float64 `json:"postgres_round_throughput_ratios,omitempty"`
	// Protocol is delta, or iceberg when Iceberg ran beside Delta; then
	// Iceberg is its result and the Iceberg ratios are Iceberg's commits/s
	// and latencies over Delta's (Raftcat), overall and by round.
	Protocol               string    `json:"protocol"`
	Iceberg                *Result   `json:"iceberg,omitempty"`
	IcebergThroughputRatio float64   `json:"iceberg_throughput_ratio,omitempty"`
	IcebergP50Ratio        float64   `json:"iceberg_p50_ratio,omitempty"`
	IcebergP99Ratio        float64   `json:"iceberg_p99_ratio,omitempty"`
	IcebergRoundRatios     []float64 `json:"iceberg_round_throughput_ratios,omitempty"`
	// With Protocol iceberg and AgainstPostgres, both sides run the
	// Iceberg workload through iceberg-go instead: Iceberg is raftcat
	// driven through iceberg-go's REST catalog client (Raftcat, Postgres
	// and the Iceberg ratios above stay empty), IcebergSQL is iceberg-go's
	// SQL catalog on the PostgreSQL the bench starts, and the ratios are
	// raftcat's commits/s, latencies and server CPU per commit over the SQL
	// catalog's, overall and (commits/s) by round.
	IcebergSQL                *Result   `json:"iceberg_sql,omitempty"`
	IcebergSQLThroughputRatio float64   `json:"iceberg_sql_throughput_ratio,omitempty"`
	IcebergSQLP50Ratio        float64   `json:"iceberg_sql_p50_ratio,omitempty"`
	IcebergSQLP99Ratio        float64   `json:"iceberg_sql_p99_ratio,omitempty"`
	IcebergSQLCPURatio        float64   `json:"iceberg_sql_server_cpu_ratio,omitempty"`
	IcebergSQLRoundRatios     []float64 `json:"iceberg_sql_round_throughput_ratios,omitempty"`
	// Auth is token when raftcat's requests carried a token (its started
	// cluster ran with --auth=token), else none. Against a cluster without
	// authentication (AgainstAuthOff), AuthOff is its result and the auth
	// ratios are raftcat's (authentication on) commits/s and latencies
	// over its, overall and by round; AuthOffBreakdown is its commits'
	// breakdown, beside Breakdown.
	Auth                string    `json:"auth"`
	AuthOff             *Result   `json:"auth_off,omitempty"`
	AuthThroughputRatio float64   `json:"auth_throughput_ratio,omitempty"`
	AuthP50Ratio        float64   `json:"auth_p50_ratio,omitempty"`
	AuthP99Ratio        float64   `json:"auth_p99_ratio,omitempty"`
	AuthRoundRatios     []float64 `json:"auth_round_throughput_ratios,omitempty"`
	AuthOffBreakdown    []Stage   `json:"auth_off_breakdown,omitempty"`
	// Secure is set when raftcat's cluster ran with transport security;
	// TLSOff is then the same cluster's result without it, and the TLS
	// ratios are raftcat's (TLS on) commits/s and latencies over its,
	// overall and by round; TLSOffBreakdown is its commits' breakdown.
	Secure             bool      `json:"secure,omitempty"`
	TLSOff             *Result   `json:"tls_off,omitempty"`
	TLSThroughputRatio float64   `json:"tls_throughput_ratio,omitempty"`
	TLSP50Ratio        float64   `json:"tls_p50_ratio,omitempty"`
	TLSP99Ratio        float64   `json:"tls_p99_ratio,omitempty"`
	TLSRoundRatios     []float64 `json:"tls_round_throughput_ratios,omitempty"`
	TLSOffBreakdown    []Stage   `json:"tls_off_breakdown,omitempty"`
	// Client is the HTTP client raftcat's writers used (lean or
	// nethttp) and Balance how their requests were spread over the
	// nodes (client: one node per writer; request: round robin).
	Client  string `json:"client"`
	Balance string `json:"balance"`
	// With AgainstLean, Lean is the result of the lean client keeping
	// to one node per writer on the same cluster, and the lean ratios
	// are raftcat's (Client, Balance) commits/s and latencies over its,
	// overall and by round.
	Lean                *Result   `json:"lean,omitempty"`
	LeanThroughputRatio float64   `json:"lean_throughput_ratio,omitempty"`
	LeanP50Ratio        float64   `json:"lean_p50_ratio,omitempty"`
	LeanP99Ratio        float64   `json:"lean_p99_ratio,omitempty"`
	LeanRoundRatios     []float64 `json:"lean_round_throughput_ratios,omitempty"`
}

// system is one store the workload can run against.
type system interface {
	name() string
	// prepare creates the tables and returns per-client committers.
	prepare(ctx context.Context, tables, clients int) ([]committer, error)
	// verify checks every table after the run: its latest version counts
	// every commit a client saw acknowledged, plus at most the commits in
	// flight when a window ended (they may have applied unacknowledged).
	verify(ctx context.Context, f inFlight) error
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

// inFlight bounds the commits a run may have left applied but
// unacknowledged: each writer, when each window ended, one on each table
// it was committing to. Writer i writes table i mod tables.
type inFlight struct{ writers, windows int }

// perTable is the bound for one of tables tables: the most writers any
// table has, times the windows.
func (f inFlight) perTable(tables int) int { return (f.writers + tables - 1) / tables * f.windows }

// check compares each table's latest version with its acknowledged
// commits, allowing the commits f leaves in flight.
func (tc tableCounts) check(latest func(table int) (int64, error), f inFlight) error {
	perTable := f.perTable(len(tc))
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

// Run runs the workload on raftcat's Delta API (and on its Iceberg REST
// API, on etcd and on PostgreSQL when asked) and returns the report.
// Progress goes to log. Every process and directory it starts is gone when
// it returns, also when ctx is cancelled.
func Run(ctx context.Context, cfg Config, log io.Writer) (Report, error) {
	if cfg.Tables < 1 || cfg.Clients < 1 || cfg.Duration <= 0 || cfg.Warmup < 0 || cfg.Rounds < 0 {
		return Report{}, errors.New("bench: need tables >= 1, clients >= 1, duration > 0, warmup >= 0, rounds >= 0")
	}
	if cfg.Protocol == "" {
		cfg.Protocol = "delta"
	}
	if cfg.Protocol != "delta" && cfg.Protocol != "iceberg" {
		return Report{}, fmt.Errorf("bench: unknown protocol %q (delta or iceberg)", cfg.Protocol)
	}
	if err := cfg.checkAuth(); err != nil {
		return Report{}, err
	}
	if err := cfg.checkClients(); err != nil {
		return Report{}, err
	}
	cfg.Client, cfg.Balance = cmp.Or(cfg.Client, ClientLean), cmp.Or(cfg.Balance, BalanceClient)
	cfg.Rounds = max(cfg.Rounds, 1)
	rep := Report{StartedAt: time.Now().UTC(), Tables: cfg.Tables, Clients: cfg.Clients, Target: "spread",
		DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(), CPUs: runtime.NumCPU(), ServeFlags: cfg.ServeFlags,
		Rounds: cfg.Rounds, Protocol: cfg.Protocol, Client: cfg.Client, Balance: cfg.Balance}
	if cfg.Leader {
		rep.Target = "leader"
	}
	if cfg.Protocol == "iceberg" && cfg.AgainstPostgres && cfg.AgainstEtcd {
		return rep, errors.New("bench: the Iceberg workload against PostgreSQL runs iceberg-go's SQL catalog; run the comparison with etcd apart")
	}
	if cfg.AgainstEtcd {
		if err := findEtcd(&cfg); err != nil {
			return rep, err
		}
	}
	if cfg.AgainstPostgres {
		if err := findPostgres(&cfg); err != nil {
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
		// Run as root, the bench runs PostgreSQL as the user postgres,
		// who must pass through to its directory.
		if cfg.AgainstPostgres && os.Geteuid() == 0 {
			if err := os.Chmod(d, 0o711); err != nil {
				return rep, err
			}
		}
	}
	if cfg.Protocol == "iceberg" && cfg.AgainstPostgres {
		return runIcebergSQL(ctx, cfg, rep, log)
	}
	var runs []*systemRun
	defer func() {
		for _, r := range runs {
			r.sys.close()
		}
	}()
	rc, err := openRaftcat(ctx, cfg, log)
	if err != nil {
		return rep, err
	}
	runs = append(runs, &systemRun{sys: rc})
	rep.Auth = rc.authName()
	etcdAt, pgAt, iceAt, offAt := -1, -1, -1, -1
	if cfg.AgainstEtcd {
		et, err := startEtcd(ctx, cfg, filepath.Join(cfg.Dir, "etcd"), log)
		if err != nil {
			return rep, err
		}
		etcdAt, runs = len(runs), append(runs, &systemRun{sys: et})
	}
	if cfg.AgainstPostgres {
		pg, err := startPostgres(ctx, cfg, filepath.Join(cfg.Dir, "postgres"), log)
		if err != nil {
			return rep, err
		}
		pgAt, runs = len(runs), append(runs, &systemRun{sys: pg})
		rep.PostgresVersion = pg.version
	}
	if cfg.Protocol == "iceberg" {
		iceAt, runs = len(runs), append(runs, &systemRun{sys: &icebergSystem{rc: rc}})
	}
	var off *raftcatSystem
	if offCfg, label, ok := cfg.baseline(); ok {
		if off, err = startRaftcat(ctx, offCfg, label, log); err != nil {
			return rep, err
		}
		offAt, runs = len(runs), append(runs, &systemRun{sys: off})
	}
	leanAt := -1
	if cfg.AgainstLean {
		leanAt, runs = len(runs), append(runs, &systemRun{sys: leanBeside(rc)})
	}
	rep.Secure = cfg.Secure
	offRounds, offBreakdown := &rep.AuthRoundRatios, &rep.AuthOffBreakdown
	if cfg.Secure {
		offRounds, offBreakdown = &rep.TLSRoundRatios, &rep.TLSOffBreakdown
	}
	for _, r := range runs {
		if err := r.prepare(ctx, cfg, log); err != nil {
			return rep, err
		}
	}
	rep.LeaderURL = rc.leaderTarget
	before, beforeOff := breakdownStart(ctx, cfg, rc, log), breakdownStart(ctx, cfg, off, log)
	rounds, err := measure(ctx, cfg, runs, log)
	if err != nil {
		return rep, err
	}
	for _, rates := range rounds {
		if cfg.Rounds > 1 && etcdAt > 0 {
			rep.RoundRatios = append(rep.RoundRatios, ratio(rates[0], rates[etcdAt]))
		}
		if cfg.Rounds > 1 && pgAt > 0 {
			rep.PostgresRoundRatios = append(rep.PostgresRoundRatios, ratio(rates[0], rates[pgAt]))
		}
		if cfg.Rounds > 1 && iceAt > 0 {
			rep.IcebergRoundRatios = append(rep.IcebergRoundRatios, ratio(rates[iceAt], rates[0]))
		}
		if cfg.Rounds > 1 && offAt > 0 {
			*offRounds = append(*offRounds, ratio(rates[0], rates[offAt]))
		}
		if cfg.Rounds > 1 && leanAt > 0 {
			rep.LeanRoundRatios = append(rep.LeanRoundRatios, ratio(rates[0], rates[leanAt]))
		}
	}
	rep.Breakdown = breakdownEnd(ctx, rc, before, log) // before verification reads the tables
	*offBreakdown = breakdownEnd(ctx, off, beforeOff, log)
	results, err := resultsOf(ctx, cfg, runs, log)
	if err != nil {
		return rep, err
	}
	rep.Raftcat = &results[0]
	r := results[0]
	if etcdAt > 0 {
		e := results[etcdAt]
		rep.Etcd = &results[etcdAt]
		rep.ThroughputRatio = ratio(r.CommitsPerSec, e.CommitsPerSec)
		rep.P99Ratio = ratio(r.Latency.P99, e.Latency.P99)
		rep.P50Ratio = ratio(r.Latency.P50, e.Latency.P50)
	}
	if pgAt > 0 {
		pg := results[pgAt]
		rep.Postgres = &results[pgAt]
		rep.PostgresThroughputRatio = ratio(r.CommitsPerSec, pg.CommitsPerSec)
		rep.PostgresP99Ratio = ratio(r.Latency.P99, pg.Latency.P99)
		rep.PostgresP50Ratio = ratio(r.Latency.P50, pg.Latency.P50)
	}
	if iceAt > 0 {
		ice := results[iceAt]
		rep.Iceberg = &results[iceAt]
		rep.IcebergThroughputRatio = ratio(ice.CommitsPerSec, r.CommitsPerSec)
		rep.IcebergP99Ratio = ratio(ice.Latency.P99, r.Latency.P99)
		rep.IcebergP50Ratio = ratio(ice.Latency.P50, r.Latency.P50)
	}
	if leanAt > 0 {
		rep.Lean = &results[leanAt]
		rep.LeanThroughputRatio, rep.LeanP50Ratio, rep.LeanP99Ratio = compare(r, results[leanAt])
	}
	if offAt > 0 && cfg.Secure {
		rep.TLSOff = &results[offAt]
		rep.TLSThroughputRatio, rep.TLSP50Ratio, rep.TLSP99Ratio = compare(r, results[offAt])
	} else if offAt > 0 {
		rep.AuthOff = &results[offAt]
		rep.AuthThroughputRatio, rep.AuthP50Ratio, rep.AuthP99Ratio = compare(r, results[offAt])
	}
	return rep, nil
}

// measure runs every system's window in turn, cfg.Rounds times, and
// returns each round's commits/s of each system; then it closes the
// clients' connections.
func measure(ctx context.Context, cfg Config, runs []*systemRun, log io.Writer) ([][]float64, error) {
	var rounds [][]float64
	for round := 1; round <= cfg.Rounds; round++ {
		rates := make([]float64, len(runs))
		for i, r := range runs {
			if cfg.Rounds > 1 {
				fmt.Fprintf(log, "bench: round %d of %d\n", round, cfg.Rounds)
			}
			var err error
			if rates[i], err = r.window(ctx, cfg, log); err != nil {
				return nil, err
			}
		}
		rounds = append(rounds, rates)
	}
	for _, r := range runs {
		r.closeClients()
	}
	return rounds, nil
}

// resultsOf summarises and verifies every system's run.
func resultsOf(ctx context.Context, cfg Config, runs []*systemRun, log io.Writer) ([]Result, error) {
	results := make([]Result, len(runs))
	for i, r := range runs {
		var err error
		if results[i], err = r.result(ctx, cfg, log); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// compare is a's commits/s, p50 and p99 over b's.
func compare(a, b Result) (throughput, p50, p99 float64) {
	return ratio(a.CommitsPerSec, b.CommitsPerSec), ratio(a.Latency.P50, b.Latency.P50), ratio(a.Latency.P99, b.Latency.P99)
}

// baseline is the cluster a comparison runs beside raftcat's, and its
// label: without authentication (AgainstAuthOff) or without transport
// security (Secure).
func (cfg Config) baseline() (Config, string, bool) {
	b := cfg
	switch {
	case cfg.AgainstAuthOff:
		b.Auth, b.Token = "none", ""
		return b, "auth-off", true
	case cfg.Secure:
		b.Secure = false
		return b, "tls-off", true
	}
	return b, "", false
}

// checkAuth checks the authentication settings.
func (cfg *Config) checkAuth() error {
	switch {
	case cfg.Auth != "" && cfg.Auth != "none" && cfg.Auth != AuthToken:
		return fmt.Errorf("bench: unknown auth %q (none or token)", cfg.Auth)
	case cfg.AgainstAuthOff && cfg.Auth != AuthToken:
		return errors.New("bench: the comparison with authentication off needs the cluster with it (auth token)")
	case cfg.AgainstAuthOff && len(cfg.URLs) > 0:
		return errors.New("bench: the comparison with authentication off starts both clusters; it does not take URLs")
	case cfg.AgainstAuthOff && cfg.Protocol != "delta":
		return errors.New("bench: the comparison with authentication off runs the Delta workload only")
	case cfg.Secure && cfg.AgainstAuthOff:
		return errors.New("bench: secure compares transport security on and off; run the comparison with authentication off apart")
	case cfg.Secure && (cfg.Auth != AuthToken || len(cfg.URLs) > 0 || (cfg.Protocol != "delta" && !cfg.icebergSQL())):
		return errors.New("bench: secure starts the clusters itself, with authentication on (auth token), and runs the Delta workload or the Iceberg one against the SQL catalog")
	}
	return nil
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

// systemRun is one system's clients and what its measured windows saw.
type systemRun struct {
	sys             system
	clients         []committer
	per             [][]sample
	loads, attempts []time.Duration
	server, client  float64   // CPU seconds
	sched           schedHist // the bench's goroutines' waits to run
	measured        time.Duration
	// relayed are the requests followers relayed to the leader in the
	// relayWindows measured windows whose relays were counted.
	relayed      float64
	relayWindows int
}

// closeClients closes the connections of clients that keep their own.
func (r *systemRun) closeClients() {
	for _, c := range r.clients {
		if cc, ok := c.(interface{ closeConn() }); ok {
			cc.closeConn()
		}
	}
}

func (r *systemRun) prepare(ctx context.Context, cfg Config, log io.Writer) error {
	fmt.Fprintf(log, "bench: %s: creating %d tables\n", r.sys.name(), cfg.Tables)
	clients, err := r.sys.prepare(ctx, cfg.Tables, cfg.Clients)
	if err != nil {
		return fmt.Errorf("%s: %w", r.sys.name(), err)
	}
	r.clients, r.per = clients, make([][]sample, len(clients))
	return nil
}

// window runs the clients for warm-up plus duration and keeps the commits
// that started after the warm-up and finished within the window. It
// returns the window's commits/s.
func (r *systemRun) window(ctx context.Context, cfg Config, log io.Writer) (float64, error) {
	fmt.Fprintf(log, "bench: %s: %d clients, %s warm-up, %s measured\n", r.sys.name(), len(r.clients), cfg.Warmup, cfg.Duration)
	begin := time.Now()
	from, until := begin.Add(cfg.Warmup), begin.Add(cfg.Warmup+cfg.Duration)
	runCtx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	per := make([][]sample, len(r.clients))
	probe := relayProbe(ctx, r.sys, log)
	cpu := startCPUCounting(r.sys.pids(), from, until, probe)
	var wg sync.WaitGroup
	for i, c := range r.clients {
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
		return 0, err
	}
	acked := 0
	for i, ss := range per {
		r.per[i] = append(r.per[i], ss...)
		for _, s := range ss {
			if s.err == nil {
				acked++
			}
		}
	}
	for _, c := range r.clients {
		r.loads = append(r.loads, c.requests().loads.within(from, until)...)
		r.attempts = append(r.attempts, c.requests().attempts.within(from, until)...)
	}
	server, client := cpu.result()
	r.server, r.client = r.server+server, r.client+client
	r.sched = r.sched.add(cpu.waits())
	if relayed, ok := cpu.counted(); ok {
		r.relayed, r.relayWindows = r.relayed+relayed, r.relayWindows+1
	}
	r.measured += cfg.Duration
	return float64(acked) / cfg.Duration.Seconds(), nil
}

// result summarises every window and verifies the tables.
func (r *systemRun) result(ctx context.Context, cfg Config, log io.Writer) (Result, error) {
	res := summarise(r.sys.name(), r.per, r.measured)
	res.LoadLatency, res.AttemptLatency = percentiles(r.loads), percentiles(r.attempts)
	if err := r.sys.verify(ctx, inFlight{writers: cfg.Clients, windows: cfg.Rounds}); err != nil {
		return res, fmt.Errorf("%s: %w", r.sys.name(), err)
	}
	res.Verified = true
	res.addCPU(r.server, r.client)
	res.addSchedWaits(r.sched)
	res.addRequests(len(r.loads) + len(r.attempts))
	if r.relayWindows == cfg.Rounds {
		res.addRelays(r.relayed)
	}
	fmt.Fprintf(log, "bench: %s\n", res.Line())
	return res, nil
}

// icebergSQL says whether cfg compares raftcat's Iceberg REST catalog
// with iceberg-go's SQL catalog.
func (cfg Config) icebergSQL() bool { return cfg.Protocol == "iceberg" && cfg.AgainstPostgres }

// runIcebergSQL runs the Iceberg workload through iceberg-go on raftcat's
// REST catalog and on iceberg-go's SQL catalog on PostgreSQL, in
// alternating rounds, both warehouses under cfg.Dir. With cfg.Secure
// raftcat's cluster runs with transport security, and no cluster without
// it runs beside: the comparison is with the SQL catalog.
func runIcebergSQL(ctx context.Context, cfg Config, rep Report, log io.Writer) (Report, error) {
	rc, err := openRaftcat(ctx, cfg, log)
	if err != nil {
		return rep, err
	}
	rep.Secure = cfg.Secure
	runs := []*systemRun{{sys: &icebergRESTSystem{rc: rc}}}
	defer func() {
		for _, r := range runs {
			r.sys.close()
		}
	}()
	rep.Auth = rc.authName()
	pg, err := startPostgres(ctx, cfg, filepath.Join(cfg.Dir, "postgres"), log)
	if err != nil {
		return rep, err
	}
	rep.PostgresVersion = pg.version
	warehouse := filepath.Join(cfg.Dir, "iceberg-sql-warehouse")
	fmt.Fprintf(log, "bench: iceberg-go SQL catalog on the PostgreSQL primary, warehouse file://%s\n", warehouse)
	runs = append(runs, &systemRun{sys: &icebergSQLSystem{pg: pg, warehouse: "file://" + warehouse}})
	for _, r := range runs {
		if err := r.prepare(ctx, cfg, log); err != nil {
			return rep, err
		}
	}
	rep.LeaderURL = rc.leaderTarget
	before, err := scrapeAll(ctx, rc.http, rc.urls)
	if err != nil {
		fmt.Fprintf(log, "bench: no breakdown of the Iceberg commit path: %v\n", err)
	}
	rounds, err := measure(ctx, cfg, runs, log)
	if err != nil {
		return rep, err
	}
	rep.Breakdown = icebergBreakdown(ctx, rc, before, log)
	for _, rates := range rounds {
		if cfg.Rounds > 1 {
			rep.IcebergSQLRoundRatios = append(rep.IcebergSQLRoundRatios, ratio(rates[0], rates[1]))
		}
	}
	results, err := resultsOf(ctx, cfg, runs, log)
	if err != nil {
		return rep, err
	}
	rep.Iceberg, rep.IcebergSQL = &results[0], &results[1]
	rep.IcebergSQLThroughputRatio, rep.IcebergSQLP50Ratio, rep.IcebergSQLP99Ratio = compare(results[0], results[1])
	rep.IcebergSQLCPURatio = ratio(results[0].ServerCPUMsPerCommit, results[1].ServerCPUMsPerCommit)
	return rep, nil
}

package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Result is one system's numbers.
type Result struct {
	System          string    `json:"system"`
	Commits         int       `json:"commits"`
	Conflicts       int       `json:"conflicts"`
	Errors          int       `json:"errors"`
	CommitsPerSec   float64   `json:"commits_per_sec"`
	ConflictsPerSec float64   `json:"conflicts_per_sec"`
	Latency         Latencies `json:"commit_latency_ms"`
	// LoadLatency and AttemptLatency take a commit apart: each load, and
	// each commit request (a conflicting one included).
	LoadLatency    Latencies `json:"load_latency_ms"`
	AttemptLatency Latencies `json:"attempt_latency_ms"`
	// RetriesP99 and RetriesMax are the conflicts one commit went through
	// before it was acknowledged: contention, not slowness, makes tails.
	RetriesP99 int `json:"retries_p99"`
	RetriesMax int `json:"retries_max"`
	// ClientCommitsMin and ClientCommitsMax are the fewest and the most
	// commits one client had acknowledged: a starved client shows here.
	ClientCommitsMin int `json:"client_commits_min"`
	ClientCommitsMax int `json:"client_commits_max"`
	// CPU the server processes and this client process used during the
	// measured window (Linux only; zero for a cluster given by URL).
	ServerCPUSeconds     float64  `json:"server_cpu_s"`
	ClientCPUSeconds     float64  `json:"client_cpu_s"`
	ServerCPUMsPerCommit float64  `json:"server_cpu_ms_per_commit"`
	ErrorSamples         []string `json:"error_samples,omitempty"`

	// ClientCPUMsPerCommit is the bench process's own CPU per commit:
	// on a machine the clients share with the servers, what the client
	// takes the servers cannot have.
	ClientCPUMsPerCommit float64 `json:"client_cpu_ms_per_commit"`
	// ClientRunWaitMsPerCommit is how long the bench's goroutines waited
	// to run, once ready, per acknowledged commit, and ClientRunWaitP99Ms
	// the 99th percentile of one such wait (Go's /sched/latencies, in the
	// measured windows): a busy writer process delays its own requests,
	// more so with clients that hand each exchange to goroutines of their
	// own.
	ClientRunWaitMsPerCommit float64 `json:"client_run_wait_ms_per_commit,omitempty"`
	ClientRunWaitP99Ms       float64 `json:"client_run_wait_p99_ms,omitempty"`
	// RequestsPerCommit are the loads and commit attempts each commit
	// took, RetriesPerCommit the conflicts it went through (attempts
	// repeated); both per acknowledged commit.
	RequestsPerCommit float64 `json:"requests_per_commit,omitempty"`
	RetriesPerCommit  float64 `json:"retries_per_commit"`
	// RelayedRequests are the requests raftcat's followers relayed to the
	// leader in the measured windows (raftcat_forwarded_requests_total
	// over the nodes), and RelayedPerCommit those per acknowledged
	// commit; RelaysCounted says they were read from the nodes.
	RelayedRequests  float64 `json:"relayed_requests,omitempty"`
	RelayedPerCommit float64 `json:"relayed_per_commit,omitempty"`
	RelaysCounted    bool    `json:"relays_counted,omitempty"`

	// Verified: after the run every table's version matched the commits
	// acknowledged to the clients (none lost, none invented).
	Verified bool `json:"verified"`
}

// Latencies are percentiles of the time from a client's load to the
// acknowledgement of its commit, conflicts and retries included.
type Latencies struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func summarise(system string, per [][]sample, window time.Duration) Result {
	r := Result{System: system}
	var lat []time.Duration
	var retries []int
	for i, ss := range per {
		acked := 0
		for _, s := range ss {
			r.Conflicts += s.conflicts
			if s.err != nil {
				r.Errors++
				if len(r.ErrorSamples) < 5 {
					r.ErrorSamples = append(r.ErrorSamples, s.err.Error())
				}
				continue
			}
			r.Commits++
			acked++
			lat = append(lat, s.end.Sub(s.start))
			retries = append(retries, s.conflicts)
		}
		if i == 0 || acked < r.ClientCommitsMin {
			r.ClientCommitsMin = acked
		}
		r.ClientCommitsMax = max(r.ClientCommitsMax, acked)
	}
	secs := window.Seconds()
	r.CommitsPerSec = float64(r.Commits) / secs
	r.ConflictsPerSec = float64(r.Conflicts) / secs
	r.Latency = percentiles(lat)
	if len(retries) > 0 {
		slices.Sort(retries)
		r.RetriesP99 = retries[min(len(retries)-1, len(retries)*99/100)]
		r.RetriesMax = retries[len(retries)-1]
	}
	return r
}

func (r *Result) addCPU(server, client float64) {
	r.ServerCPUSeconds, r.ClientCPUSeconds = server, client
	if r.Commits > 0 {
		r.ServerCPUMsPerCommit = server * 1000 / float64(r.Commits)
		r.ClientCPUMsPerCommit = client * 1000 / float64(r.Commits)
	}
}

func (r *Result) addSchedWaits(h schedHist) {
	if r.Commits > 0 && h.waits() > 0 {
		r.ClientRunWaitMsPerCommit = h.total() * 1000 / float64(r.Commits)
		r.ClientRunWaitP99Ms = h.quantile(0.99) * 1000
	}
}

// percentiles uses the nearest-rank method over every sample.
func percentiles(d []time.Duration) Latencies {
	if len(d) == 0 {
		return Latencies{}
	}
	slices.Sort(d)
	at := func(p float64) float64 {
		i := int(p*float64(len(d))+0.999999) - 1
		i = max(0, min(i, len(d)-1))
		return ms(d[i])
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return Latencies{P50: at(0.50), P90: at(0.90), P99: at(0.99), P999: at(0.999), Max: ms(d[len(d)-1]),
		Mean: ms(sum / time.Duration(len(d)))}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Line is a one-line summary.
func (r Result) Line() string {
	return fmt.Sprintf("%-8s %6.0f commits/s %6.1f conflicts/s  p50 %5.2f  p90 %5.2f  p99 %6.2f  p99.9 %6.2f ms  errors %d  server CPU %.2f ms/commit",
		r.System, r.CommitsPerSec, r.ConflictsPerSec, r.Latency.P50, r.Latency.P90, r.Latency.P99, r.Latency.P999, r.Errors, r.ServerCPUMsPerCommit)
}

// RequestLine is a one-line summary of the single requests, and of how
// evenly the clients fared.
func (r Result) RequestLine() string {
	return fmt.Sprintf("%-8s requests: load p50 %5.2f p99 %6.2f ms, commit attempt p50 %5.2f p99 %6.2f ms; commits per client %d-%d",
		r.System, r.LoadLatency.P50, r.LoadLatency.P99, r.AttemptLatency.P50, r.AttemptLatency.P99, r.ClientCommitsMin, r.ClientCommitsMax)
}

// Text is the human summary of a report.
func (rep Report) Text() string {
	s := fmt.Sprintf("%d clients over %d tables (%s), %.0f s measured after %.0f s warm-up, %d CPUs\n",
		rep.Clients, rep.Tables, rep.Target, rep.DurationS, rep.WarmupS, rep.CPUs)
	if rep.Rounds > 1 {
		s = fmt.Sprintf("%d clients over %d tables (%s), %d rounds of %.0f s measured after %.0f s warm-up each, %d CPUs\n",
			rep.Clients, rep.Tables, rep.Target, rep.Rounds, rep.DurationS, rep.WarmupS, rep.CPUs)
	}
	if rep.Auth == "token" {
		s = strings.TrimSuffix(s, "\n") + ", authentication on (every request with a token)\n"
	}
	if rep.Client == ClientNetHTTP || rep.Balance == BalanceRequest {
		s = strings.TrimSuffix(s, "\n") + fmt.Sprintf(", %s client, balanced by %s\n", rep.Client, rep.Balance)
	}
	if rep.Secure {
		s = strings.TrimSuffix(s, "\n") + ", TLS on (client port, between nodes, gossip)\n"
	}
	others := []*Result{rep.Etcd, rep.Postgres, rep.Iceberg, rep.IcebergSQL, rep.AuthOff, rep.TLSOff, rep.Lean}
	for _, r := range append([]*Result{rep.Raftcat}, others...) {
		if r != nil {
			s += r.Line() + "\n"
		}
	}
	for _, r := range append([]*Result{rep.Raftcat}, others...) {
		if r != nil {
			s += r.RequestLine() + "\n"
		}
	}
	for _, r := range append([]*Result{rep.Raftcat}, others...) {
		if r != nil {
			s += r.ClientLine() + "\n"
		}
	}
	if rep.Etcd != nil {
		s += fmt.Sprintf("raftcat/etcd: throughput x%.2f, p50 x%.2f, p99 x%.2f\n", rep.ThroughputRatio, rep.P50Ratio, rep.P99Ratio)
		s += byRound("raftcat/etcd throughput ratio by round:", rep.RoundRatios)
	}
	if rep.Postgres != nil {
		s += fmt.Sprintf("raftcat/postgres: throughput x%.2f, p50 x%.2f, p99 x%.2f\n",
			rep.PostgresThroughputRatio, rep.PostgresP50Ratio, rep.PostgresP99Ratio)
		s += byRound("raftcat/postgres throughput ratio by round:", rep.PostgresRoundRatios)
	}
	if len(rep.Breakdown) > 0 {
		var b strings.Builder
		if rep.Secure {
			writeBreakdown(&b, rep.Breakdown, rep.TLSOffBreakdown, "TLS")
		} else {
			writeBreakdown(&b, rep.Breakdown, rep.AuthOffBreakdown, "auth")
		}
		s += b.String()
	}
	if rep.IcebergSQL != nil {
		s += rep.icebergSQLText()
	}
	if rep.Iceberg != nil && rep.Raftcat != nil {
		s += fmt.Sprintf("iceberg/delta: throughput x%.2f, p50 x%.2f, p99 x%.2f\n",
			rep.IcebergThroughputRatio, rep.IcebergP50Ratio, rep.IcebergP99Ratio)
		s += byRound("iceberg/delta throughput ratio by round:", rep.IcebergRoundRatios)
	}
	if rep.AuthOff != nil {
		s += fmt.Sprintf("auth on/auth off: throughput x%.2f, p50 x%.2f, p99 x%.2f\n",
			rep.AuthThroughputRatio, rep.AuthP50Ratio, rep.AuthP99Ratio)
		s += byRound("auth on/auth off throughput ratio by round:", rep.AuthRoundRatios)
	}
	if rep.Lean != nil {
		s += fmt.Sprintf("%s/lean: throughput x%.2f, p50 x%.2f, p99 x%.2f\n",
			rep.Raftcat.System, rep.LeanThroughputRatio, rep.LeanP50Ratio, rep.LeanP99Ratio)
		s += byRound(rep.Raftcat.System+"/lean throughput ratio by round:", rep.LeanRoundRatios)
	}
	if rep.TLSOff != nil {
		s += fmt.Sprintf("TLS on/TLS off: throughput x%.2f, p50 x%.2f, p99 x%.2f\n",
			rep.TLSThroughputRatio, rep.TLSP50Ratio, rep.TLSP99Ratio)
		s += byRound("TLS on/TLS off throughput ratio by round:", rep.TLSRoundRatios)
	}
	return s
}

// byRound is a line of per-round ratios, or nothing without rounds.
func byRound(title string, ratios []float64) string {
	if len(ratios) == 0 {
		return ""
	}
	s := title
	for _, r := range ratios {
		s += fmt.Sprintf(" x%.2f", r)
	}
	return s + "\n"
}

// icebergDurability says how each side of the comparison with iceberg-go's
// SQL catalog makes a commit durable.
const icebergDurability = "durability: raftcat fsyncs each metadata file and its directory before the pointer moves, the pointer on a majority of the three nodes;\n" +
	"  the SQL catalog's metadata files go through iceberg-go's local file writer, without fsync, the pointer on the primary and a synchronous replica.\n" +
	"  The data files, manifests and manifest lists the client writes are not fsynced on either side.\n"

// icebergSQLText compares raftcat with iceberg-go's SQL catalog.
func (rep Report) icebergSQLText() string {
	r, q := rep.Iceberg, rep.IcebergSQL
	s := fmt.Sprintf("raftcat/sql-catalog (iceberg-go on both): throughput x%.2f, p50 x%.2f, p99 x%.2f, server CPU per commit x%.2f\n",
		rep.IcebergSQLThroughputRatio, rep.IcebergSQLP50Ratio, rep.IcebergSQLP99Ratio, rep.IcebergSQLCPURatio)
	s += byRound("raftcat/sql-catalog throughput ratio by round:", rep.IcebergSQLRoundRatios)
	s += fmt.Sprintf("client (bench process) CPU per commit: raftcat side %.2f ms, sql-catalog side %.2f ms\n",
		perCommitMs(r.ClientCPUSeconds, r.Commits), perCommitMs(q.ClientCPUSeconds, q.Commits))
	return s + icebergDurability
}

// perCommitMs is CPU seconds over commits, in milliseconds.
func perCommitMs(cpu float64, commits int) float64 {
	if commits == 0 {
		return 0
	}
	return cpu * 1000 / float64(commits)
}

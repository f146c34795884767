package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/raftcat/raftcat/internal/localcluster"
)

// Config is one chaos run against a local cluster.
type Config struct {
	Bin             string        // raftcat binary the nodes run
	Out             string        // output directory (history.jsonl, summary.json, node logs)
	Nodes           int           // cluster size
	Duration        time.Duration // how long the workload and faults run
	Seed            uint64
	Tables          int // tables in the workload
	ClientsPerTable int
	FaultEvery      time.Duration // a fault starts this often
	FaultFor        time.Duration // and is healed after this long
	// Netns puts every node in its own network namespace, which adds
	// partitions and latency to the faults (needs root and iproute2).
	Netns bool
	// Compose runs against the running compose cluster instead of
	// starting local processes; CAFile, when set, is its CA, and its
	// nodes are reached over HTTPS.
	Compose bool
	CAFile  string
	// Faults limits the fault kinds (empty: every kind the cluster allows).
	Faults []string
	// Protocol is the commit path the clients write with: "delta" (or
	// empty), "iceberg" or "transactions" (each of Tables is then a group
	// of a Delta, an Iceberg and a Lance table written together).
	Protocol string
	// Auth is how the cluster the drill starts authenticates: "none" (or
	// empty) or "token": every node runs with --auth=token, the admin
	// token being Token or, without one, a random token the drill makes.
	Auth string
	// Token is the API token every request of the drill sends as
	// Authorization: Bearer, against the compose cluster or a started
	// cluster with Auth "token"; a cluster started without authentication
	// is sent none.
	Token string
	// Secure starts the cluster with everything on: authentication (as
	// Auth "token"), TLS on the client port, mutual TLS between nodes and
	// encrypted gossip; the drill's requests trust the cluster's CA.
	Secure bool
}

// AuthToken is the Auth of a cluster that needs a token.
const AuthToken = "token"

// runner is one client of the workload.
type runner interface {
	run(stop <-chan struct{})
	tableName() string
}

// Fault is one injected fault.
type Fault struct {
	Kind    string `json:"kind"` // kill, pause, partition (isolate the target), split (a minority with the target), latency
	Target  string `json:"target"`
	Leader  bool   `json:"leader"`
	StartNs int64  `json:"start"`
	EndNs   int64  `json:"end"`
	// RecoveryMs is the time from healing to the next acknowledged commit.
	RecoveryMs int64 `json:"recovery_ms"`
}

// Summary is what a run found; it is written as summary.json.
type Summary struct {
	Result
	Faults               []Fault `json:"faults"`
	Converged            bool    `json:"converged"`
	LongestUnavailableMs int64   `json:"longest_unavailability_ms"`
	Seed                 uint64  `json:"seed"`
	DurationMs           int64   `json:"duration_ms"`
	Nodes                int     `json:"nodes"`
	Protocol             string  `json:"protocol"`
	Auth                 string  `json:"auth"` // token when the drill's requests carried a token, else none
	// Secure is set when the cluster ran with TLS, mutual TLS between
	// nodes and encrypted gossip.
	Secure bool `json:"secure,omitempty"`
	// Unauthenticated counts the 401 answers to requests that carried the
	// drill's token: a node that could not verify a valid token.
	Unauthenticated        int    `json:"unauthenticated,omitempty"`
	FaultKindsNotAvailable string `json:"fault_kinds_not_available,omitempty"`
}

// Run starts a cluster, runs the workload under faults, heals, checks.
func Run(ctx context.Context, cfg Config, log io.Writer) (Summary, error) {
	if cfg.Protocol != "" && cfg.Protocol != "delta" && cfg.Protocol != ProtocolIceberg && cfg.Protocol != ProtocolTransactions {
		return Summary{}, fmt.Errorf("unknown protocol %q (delta, iceberg or transactions)", cfg.Protocol)
	}
	if cfg.Compose && cfg.Protocol == ProtocolTransactions {
		// The Lance staging manifests are written into the warehouse, which
		// the compose cluster keeps in a docker volume.
		return Summary{}, fmt.Errorf("--protocol transactions needs a local cluster: it writes Lance staging manifests into the warehouse")
	}
	if err := resolveAuth(&cfg); err != nil {
		return Summary{}, err
	}
	// The nodes' warehouse is file://OUT/warehouse, which must be absolute.
	out, err := filepath.Abs(cfg.Out)
	if err != nil {
		return Summary{}, err
	}
	cfg.Out = out
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return Summary{}, err
	}
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cl, missing, stop, err := openTarget(startCtx, cfg, log)
	if err != nil {
		return Summary{}, err
	}
	defer stop()
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	rec := &recorder{start: time.Now()}
	clients, final, err := setupClients(cfg, cl.URLs(), rng, rec)
	if err != nil {
		return Summary{}, err
	}
	what := protocolName(cfg.Protocol) + " tables"
	if cfg.Protocol == ProtocolTransactions {
		what = "groups (Delta+Iceberg+Lance, one transaction each commit)"
	}
	fmt.Fprintf(log, "chaos: %d nodes, %d %s x %d clients, %v, seed %d\n", cfg.Nodes, cfg.Tables, what,
		cfg.ClientsPerTable, cfg.Duration, cfg.Seed)

	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); c.run(done) }()
	}
	faults := injectFaults(ctx, cl, cfg, rng, rec, log)
	close(done)
	wg.Wait()

	sum := Summary{Faults: faults, Seed: cfg.Seed, DurationMs: cfg.Duration.Milliseconds(), Nodes: cfg.Nodes,
		Protocol: protocolName(cfg.Protocol), Auth: "none", Secure: cfg.Secure, FaultKindsNotAvailable: missing}
	if cfg.Token != "" {
		sum.Auth = AuthToken
	}
	healCtx, cancelHeal := context.WithTimeout(ctx, 60*time.Second)
	defer cancelHeal()
	if err := cl.WaitReady(healCtx); err != nil {
		return sum, err
	}
	sum.Converged = waitConverged(healCtx, cl)
	finalLoads(cl.URLs()[0], clients, final, rec)
	ops := rec.snapshot()
	sum.Result = Check(ops, 2*time.Minute)
	if !sum.Converged {
		sum.Violations = append(sum.Violations, "replicas did not converge to the same state digest")
	}
	sum.LongestUnavailableMs = longestGap(ops)
	if cfg.Token != "" {
		sum.Unauthenticated = countStatus(ops, http.StatusUnauthorized)
	}
	recoveries(sum.Faults, ops)
	return sum, writeOutputs(cfg.Out, ops, sum)
}

// resolveAuth settles the token the drill sends, and sets it for every
// request: the given one against the compose cluster; for a started
// cluster with authentication, the given one or a new one, which becomes
// its admin token; none for a started cluster without.
func resolveAuth(cfg *Config) error {
	if cfg.Secure && !cfg.Compose {
		cfg.Auth = AuthToken // a secure cluster runs with authentication
	}
	switch {
	case cfg.Auth != "" && cfg.Auth != "none" && cfg.Auth != AuthToken:
		return fmt.Errorf("unknown auth %q (none or token)", cfg.Auth)
	case cfg.Compose && cfg.Secure:
		return fmt.Errorf("--secure is for the cluster the drill starts")
	case cfg.Compose && cfg.Auth == AuthToken:
		return fmt.Errorf("--auth is for the cluster the drill starts; give the compose cluster's token with --token")
	case cfg.Auth == AuthToken && cfg.Token == "":
		cfg.Token = localcluster.NewToken()
	case !cfg.Compose && cfg.Auth != AuthToken:
		cfg.Token = "" // a cluster without authentication has no token to take
	}
	setToken(cfg.Token)
	return nil
}

// openTarget starts (or, with Compose, finds) the cluster to drill. It
// returns what fault kinds could not be injected and how to stop it.
func openTarget(ctx context.Context, cfg Config, log io.Writer) (target, string, func(), error) {
	if cfg.Compose {
		c, err := OpenCompose(ctx, cfg.Nodes, cfg.CAFile)
		return c, "latency and minority splits: not injected into the compose cluster", func() {}, err
	}
	missing := "network partitions and latency: not requested (--netns=false)"
	var lab *netLab
	if cfg.Netns {
		var err error
		if lab, err = newNetLab(cfg.Nodes); err != nil {
			missing = "network partitions and latency: network namespaces cannot be made here (" + err.Error() + ")"
			fmt.Fprintf(log, "chaos: %s; running kill and pause faults only\n", missing)
		} else if missing = ""; !lab.netem {
			missing = "added latency: this kernel has no netem qdisc"
		}
	}
	adminToken := ""
	if cfg.Auth == AuthToken {
		adminToken = cfg.Token
	}
	cl, err := StartLocal(ctx, cfg.Bin, cfg.Out, cfg.Nodes, lab, adminToken, cfg.Secure)
	if cl != nil {
		setTLS(cl.ClientTLS())
	}
	stop := func() {
		if cl != nil {
			cl.Stop()
		}
		if lab != nil {
			lab.close()
		}
	}
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	return cl, missing, stop, nil
}

// finalLoader loads a table after healing: base is a node's URL and op
// the final load to fill in.
type finalLoader func(base string, op Op) Op

// protocolName is the protocol's name as the summary gives it.
func protocolName(p string) string {
	if p == ProtocolDelta {
		return "delta"
	}
	return p
}

// setupClients creates the tables and their clients, and says how to
// load a table after healing.
func setupClients(cfg Config, urls []string, rng *rand.Rand, rec *recorder) ([]runner, finalLoader, error) {
	switch cfg.Protocol {
	case "", "delta":
		clients, err := setupDelta(cfg, urls, rng, rec)
		return clients, deltaFinalLoad, err
	case ProtocolIceberg:
		return setupIceberg(cfg, urls, rng, rec)
	case ProtocolTransactions:
		return setupTransactions(cfg, urls, rng, rec)
	}
	return nil, nil, fmt.Errorf("unknown protocol %q (delta, iceberg or transactions)", cfg.Protocol)
}

// tableName is a table name unique on a reused cluster.
func tableName(cfg Config, t int) string {
	return fmt.Sprintf("chaos_%d_%d_%d", cfg.Seed, time.Now().Unix()%1000000, t)
}

func setupDelta(cfg Config, urls []string, rng *rand.Rand, rec *recorder) ([]runner, error) {
	var clients []runner
	for t := 0; t < cfg.Tables; t++ {
		name := tableName(cfg, t)
		uuid, err := createTable(urls[0], name)
		if err != nil {
			return nil, err
		}
		for k := 0; k < cfg.ClientsPerTable; k++ {
			clients = append(clients, &client{id: len(clients), table: name, uuid: uuid, urls: urls,
				rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), rec: rec})
		}
	}
	return clients, nil
}

func setupIceberg(cfg Config, urls []string, rng *rand.Rand, rec *recorder) ([]runner, finalLoader, error) {
	cat, err := openIceberg(urls[0])
	if err != nil {
		return nil, nil, err
	}
	var clients []runner
	for t := 0; t < cfg.Tables; t++ {
		name := tableName(cfg, t)
		if err := cat.create(urls[0], name); err != nil {
			return nil, nil, err
		}
		ident := map[string]any{"namespace": []string{icebergNamespace}, "name": name}
		for k := 0; k < cfg.ClientsPerTable; k++ {
			clients = append(clients, &icebergClient{id: len(clients), table: name, path: cat.table(name), ident: ident,
				urls: urls, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), rec: rec})
		}
	}
	final := func(base string, op Op) Op { return icebergFinalLoad(base+cat.table(op.Table), op) }
	return clients, final, nil
}

// injectFaults runs the fault schedule until the duration ends; every
// fault is healed before it returns.
func injectFaults(ctx context.Context, cl target, cfg Config, rng *rand.Rand, rec *recorder, log io.Writer) []Fault {
	var faults []Fault
	deadline := time.Now().Add(cfg.Duration)
	kinds := cl.FaultKinds()
	if len(cfg.Faults) > 0 {
		kinds = slices.DeleteFunc(kinds, func(k string) bool { return !slices.Contains(cfg.Faults, k) })
	}
	if len(kinds) == 0 {
		fmt.Fprintln(log, "chaos: none of the requested fault kinds can be injected here; running without faults")
		time.Sleep(time.Until(deadline)) // the workload still runs its course
		return nil
	}
	for time.Now().Add(cfg.FaultEvery).Before(deadline) {
		select {
		case <-ctx.Done():
			return faults
		case <-time.After(cfg.FaultEvery - cfg.FaultFor):
		}
		leader := cl.LeaderIndex()
		target := rng.IntN(cfg.Nodes)
		if rng.IntN(2) == 0 && leader >= 0 {
			target = leader
		}
		f := Fault{Kind: kinds[rng.IntN(len(kinds))], Target: cl.Names()[target], Leader: target == leader, StartNs: rec.now()}
		heal, err := cl.inject(f.Kind, target, rng)
		if err != nil {
			fmt.Fprintf(log, "chaos: %s %s failed: %v\n", f.Kind, f.Target, err)
		}
		time.Sleep(cfg.FaultFor) // the fault lasts this long: it is the schedule, not synchronisation
		if err := heal(); err != nil {
			fmt.Fprintf(log, "chaos: healing %s %s: %v\n", f.Kind, f.Target, err)
		}
		f.EndNs = rec.now()
		fmt.Fprintf(log, "chaos: %s %s (leader %v) for %v\n", f.Kind, f.Target, f.Leader, cfg.FaultFor)
		faults = append(faults, f)
	}
	if rest := time.Until(deadline); rest > 0 {
		time.Sleep(rest) // let the workload run to the end of the schedule
	}
	return faults
}

// waitConverged waits until every node reports the same state digest.
func waitConverged(ctx context.Context, cl target) bool {
	for {
		if d, err := cl.Digests(); err == nil {
			same := true
			for _, x := range d[1:] {
				same = same && x == d[0]
			}
			if same {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// finalLoads records, per table, a linearizable load after healing with
// the tracked commit log; a client that writes several tables as one
// (finalParts: a transactions group) gets one final load per table.
func finalLoads(url string, clients []runner, load finalLoader, rec *recorder) {
	seen := map[string]bool{}
	n := 0
	for _, c := range clients {
		if seen[c.tableName()] {
			continue
		}
		seen[c.tableName()] = true
		parts := []string{""}
		if p, ok := c.(interface{ finalParts() []string }); ok {
			parts = p.finalParts()
		}
		for _, part := range parts {
			n++
			op := Op{Client: 1000 + n, Table: c.tableName(), Op: OpLoad, Part: part, Final: true, InvokeNs: rec.now()}
			op = load(url, op)
			op.CompleteNs = rec.now()
			rec.add(op)
		}
	}
}

// deltaFinalLoad loads a Delta table with its tracked commits.
func deltaFinalLoad(url string, op Op) Op {
	status, body, err := call(http.MethodGet, url+deltaBase+"/tables/"+op.Table, nil)
	if err != nil || status != http.StatusOK {
		op.Outcome, op.Status = OutcomeUnknown, status
		return op
	}
	op.Outcome, op.Status = OutcomeOK, status
	op.LatestVersion = int64(body["latest-table-version"].(float64))
	op.Commits = map[int64]string{}
	for _, cm := range body["commits"].([]any) {
		m := cm.(map[string]any)
		op.Commits[int64(m["version"].(float64))] = m["file-name"].(string)
	}
	return op
}

// longestGap is the longest time without any acknowledged commit.
func longestGap(ops []Op) int64 {
	var acks []int64
	for _, op := range ops {
		if op.Op == OpCommit && op.Outcome == OutcomeOK {
			acks = append(acks, op.CompleteNs)
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i] < acks[j] })
	var longest int64
	for i := 1; i < len(acks); i++ {
		longest = max(longest, acks[i]-acks[i-1])
	}
	return longest / int64(time.Millisecond)
}

// countStatus counts the operations answered with status.
func countStatus(ops []Op, status int) int {
	n := 0
	for _, op := range ops {
		if op.Status == status {
			n++
		}
	}
	return n
}

// recoveries fills each fault's time from healing to the next acknowledged commit.
func recoveries(faults []Fault, ops []Op) {
	for i := range faults {
		best := int64(-1)
		for _, op := range ops {
			if op.Op == OpCommit && op.Outcome == OutcomeOK && op.CompleteNs >= faults[i].EndNs {
				if best < 0 || op.CompleteNs < best {
					best = op.CompleteNs
				}
			}
		}
		if best >= 0 {
			faults[i].RecoveryMs = (best - faults[i].EndNs) / int64(time.Millisecond)
		}
	}
}

func writeOutputs(dir string, ops []Op, sum Summary) error {
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return err
	}
	if err := WriteHistory(f, ops); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(sum, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644); err != nil {
		return err
	}
	rf, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return err
	}
	defer rf.Close()
	return WriteReport(rf, ops, sum)
}

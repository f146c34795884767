package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
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
	// DiskFaults puts every node's data directory on a fault filesystem
	// (internal/faultfs), which adds the disk fault kinds (DiskFaultKinds):
	// power cuts, failing syncs and reads, a full, slow or rotting disk.
	// The directories stay on the plain disk when Faults names none of
	// those kinds.
	DiskFaults bool
	// LogStore is every node's --raft-log-store: segments, boltdb or wal
	// ("": the node's default).
	LogStore string
	// Aim is whom the faults of one node hit: "leader" (the leader when
	// there is one), "follower", or "" (either, as the seed picks).
	Aim string
}

// AuthToken is the Auth of a cluster that needs a token.
const AuthToken = "token"

// runner is one client of the workload.
type runner interface {
	run(stop <-chan struct{})
	tableName() string
}

// Fault is one injected fault, and what the node did under it.
type Fault struct {
	// Kind is kill, pause, partition (isolate the target), split (a
	// minority with the target), latency, or one of DiskFaultKinds.
	Kind    string `json:"kind"`
	Target  string `json:"target"` // a node's name, or "all" (power-cut-all)
	Leader  bool   `json:"leader"` // the target was (or, for all, included) the leader
	StartNs int64  `json:"start"`
	EndNs   int64  `json:"end"`
	// RecoveryMs is the time from healing to the next acknowledged commit.
	RecoveryMs int64 `json:"recovery_ms"`
	// Detail is what exactly was done to a disk: the bytes a bitrot
	// flipped, the size a full disk was given.
	Detail string `json:"detail,omitempty"`
	// Outcome is what the node did and what healing did, as the drill saw
	// it: "halted, exit 4 (12 syncs failed); power cut: …; restarted",
	// "refused 37 writes with 507", "refused to start: damaged data, exit 4".
	Outcome string `json:"outcome,omitempty"`
	// ExitStatus is the status the target exited with by itself (not
	// killed by the drill), if it did.
	ExitStatus *int `json:"exit_status,omitempty"`
	// Cut is what the power cuts of the fault dropped.
	Cut *CutSummary `json:"cut,omitempty"`
	// Refused507 counts the answers 507 (a full disk) from the fault's
	// start until the next fault's: a leader notices free space again
	// within a second of healing.
	Refused507 int `json:"refused_507,omitempty"`
	// Acknowledged counts the commits acknowledged while the fault lasted.
	Acknowledged int `json:"acknowledged"`
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
	// DiskFaults is set when every data directory was on a fault
	// filesystem; LogStore is the raft log store the nodes were given.
	DiskFaults bool   `json:"disk_faults,omitempty"`
	LogStore   string `json:"raft_log_store,omitempty"`
}

// Run starts a cluster, runs the workload under faults, heals, checks.
func Run(ctx context.Context, cfg Config, log io.Writer) (Summary, error) {
	if err := checkConfig(cfg); err != nil {
		return Summary{}, err
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
	cl, missing, stop, err := openTarget(startCtx, &cfg, log)
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

	sum := Summary{Seed: cfg.Seed, DurationMs: cfg.Duration.Milliseconds(), Nodes: cfg.Nodes,
		Protocol: protocolName(cfg.Protocol), Auth: "none", Secure: cfg.Secure, FaultKindsNotAvailable: missing,
		DiskFaults: cfg.DiskFaults, LogStore: cfg.LogStore}
	if cfg.Token != "" {
		sum.Auth = AuthToken
	}
	ops, notUp := afterHealing(ctx, cl, clients, final, rec, &sum, log)
	for _, f := range faults {
		sum.Faults = append(sum.Faults, *f)
	}
	sum.Result = Check(ops, 2*time.Minute)
	if notUp != nil {
		sum.Violations = append(sum.Violations, fmt.Sprintf("not every node was up after healing: %v", notUp))
	}
	if !sum.Converged {
		sum.Violations = append(sum.Violations, "replicas did not converge to the same state digest")
	}
	sum.LongestUnavailableMs = longestGap(ops)
	if cfg.Token != "" {
		sum.Unauthenticated = countStatus(ops, http.StatusUnauthorized)
	}
	recoveries(sum.Faults, ops)
	historyOutcomes(sum.Faults, ops)
	return sum, writeOutputs(cfg.Out, ops, sum)
}

// checkConfig refuses what a drill cannot run.
func checkConfig(cfg Config) error {
	if cfg.Protocol != "" && cfg.Protocol != "delta" && cfg.Protocol != ProtocolIceberg && cfg.Protocol != ProtocolTransactions {
		return fmt.Errorf("unknown protocol %q (delta, iceberg or transactions)", cfg.Protocol)
	}
	if cfg.Compose && cfg.Protocol == ProtocolTransactions {
		// The Lance staging manifests are written into the warehouse, which
		// the compose cluster keeps in a docker volume.
		return fmt.Errorf("--protocol transactions needs a local cluster: it writes Lance staging manifests into the warehouse")
	}
	if !slices.Contains([]string{"", "segments", "boltdb", "wal"}, cfg.LogStore) {
		return fmt.Errorf("unknown raft log store %q (segments, boltdb or wal)", cfg.LogStore)
	}
	if !slices.Contains([]string{"", AimLeader, AimFollower}, cfg.Aim) {
		return fmt.Errorf("unknown aim %q (leader or follower)", cfg.Aim)
	}
	return nil
}

// What Config.Aim can aim the faults at.
const (
	AimLeader   = "leader"
	AimFollower = "follower"
)

// afterHealing waits, once every fault is healed, until every node is up (a
// node that exited by itself is restarted, as a heal would) and the
// replicas converge, then records the final loads and returns the
// history; notUp says which node did not come back.
func afterHealing(ctx context.Context, cl target, clients []runner, final finalLoader, rec *recorder, sum *Summary,
	log io.Writer) ([]Op, error) {
	healCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	notUp := waitUp(healCtx, cl, log)
	if notUp == nil {
		sum.Converged = waitConverged(healCtx, cl)
	}
	finalLoads(readyURL(cl.URLs()), clients, final, rec)
	return rec.snapshot(), notUp
}

// reviver is a cluster that can restart the nodes that exited by
// themselves since their last fault was healed; the error names those
// it leaves down.
type reviver interface{ reviveExited(log io.Writer) error }

func revive(cl target, log io.Writer) error {
	if r, ok := cl.(reviver); ok {
		return r.reviveExited(log)
	}
	return nil
}

// waitUp waits until every node is ready, restarting those that exit by
// themselves on the way (once: a node that exits again stays down).
func waitUp(ctx context.Context, cl target, log io.Writer) error {
	for {
		if err := revive(cl, log); err != nil {
			return err
		}
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := cl.WaitReady(try)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
}

// readyURL is the first node that is ready (the first node if none is).
func readyURL(urls []string) string {
	for _, u := range urls {
		if localcluster.ReadyWith(probe, u) {
			return u
		}
	}
	return urls[0]
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
// returns what fault kinds could not be injected and how to stop it, and
// settles cfg.DiskFaults.
func openTarget(ctx context.Context, cfg *Config, log io.Writer) (target, string, func(), error) {
	if cfg.Compose {
		whyNot := noteDisks(cfg, nil, log)
		c, err := OpenCompose(ctx, cfg.Nodes, cfg.CAFile)
		return c, "latency and minority splits: not injected into the compose cluster; " + whyNot, func() {}, err
	}
	lab, missing := openNetLab(*cfg, log)
	whyNot := noteDisks(cfg, lab, log)
	adminToken := ""
	if cfg.Auth == AuthToken {
		adminToken = cfg.Token
	}
	cl, err := StartLocal(ctx, *cfg, lab, adminToken, cfg.DiskFaults)
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
	return cl, joinNotes(missing, whyNot), stop, nil
}

// noteDisks settles cfg.DiskFaults, says so in the drill's first lines,
// and returns why disk faults cannot be injected ("" when they can).
func noteDisks(cfg *Config, lab *netLab, log io.Writer) string {
	disks, whyNot := diskFaults(*cfg, lab)
	cfg.DiskFaults = disks
	if disks {
		fmt.Fprintln(log, "chaos: disk faults on: every node's data directory and the shared warehouse are fault filesystems (power cuts, failing syncs and reads, a full, slow or rotting disk)")
		return ""
	}
	fmt.Fprintf(log, "chaos: disk faults off: %s\n", whyNot)
	return "disk faults: " + whyNot
}

// openNetLab makes the network namespaces when cfg asks for them, and
// says which network faults cannot be injected.
func openNetLab(cfg Config, log io.Writer) (*netLab, string) {
	if !cfg.Netns {
		return nil, "network partitions and latency: not requested (--netns=false)"
	}
	lab, err := newNetLab(cfg.Nodes)
	if err != nil {
		missing := "network partitions and latency: network namespaces cannot be made here (" + err.Error() + ")"
		fmt.Fprintf(log, "chaos: %s; running process and disk faults only\n", missing)
		return nil, missing
	}
	if !lab.netem {
		return lab, "added latency: this kernel has no netem qdisc"
	}
	return lab, ""
}

// diskFaults decides whether the data directories go on fault
// filesystems, and says why not when they do not.
func diskFaults(cfg Config, lab *netLab) (bool, string) {
	usable := DiskFaultsUsable()
	switch {
	case cfg.Compose:
		return false, "not injected into the compose cluster"
	case !cfg.DiskFaults && usable == nil:
		return false, "not requested (--disk-faults=false)"
	case usable != nil:
		return false, "fault filesystems cannot be mounted here (" + usable.Error() + ")"
	case len(cfg.Faults) > 0 && !slices.ContainsFunc(cfg.Faults, isDiskKind):
		return false, "none of --faults needs them"
	case lab != nil && !lab.nsenter:
		return false, "nodes in network namespaces need nsenter to share this mount namespace (ip netns exec would keep every disk mounted in each node's own)"
	}
	return true, ""
}

func isDiskKind(k string) bool { return slices.Contains(DiskFaultKinds, k) }

// joinNotes joins the notes that are not empty.
func joinNotes(notes ...string) string {
	return strings.Join(slices.DeleteFunc(notes, func(n string) bool { return n == "" }), "; ")
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
// fault is healed before it returns. A node that exited by itself since
// the last heal is restarted before the next fault.
func injectFaults(ctx context.Context, cl target, cfg Config, rng *rand.Rand, rec *recorder, log io.Writer) []*Fault {
	var faults []*Fault
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
		_ = revive(cl, log) // a node left down stays down; the end says so
		f, target := chooseFault(cl, cfg, kinds, rng, rec)
		heal, err := cl.inject(f, target, rng)
		if err != nil {
			fmt.Fprintf(log, "chaos: %s %s failed: %v\n", f.Kind, f.Target, err)
		}
		time.Sleep(cfg.FaultFor) // the fault lasts this long: it is the schedule, not synchronisation
		if err := heal(); err != nil {
			fmt.Fprintf(log, "chaos: healing %s %s: %v\n", f.Kind, f.Target, err)
		}
		f.EndNs = rec.now()
		fmt.Fprintf(log, "chaos: %s %s (leader %v) for %v%s\n", f.Kind, f.Target, f.Leader, cfg.FaultFor, outcomeSuffix(f.Outcome))
		faults = append(faults, f)
	}
	if rest := time.Until(deadline); rest > 0 {
		time.Sleep(rest) // let the workload run to the end of the schedule
	}
	return faults
}

// chooseFault picks the next fault and its target node, aimed as
// cfg.Aim says (the seed's draws are the same whatever the aim).
func chooseFault(cl target, cfg Config, kinds []string, rng *rand.Rand, rec *recorder) (*Fault, int) {
	leader := cl.LeaderIndex()
	target := rng.IntN(cfg.Nodes)
	if rng.IntN(2) == 0 && leader >= 0 {
		target = leader
	}
	switch {
	case leader < 0:
	case cfg.Aim == AimLeader:
		target = leader
	case cfg.Aim == AimFollower && target == leader:
		target = (leader + 1) % cfg.Nodes
	}
	f := &Fault{Kind: kinds[rng.IntN(len(kinds))], Target: cl.Names()[target], Leader: target == leader, StartNs: rec.now()}
	if f.Kind == "power-cut-all" {
		f.Target, f.Leader = "all", leader >= 0
	}
	return f, target
}

func outcomeSuffix(outcome string) string {
	if outcome == "" {
		return ""
	}
	return ": " + outcome
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

// historyOutcomes adds to each fault what the history shows of it: the
// commits acknowledged while it lasted, and the answers 507 from its
// start until the next fault's (a leader sees free space again within a
// second of healing), which its outcome then tells.
func historyOutcomes(faults []Fault, ops []Op) {
	for i := range faults {
		f := &faults[i]
		until := int64(math.MaxInt64)
		if i+1 < len(faults) {
			until = faults[i+1].StartNs
		}
		for _, op := range ops {
			if op.Op == OpCommit && op.Outcome == OutcomeOK && op.CompleteNs >= f.StartNs && op.CompleteNs <= f.EndNs {
				f.Acknowledged++
			}
			if op.Answer == http.StatusInsufficientStorage && op.CompleteNs >= f.StartNs && op.CompleteNs < until {
				f.Refused507++
			}
		}
		if f.Refused507 > 0 {
			f.Outcome = joinOutcome(f.Outcome, "refused "+count(int64(f.Refused507), "write", "writes")+" with 507")
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

package bench

// `raftcat bench --protocol lance`: the Lance Namespace API's commit path
// (/lance), as Lance clients with managed versioning use it. A writer
// stages its manifest in the table's _versions/ directory of a file://
// warehouse and asks for version/create of the next version; the leader
// finalizes the manifest create-only and records the version. The same
// clients then commit versions of several tables at once with
// batch-commit, one raft entry for all of them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// LanceConfig says what `raftcat bench --protocol lance` measures.
type LanceConfig struct {
	URLs       []string // an existing raftcat cluster; empty: start one
	Bin        string   // raftcat binary, to start a cluster
	Dir        string   // the started cluster's data and the warehouse (default: a temporary one)
	ServeFlags []string // extra `raftcat serve` flags for a started cluster
	Leader     bool     // send every request to the leader instead of spreading over the nodes
	Auth       string   // a started cluster's authentication: none (or empty) or token (see Config.Auth)
	Token      string   // sent as a bearer token (see Config.Token)

	// Tables is how many tables the version/create clients commit to
	// (client i writes table i mod Tables); the batch-commit clients
	// commit to as many groups of Batch tables (client i to group i mod
	// Tables), so both kinds see the same number of writers per table.
	Tables int
	// Batch is how many tables (create_table_version operations) one
	// batch-commit holds.
	Batch   int
	Clients int
	// Duration is each kind's measured time per round, after Warmup.
	Duration time.Duration
	Warmup   time.Duration
	// Rounds alternates this many windows of each kind (0 or 1: one).
	Rounds int
}

// LanceReport is the machine-readable result of a Lance bench.
type LanceReport struct {
	StartedAt time.Time `json:"started_at"`
	Protocol  string    `json:"protocol"` // lance
	Target    string    `json:"target"`   // spread or leader
	Nodes     int       `json:"nodes"`
	Auth      string    `json:"auth"` // token when the requests carried one, else none
	// LeaderURL is the node that passed the leader check (GET
	// /readyz?leader): Lance requests sent to another node are relayed
	// to it.
	LeaderURL  string   `json:"leader_url,omitempty"`
	CPUs       int      `json:"cpus"`
	ServeFlags []string `json:"serve_flags,omitempty"`
	Clients    int      `json:"clients"`
	// Tables is the number of version/create tables; BatchGroups groups
	// of Batch tables each take the batch commits.
	Tables        int     `json:"tables"`
	Batch         int     `json:"batch_tables"`
	BatchGroups   int     `json:"batch_groups"`
	ManifestBytes int     `json:"manifest_bytes"` // of each staging manifest
	Warehouse     string  `json:"warehouse"`      // the tables' directory (file://)
	DurationS     float64 `json:"duration_s"`     // per kind and round
	WarmupS       float64 `json:"warmup_s"`
	Rounds        int     `json:"rounds"`
	// Commits are the version/create commits: a commit's latency runs
	// from staging its manifest to the acknowledgement, conflicts (a
	// re-read of the latest version, a new staging manifest and another
	// request) included. Conflicts counts every 409 answered within the
	// measured windows, also to a commit not acknowledged by a window's
	// end; RetriesP99 and RetriesMax are of the acknowledged commits.
	Commits *Result `json:"version_create"`
	// Batches are the batch commits, counted in its Commits (and
	// CommitsPerSec, Latency...): each acknowledged one made Batch table
	// versions, TableVersionsPerSec in all.
	Batches             *Result `json:"batch_commit"`
	TableVersionsPerSec float64 `json:"batch_table_versions_per_sec"`
}

// lanceManifestBytes is the size of every staging manifest written.
const lanceManifestBytes = 400

// lanceCatalog and lanceSchema are the namespace [bench, lance] that
// holds the bench's tables.
const (
	lanceCatalog = "bench"
	lanceSchema  = "lance"
)

func (c *LanceConfig) validate() error {
	if c.Tables < 1 || c.Batch < 1 || c.Clients < 1 || c.Duration <= 0 || c.Warmup < 0 || c.Rounds < 0 {
		return errors.New("bench: lance needs tables, batch and clients >= 1, duration > 0, warmup >= 0 and rounds >= 0")
	}
	return nil
}

// RunLance declares the tables, then measures version/create and
// batch-commit commits in alternating windows and verifies every
// table's versions. Progress goes to log.
func RunLance(ctx context.Context, cfg LanceConfig, log io.Writer) (LanceReport, error) {
	cfg.Rounds = max(cfg.Rounds, 1)
	rep := LanceReport{StartedAt: time.Now().UTC(), Protocol: "lance", Target: "spread", CPUs: runtime.NumCPU(),
		ServeFlags: cfg.ServeFlags, Clients: cfg.Clients, Tables: cfg.Tables, Batch: cfg.Batch,
		BatchGroups: min(cfg.Tables, cfg.Clients), ManifestBytes: lanceManifestBytes,
		DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(), Rounds: cfg.Rounds}
	if err := cfg.validate(); err != nil {
		return rep, err
	}
	if cfg.Leader {
		rep.Target = "leader"
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "raftcat-bench-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return rep, err
	}
	cfg.Dir = dir
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return rep, err
	}
	rc, err := openRaftcat(ctx, Config{URLs: cfg.URLs, Bin: cfg.Bin, Dir: cfg.Dir, ServeFlags: cfg.ServeFlags, Leader: cfg.Leader,
		Auth: cfg.Auth, Token: cfg.Token}, log)
	if err != nil {
		return rep, err
	}
	defer rc.close()
	targets, err := rc.targets(ctx)
	if err != nil {
		return rep, err
	}
	rep.Nodes, rep.Auth = len(rc.urls), rc.authName()
	if u, err := rc.leaderURL(ctx, 10*time.Second); err == nil {
		rep.LeaderURL = u
	} else {
		fmt.Fprintf(log, "bench: %v\n", err)
	}
	warehouse := filepath.Join(cfg.Dir, "lance")
	rep.Warehouse = "file://" + filepath.ToSlash(warehouse)

	ln := &lanceSetup{rc: rc, warehouse: warehouse}
	if err := ln.namespaces(ctx, targets[0]); err != nil {
		return rep, err
	}
	creates := &lanceSystem{kind: "lance", rc: rc}
	batches := &lanceSystem{kind: "batch", rc: rc, batch: cfg.Batch}
	fmt.Fprintf(log, "bench: lance: declaring %d tables for version/create and %d groups of %d for batch-commit in %s\n",
		cfg.Tables, rep.BatchGroups, cfg.Batch, rep.Warehouse)
	if err := creates.prepareTables(ctx, ln, targets, 0, cfg.Tables, cfg.Clients); err != nil {
		return rep, err
	}
	if err := batches.prepareTables(ctx, ln, targets, cfg.Tables, rep.BatchGroups, cfg.Clients); err != nil {
		return rep, err
	}
	if n := ln.replaced.Load(); n > 0 {
		fmt.Fprintf(log, "bench: lance: replaced %d tables an earlier run had declared\n", n)
	}
	runs := []*systemRun{{sys: creates}, {sys: batches}}
	for _, r := range runs {
		s := r.sys.(*lanceSystem)
		r.clients, r.per = s.writers, make([][]sample, len(s.writers))
		// One commit before the clock runs: a warehouse the nodes cannot
		// read fails here, once, instead of in every commit.
		if _, err := s.writers[0].commit(ctx); err != nil {
			return rep, fmt.Errorf("%s: first commit: %w (the nodes read the staging manifests from %s: with --urls they must see --dir at the same path)",
				s.name(), err, rep.Warehouse)
		}
	}
	window := Config{Duration: cfg.Duration, Warmup: cfg.Warmup}
	for round := 1; round <= cfg.Rounds; round++ {
		for _, r := range runs {
			if cfg.Rounds > 1 {
				fmt.Fprintf(log, "bench: round %d of %d\n", round, cfg.Rounds)
			}
			from := time.Now().Add(cfg.Warmup)
			if _, err := r.window(ctx, window, log); err != nil {
				return rep, err
			}
			r.sys.(*lanceSystem).countConflicts(from, from.Add(cfg.Duration))
		}
	}
	for _, r := range runs {
		r.closeClients()
	}
	results := make([]Result, len(runs))
	for i, r := range runs {
		s := r.sys.(*lanceSystem)
		res := summarise(s.name(), r.per, r.measured)
		res.LoadLatency, res.AttemptLatency = percentiles(r.loads), percentiles(r.attempts)
		// Conflicts are the 409 answers within the windows, also those of
		// a commit still retrying when its window ended: a writer that
		// keeps losing would otherwise not show.
		res.Conflicts, res.ConflictsPerSec = s.conflicts, float64(s.conflicts)/r.measured.Seconds()
		res.addCPU(r.server, r.client)
		if err := s.verify(ctx, inFlight{writers: cfg.Clients, windows: cfg.Rounds}); err != nil {
			return rep, fmt.Errorf("%s: %w", s.name(), err)
		}
		res.Verified = true
		results[i] = res
	}
	rep.Commits, rep.Batches = &results[0], &results[1]
	rep.TableVersionsPerSec = rep.Batches.CommitsPerSec * float64(cfg.Batch)
	fmt.Fprintf(log, "bench: %s\n", rep.Commits.Line())
	fmt.Fprintf(log, "bench: %s\n", rep.batchLine())
	var failed []string
	for _, r := range results {
		if r.Errors > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d of %d failed (%s)", r.System, r.Errors, r.Commits+r.Errors, strings.Join(r.ErrorSamples, "; ")))
		}
	}
	if len(failed) > 0 {
		return rep, fmt.Errorf("lance commits failed: %s", strings.Join(failed, "; "))
	}
	return rep, nil
}

// lanceSetup creates the bench's namespace and declares its tables.
type lanceSetup struct {
	rc        *raftcatSystem
	warehouse string // local directory of the tables
	replaced  atomic.Int64
}

// lanceTable is one declared table.
type lanceTable struct {
	name string
	id   []string
	path string // the id in a URL path: the names joined by an escaped $
	dir  string // local directory
	rel  string // store-relative location (without file:///), as manifest paths name it
}

// lanceURL is a Lance route's URL on the node at base; path holds
// ?delimiter=%24 and any further query.
func lanceURL(base, path, query string) string {
	return base + "/lance/v1/" + path + "?delimiter=%24" + query
}

// lancePath joins names into a path id with the delimiter $, escaped.
func lancePath(names ...string) string {
	esc := make([]string, len(names))
	for i, n := range names {
		esc[i] = url.PathEscape(n)
	}
	return strings.Join(esc, "%24")
}

// lanceCode is the code of a Lance error answer ({"error", "code"}), or
// -1.
func lanceCode(answer []byte) int {
	var e struct {
		Code *int `json:"code"`
	}
	if json.Unmarshal(answer, &e) != nil || e.Code == nil {
		return -1
	}
	return *e.Code
}

// Lance error codes the bench tells apart.
const (
	lanceTableExists      = 5
	lanceConcurrentChange = 14
)

// post sends one Lance request and reads the answer into buf.
func (ln *lanceSetup) post(ctx context.Context, u string, body any, buf *bytes.Buffer) (int, []byte, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	return ln.rc.send(ctx, http.MethodPost, u, bytes.NewReader(raw), buf)
}

// namespaces creates the catalog and the schema, leaving them as they
// are when they exist.
func (ln *lanceSetup) namespaces(ctx context.Context, base string) error {
	var buf bytes.Buffer
	for _, ns := range [][]string{{lanceCatalog}, {lanceCatalog, lanceSchema}} {
		code, answer, err := ln.post(ctx, lanceURL(base, "namespace/"+lancePath(ns...)+"/create", ""),
			map[string]any{"id": ns, "mode": "ExistOk"}, &buf)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("create namespace %s: status %d: %.300s: %v", strings.Join(ns, "."), code, answer, err)
		}
	}
	return nil
}

// declare declares table t<n> at <warehouse>/t<n>.lance, with an empty
// _versions/ directory. A table of that name left by an earlier run is
// replaced (deregistered and declared again in one batch commit).
func (ln *lanceSetup) declare(ctx context.Context, base string, n int) (*lanceTable, error) {
	t := &lanceTable{name: fmt.Sprintf("t%d", n)}
	t.id = []string{lanceCatalog, lanceSchema, t.name}
	t.path = lancePath(t.id...)
	t.dir = filepath.Join(ln.warehouse, t.name+".lance")
	if err := os.RemoveAll(t.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(t.dir, "_versions"), 0o755); err != nil {
		return nil, err
	}
	loc := "file://" + filepath.ToSlash(t.dir)
	decl := map[string]any{"id": t.id, "location": loc}
	var buf bytes.Buffer
	code, answer, err := ln.post(ctx, lanceURL(base, "table/"+t.path+"/declare", ""), decl, &buf)
	if err == nil && code == http.StatusConflict && lanceCode(answer) == lanceTableExists {
		ln.replaced.Add(1)
		code, answer, err = ln.post(ctx, lanceURL(base, "table/batch-commit", ""), map[string]any{"operations": []any{
			map[string]any{"deregister_table": map[string]any{"id": t.id}},
			map[string]any{"declare_table": decl}}}, &buf)
	}
	if err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("declare lance table %s: status %d: %.300s: %v", strings.Join(t.id, "."), code, answer, err)
	}
	var declared struct {
		Location string `json:"location"`
	}
	_ = json.Unmarshal(answer, &declared)
	if declared.Location == "" {
		// A batch commit answers {"results": [..., {"declare_table": {...}}]}.
		var batch struct {
			Results []struct {
				Declare struct {
					Location string `json:"location"`
				} `json:"declare_table"`
			} `json:"results"`
		}
		if json.Unmarshal(answer, &batch) == nil && len(batch.Results) == 2 {
			declared.Location = batch.Results[1].Declare.Location
		}
	}
	rel, ok := strings.CutPrefix(declared.Location, "file:///")
	if !ok {
		return nil, fmt.Errorf("declare lance table %s: location %q in %.300s, want %s", strings.Join(t.id, "."), declared.Location, answer, loc)
	}
	t.rel = rel
	return t, nil
}

// lanceSystem is one kind of Lance commit: version/create of one table
// (batch 0), or batch-commit of a group of batch tables.
type lanceSystem struct {
	kind    string // lance (version/create) or batch
	rc      *raftcatSystem
	batch   int
	tables  []*lanceTable
	acked   tableCounts
	writers []committer
	// conflicts counts the 409 answers of the measured windows.
	conflicts int
}

func (s *lanceSystem) name() string { return s.kind }

func (s *lanceSystem) pids() []int { return s.rc.pids() }

func (s *lanceSystem) close() {} // the cluster is closed by RunLance

// prepare is systemRun's; RunLance calls prepareTables instead, which
// needs the setup shared by both kinds.
func (s *lanceSystem) prepare(context.Context, int, int) ([]committer, error) {
	return nil, errors.New("bench: a lance system is prepared with prepareTables")
}

// prepareTables declares the tables t<first>... (groups of them, of
// s.batch tables each, for a batch system) and makes the writers: client
// i talks to node i mod nodes and commits to table (group) i mod groups.
func (s *lanceSystem) prepareTables(ctx context.Context, ln *lanceSetup, targets []string, first, groups, clients int) error {
	per := max(s.batch, 1)
	s.tables = make([]*lanceTable, groups*per)
	err := createAll(ctx, len(s.tables), func(i int) error {
		t, err := ln.declare(ctx, targets[i%len(targets)], first+i)
		s.tables[i] = t
		return err
	})
	if err != nil {
		return err
	}
	s.acked = make(tableCounts, len(s.tables))
	for i := range clients {
		g := i % groups
		w := &lanceWriter{s: s, conn: s.rc.newConn(), base: targets[i%len(targets)], id: i, tables: s.tables[g*per : (g+1)*per]}
		for k := range w.tables {
			w.acked = append(w.acked, &s.acked[g*per+k])
			w.latest = append(w.latest, -1)
		}
		s.writers = append(s.writers, w)
	}
	return nil
}

// countConflicts adds the conflicts answered within a window.
func (s *lanceSystem) countConflicts(from, until time.Time) {
	for _, c := range s.writers {
		s.conflicts += len(c.(*lanceWriter).conflicted.within(from, until))
	}
}

// verify checks every table's latest version against the versions
// acknowledged; an in-flight batch may have made one on each of its
// tables.
func (s *lanceSystem) verify(ctx context.Context, f inFlight) error {
	w := &lanceWriter{s: s, base: s.rc.urls[0]}
	f.writers *= max(s.batch, 1)
	return s.acked.check(func(t int) (int64, error) { return w.load(ctx, s.tables[t]) }, f)
}

// lanceWriter is one Lance writer. It remembers the latest version of
// each of its tables; per commit it stages a manifest for the next
// version of each in the table's _versions/ directory and asks for
// version/create (or a batch-commit of all of them). On a conflict (409,
// code 14) it re-reads the latest versions and tries again with new
// staging manifests.
type lanceWriter struct {
	s      *lanceSystem
	conn   *connClient // nil: the shared client
	base   string
	id     int
	seq    int
	tables []*lanceTable
	latest []int64 // -1: not known
	acked  []*atomic.Int64
	buf    bytes.Buffer
	times  requestTimes
	// conflicted times the commit requests answered with a conflict.
	conflicted timings
}

func (w *lanceWriter) requests() *requestTimes { return &w.times }
func (w *lanceWriter) closeConn()              { w.conn.close() }

// lanceVersionRequest is a version/create body (and a batch commit's
// create_table_version operation).
type lanceVersionRequest struct {
	ID           []string `json:"id"`
	Version      int64    `json:"version"`
	ManifestPath string   `json:"manifest_path"`
	ManifestSize int      `json:"manifest_size"`
	NamingScheme string   `json:"naming_scheme"`
}

// lanceStagingName is the name of a staging manifest of version v, as a
// Lance client names it with the V2 scheme: the final manifest's name
// ({u64::MAX - v:020}.manifest) and a unique suffix.
func lanceStagingName(v int64) string {
	return fmt.Sprintf("%020d.manifest-%s", uint64(math.MaxUint64)-uint64(v), uuid.NewString())
}

// lanceManifest is the bytes of a staging manifest: unique to the commit
// (the server takes a final manifest already there with the same bytes
// for an earlier attempt of the same commit), lanceManifestBytes long.
func lanceManifest(table string, v int64, client, seq int) []byte {
	b := fmt.Appendf(nil, "raftcat bench: manifest of %s version %d, client %d commit %d\n", table, v, client, seq)
	if n := lanceManifestBytes - len(b) - 1; n > 0 {
		b = append(b, bytes.Repeat([]byte{'.'}, n)...)
	}
	return append(b, '\n')
}

func (w *lanceWriter) commit(ctx context.Context) (int, error) {
	conflicts := 0
	for {
		for i, t := range w.tables {
			if w.latest[i] >= 0 {
				continue
			}
			v, err := w.load(ctx, t)
			if err != nil {
				return conflicts, err
			}
			w.latest[i] = v
		}
		w.seq++
		reqs := make([]lanceVersionRequest, len(w.tables))
		staged := make([]string, len(w.tables))
		for i, t := range w.tables {
			v := w.latest[i] + 1
			name := lanceStagingName(v)
			data := lanceManifest(t.name, v, w.id, w.seq)
			staged[i] = filepath.Join(t.dir, "_versions", name)
			if err := os.WriteFile(staged[i], data, 0o644); err != nil {
				w.unstage(staged[:i])
				return conflicts, fmt.Errorf("stage a manifest: %v", err)
			}
			reqs[i] = lanceVersionRequest{ID: t.id, Version: v, ManifestPath: t.rel + "/_versions/" + name,
				ManifestSize: len(data), NamingScheme: "V2"}
		}
		u, body := w.request(reqs)
		start := time.Now()
		// A commit once sent is waited for, also when the window ends: a
		// cancelled one would leave its outcome unknown.
		code, answer, err := w.s.rc.sendOn(context.WithoutCancel(ctx), w.conn, http.MethodPost, u, bytes.NewReader(body), &w.buf)
		w.times.attempts.since(start)
		switch {
		case err != nil:
			w.unstage(staged)
			return conflicts, fmt.Errorf("commit: %v", err)
		case code == http.StatusOK:
			// The leader removed the staging manifests.
			for i := range w.tables {
				w.latest[i]++
				w.acked[i].Add(1)
			}
			return conflicts, w.check(answer, reqs)
		case code == http.StatusConflict && lanceCode(answer) == lanceConcurrentChange:
			// Another writer took a version: re-read and retry.
			conflicts++
			w.conflicted.since(start)
			w.unstage(staged)
			for i := range w.latest {
				w.latest[i] = -1
			}
		default:
			w.unstage(staged)
			return conflicts, fmt.Errorf("commit: status %d: %.300s", code, answer)
		}
	}
}

// request is the commit's URL and body: version/create of the one table,
// or a batch commit of a create_table_version per table.
func (w *lanceWriter) request(reqs []lanceVersionRequest) (string, []byte) {
	if w.s.batch == 0 {
		body, _ := json.Marshal(reqs[0])
		return lanceURL(w.base, "table/"+w.tables[0].path+"/version/create", ""), body
	}
	ops := make([]map[string]lanceVersionRequest, len(reqs))
	for i, r := range reqs {
		ops[i] = map[string]lanceVersionRequest{"create_table_version": r}
	}
	body, _ := json.Marshal(map[string]any{"operations": ops})
	return lanceURL(w.base, "table/batch-commit", ""), body
}

// check reads the versions an acknowledged commit answered with.
func (w *lanceWriter) check(answer []byte, reqs []lanceVersionRequest) error {
	type version struct {
		Version struct {
			Version int64 `json:"version"`
		} `json:"version"`
	}
	var got []int64
	if w.s.batch == 0 {
		var a version
		if err := json.Unmarshal(answer, &a); err != nil {
			return fmt.Errorf("commit: %v", err)
		}
		got = append(got, a.Version.Version)
	} else {
		var a struct {
			Results []struct {
				Create version `json:"create_table_version"`
			} `json:"results"`
		}
		if err := json.Unmarshal(answer, &a); err != nil {
			return fmt.Errorf("commit: %v", err)
		}
		for _, r := range a.Results {
			got = append(got, r.Create.Version.Version)
		}
	}
	if len(got) != len(reqs) {
		return fmt.Errorf("commit: %d versions in the answer for %d asked: %.300s", len(got), len(reqs), answer)
	}
	for i, r := range reqs {
		if got[i] != r.Version {
			return fmt.Errorf("commit: version %d of %s answered for %d asked", got[i], r.ID[2], r.Version)
		}
	}
	return nil
}

// unstage removes staging manifests no commit took.
func (w *lanceWriter) unstage(files []string) {
	for _, f := range files {
		_ = os.Remove(f)
	}
}

// load returns a table's latest version (0 when it has none), as a Lance
// client reads it: version/list, newest first, one version.
func (w *lanceWriter) load(ctx context.Context, t *lanceTable) (int64, error) {
	start := time.Now()
	code, b, err := w.s.rc.sendOn(ctx, w.conn, http.MethodPost, lanceURL(w.base, "table/"+t.path+"/version/list", "&limit=1&descending=true"),
		strings.NewReader("null"), &w.buf)
	w.times.loads.since(start)
	if err != nil || code != http.StatusOK {
		return 0, fmt.Errorf("list versions of %s: status %d: %.300s: %v", t.name, code, b, err)
	}
	var answer struct {
		Versions []struct {
			Version int64 `json:"version"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		return 0, fmt.Errorf("list versions of %s: %v", t.name, err)
	}
	if len(answer.Versions) == 0 {
		return 0, nil
	}
	return answer.Versions[0].Version, nil
}

// batchLine is the one-line summary of the batch commits.
func (rep LanceReport) batchLine() string {
	r := rep.Batches
	return fmt.Sprintf("%-8s %6.0f batches/s (%.0f table-versions/s) %6.1f conflicts/s  p50 %5.2f  p90 %5.2f  p99 %6.2f  p99.9 %6.2f ms  errors %d  server CPU %.2f ms/batch",
		r.System, r.CommitsPerSec, rep.TableVersionsPerSec, r.ConflictsPerSec, r.Latency.P50, r.Latency.P90, r.Latency.P99,
		r.Latency.P999, r.Errors, r.ServerCPUMsPerCommit)
}

// Text is the human summary of a Lance report.
func (rep LanceReport) Text() string {
	var b strings.Builder
	rounds := ""
	if rep.Rounds > 1 {
		rounds = fmt.Sprintf("%d rounds of ", rep.Rounds)
	}
	fmt.Fprintf(&b, "Lance Namespace commits: %d clients (%s) over %d nodes; version/create on %d tables, batch-commit on %d groups of %d tables; "+
		"%s%.0f s measured per kind after %.0f s warm-up, %d CPUs\n",
		rep.Clients, rep.Target, rep.Nodes, rep.Tables, rep.BatchGroups, rep.Batch, rounds, rep.DurationS, rep.WarmupS, rep.CPUs)
	if rep.Commits != nil {
		b.WriteString(rep.Commits.Line() + "\n")
	}
	if rep.Batches != nil {
		b.WriteString(rep.batchLine() + "\n")
	}
	for _, r := range []*Result{rep.Commits, rep.Batches} {
		if r != nil {
			b.WriteString(r.RequestLine() + "\n")
		}
	}
	if rep.Commits != nil && rep.Batches != nil && rep.Commits.Verified && rep.Batches.Verified {
		b.WriteString("every table's latest version counts the versions acknowledged\n")
	}
	return b.String()
}

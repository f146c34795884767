package bench

// `raftcat bench --protocol sharing`: Delta Sharing query latency on a
// generated table with many files. The provider side (schema, external
// tables, share, recipient, grant) goes through UC REST as a provider's
// tooling would; the queries are sent as the reference Python client sends
// them, with the profile's endpoint pointed at each node in turn.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SharingConfig says what `raftcat bench --protocol sharing` measures.
type SharingConfig struct {
	URLs       []string // an existing raftcat cluster; empty: start one
	Bin        string   // raftcat binary, to start a cluster
	Dir        string   // the started cluster's data and the generated tables (default: a temporary one)
	ServeFlags []string // extra `raftcat serve` flags for a started cluster
	Leader     bool     // send every query to the leader instead of spreading over the nodes
	Auth       string   // a started cluster's authentication: none (or empty) or token (see Config.Auth)
	Token      string   // sent as a bearer token (see Config.Token)

	// The generated table: version 0 (protocol and metaData), then
	// Commits commits of FilesPerCommit added files each; file i has
	// part = i mod Partitions.
	Commits        int
	FilesPerCommit int
	Partitions     int
	// Tables is how many identical copies of the table are shared: the
	// first query of each is a cold sample.
	Tables int
	// Clients is the concurrency of the concurrent cached kind.
	Clients int
	// Duration is the measured time of each cached kind; Iterations,
	// when > 0, measures that many queries per kind instead.
	Duration   time.Duration
	Iterations int
	// Warmup runs cached queries, unmeasured, before the cached kinds.
	Warmup time.Duration
	// MaxFiles is the page size of the paged kind (0: not measured).
	MaxFiles int
}

// SharingReport is the machine-readable result of a sharing bench.
type SharingReport struct {
	StartedAt  time.Time        `json:"started_at"`
	Protocol   string           `json:"protocol"` // sharing
	Target     string           `json:"target"`   // spread or leader
	Nodes      int              `json:"nodes"`
	Auth       string           `json:"auth"` // token when the provider's requests carried one, else none
	LeaderURL  string           `json:"leader_url,omitempty"`
	CPUs       int              `json:"cpus"`
	ServeFlags []string         `json:"serve_flags,omitempty"`
	Table      SharingTableInfo `json:"table"`
	Clients    int              `json:"clients"`
	DurationS  float64          `json:"duration_s"` // per cached kind
	Iterations int              `json:"iterations,omitempty"`
	WarmupS    float64          `json:"warmup_s"`
	Kinds      []SharingKind    `json:"kinds"`
	// Verified: every answer was a 200 whose file lines numbered exactly
	// what the table holds (and, for the predicate, only files of the
	// partition asked for).
	Verified bool `json:"verified"`
}

// SharingTableInfo describes the generated table.
type SharingTableInfo struct {
	Commits        int    `json:"commits"` // after version 0
	FilesPerCommit int    `json:"files_per_commit"`
	Files          int    `json:"files"`
	Partitions     int    `json:"partitions"`
	LogBytes       int64  `json:"log_bytes"` // of one copy's _delta_log
	Copies         int    `json:"copies"`
	Location       string `json:"location"` // the directory holding the copies
}

// SharingKind is the result of one kind of query.
type SharingKind struct {
	Kind        string `json:"kind"` // cold, cached, cached_concurrent, predicate, paged
	Description string `json:"description"`
	Clients     int    `json:"clients"`
	Queries     int    `json:"queries"` // measured answers (a paged read counts once)
	Errors      int    `json:"errors"`
	// FilesMin and FilesMax are the fewest and the most file lines one
	// answer (all pages of a paged read) held.
	FilesMin int `json:"files_min"`
	FilesMax int `json:"files_max"`
	// BytesPerAnswer is the mean size of an answer's NDJSON body (all
	// pages of a paged read).
	BytesPerAnswer float64   `json:"bytes_per_answer"`
	Latency        Latencies `json:"latency_ms"` // sending the request to the last byte read
	// FirstByte is the time to the answer's status line and headers,
	// which the server sends with its first 64 KiB of lines.
	FirstByte Latencies `json:"first_byte_ms"`
	// ViaLeader and ViaFollower split Latency by the node the query was
	// sent to (a follower relays it to the leader); spread runs only.
	ViaLeader   *Latencies `json:"via_leader_ms,omitempty"`
	ViaFollower *Latencies `json:"via_follower_ms,omitempty"`
	// Pages and PageLatency: for a paged read, its requests.
	Pages       int        `json:"pages,omitempty"`
	PageLatency *Latencies `json:"page_latency_ms,omitempty"`
	ElapsedS    float64    `json:"elapsed_s"`
	// QueriesPerSec is Queries over ElapsedS (from the first request
	// sent to the last answer read).
	QueriesPerSec float64 `json:"queries_per_sec"`
	// CPU the server processes and this process used during the kind
	// (Linux, started clusters only).
	ServerCPUSeconds    float64  `json:"server_cpu_s"`
	ClientCPUSeconds    float64  `json:"client_cpu_s"`
	ServerCPUMsPerQuery float64  `json:"server_cpu_ms_per_query"`
	ErrorSamples        []string `json:"error_samples,omitempty"`
}

func (c *SharingConfig) validate() error {
	if c.Commits < 1 || c.FilesPerCommit < 1 || c.Partitions < 1 || c.Tables < 1 || c.Clients < 1 ||
		c.Warmup < 0 || c.Iterations < 0 || c.MaxFiles < 0 || (c.Duration <= 0 && c.Iterations == 0) {
		return errors.New("bench: sharing needs commits, files per commit, partitions, tables and clients >= 1, " +
			"duration > 0 or iterations > 0, warmup >= 0 and max files >= 0")
	}
	return nil
}

// RunSharing generates the table, shares its copies and measures the
// queries. Progress goes to log.
func RunSharing(ctx context.Context, cfg SharingConfig, log io.Writer) (SharingReport, error) {
	rep := SharingReport{StartedAt: time.Now().UTC(), Protocol: "sharing", Target: "spread", CPUs: runtime.NumCPU(),
		ServeFlags: cfg.ServeFlags, Clients: cfg.Clients, DurationS: cfg.Duration.Seconds(), Iterations: cfg.Iterations,
		WarmupS: cfg.Warmup.Seconds()}
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
	// Only to split latencies by the node a query went to: a cluster
	// without the leader check is measured all the same.
	if u, err := rc.leaderURL(ctx, 10*time.Second); err == nil {
		rep.LeaderURL = u
	} else {
		fmt.Fprintf(log, "bench: %v; latencies are not split by leader and follower\n", err)
	}

	gen := sharingTable{commits: cfg.Commits, filesPerCommit: cfg.FilesPerCommit, partitions: cfg.Partitions}
	root, err := os.MkdirTemp(cfg.Dir, "sharing-tables-")
	if err != nil {
		return rep, err
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(log, "bench: writing %d copies of a Delta log of %d files (%d commits of %d) in %s\n",
		cfg.Tables, gen.files(), cfg.Commits, cfg.FilesPerCommit, root)
	dirs := make([]string, cfg.Tables)
	for i := range dirs {
		dirs[i] = filepath.Join(root, fmt.Sprintf("copy_%d", i))
	}
	logBytes, err := gen.write(dirs...)
	if err != nil {
		return rep, err
	}
	// The warm-up table (version 0, no files) is queried first: it creates
	// the URL signing key and opens the connections, so that the first
	// cold sample pays for neither.
	warmDir := filepath.Join(root, "warmup")
	if _, err := (sharingTable{partitions: 1}).write(warmDir); err != nil {
		return rep, err
	}
	rep.Table.Commits, rep.Table.FilesPerCommit, rep.Table.Files = cfg.Commits, cfg.FilesPerCommit, gen.files()
	rep.Table.Partitions, rep.Table.LogBytes, rep.Table.Copies, rep.Table.Location = cfg.Partitions, logBytes, cfg.Tables, root

	b := &sharingBench{cfg: cfg, rc: rc, gen: gen, leader: rep.LeaderURL,
		http: &http.Client{Timeout: 5 * time.Minute, Transport: rc.http.Transport}}
	if err := b.provide(ctx, targets[0], dirs, warmDir, log); err != nil {
		return rep, err
	}
	b.targets = targets
	for _, t := range targets {
		b.endpoints = append(b.endpoints, t+b.endpointPath)
	}
	for node := range b.endpoints {
		if s := b.query(ctx, node, "warmup", `{}`, 0, -1); s.err != nil {
			return rep, fmt.Errorf("warm-up query through %s: %w", b.targets[node], s.err)
		}
	}
	rep.Kinds, err = b.measureAll(ctx, log)
	if err != nil {
		return rep, err
	}
	var failed []string
	for _, k := range rep.Kinds {
		if k.Errors > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d of %d failed (%s)", k.Kind, k.Errors, k.Queries+k.Errors, strings.Join(k.ErrorSamples, "; ")))
		}
	}
	if len(failed) > 0 {
		return rep, fmt.Errorf("sharing queries failed: %s", strings.Join(failed, "; "))
	}
	rep.Verified = true
	return rep, nil
}

// sharingBench is one run: the shared tables, the recipient's endpoint
// on each target node, and its token.
type sharingBench struct {
	cfg          SharingConfig
	rc           *raftcatSystem
	gen          sharingTable
	http         *http.Client
	leader       string
	targets      []string
	endpoints    []string // the profile's endpoint on each target
	endpointPath string   // the profile endpoint's path, e.g. /delta-sharing
	token        string
	share        string
	schema       string
	tables       []string // shared names of the copies
}

// provide registers the copies (and the warm-up table) as external Delta
// tables, shares them with history, creates a recipient, downloads its
// profile and grants it the share, all through the node at base.
func (b *sharingBench) provide(ctx context.Context, base string, dirs []string, warmDir string, log io.Writer) error {
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1e12)
	b.schema, b.share = "bench_sharing_"+run, "bench_"+run
	uc := base + "/api/2.1/unity-catalog"
	fmt.Fprintf(log, "bench: sharing %d tables as %s.%s\n", len(dirs), b.share, b.schema)
	if code, err := b.rc.do(http.MethodPost, uc+"/schemas", map[string]any{"name": b.schema, "catalog_name": "unity"}, nil); err != nil || code != http.StatusOK {
		return fmt.Errorf("create schema %s: status %d: %v", b.schema, code, err)
	}
	names := make([]string, len(dirs))
	for i := range dirs {
		names[i] = fmt.Sprintf("copy_%d", i)
	}
	all := append(append([]string{}, names...), "warmup")
	locs := append(append([]string{}, dirs...), warmDir)
	err := createAll(ctx, len(all), func(i int) error {
		body := map[string]any{"name": all[i], "catalog_name": "unity", "schema_name": b.schema, "table_type": "EXTERNAL",
			"data_source_format": "DELTA", "storage_location": "file://" + filepath.ToSlash(locs[i])}
		if code, err := b.rc.do(http.MethodPost, uc+"/tables", body, nil); err != nil || code != http.StatusOK {
			return fmt.Errorf("register table %s: status %d: %v", all[i], code, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if code, err := b.rc.do(http.MethodPost, uc+"/shares", map[string]any{"name": b.share}, nil); err != nil || code != http.StatusOK {
		return fmt.Errorf("create share %s: status %d: %v", b.share, code, err)
	}
	var updates []any
	for _, n := range all {
		updates = append(updates, map[string]any{"action": "ADD", "data_object": map[string]any{
			"name": "unity." + b.schema + "." + n, "data_object_type": "TABLE", "shared_as": b.schema + "." + n,
			"history_data_sharing_status": "ENABLED"}})
	}
	if code, err := b.rc.do(http.MethodPatch, uc+"/shares/"+b.share, map[string]any{"updates": updates}, nil); err != nil || code != http.StatusOK {
		return fmt.Errorf("add the tables to share %s: status %d: %v", b.share, code, err)
	}
	var rec struct {
		Tokens []struct {
			ActivationURL string `json:"activation_url"`
		} `json:"tokens"`
	}
	if code, err := b.rc.do(http.MethodPost, uc+"/recipients", map[string]any{"name": b.share, "authentication_type": "TOKEN"}, &rec); err != nil || code != http.StatusOK {
		return fmt.Errorf("create recipient %s: status %d: %v", b.share, code, err)
	}
	activation := ""
	for _, t := range rec.Tokens {
		if t.ActivationURL != "" {
			activation = t.ActivationURL
		}
	}
	if activation == "" {
		return fmt.Errorf("recipient %s: no activation_url in the answer", b.share)
	}
	var prof struct {
		Version     int    `json:"shareCredentialsVersion"`
		Endpoint    string `json:"endpoint"`
		BearerToken string `json:"bearerToken"`
	}
	if code, err := b.rc.do(http.MethodGet, activation, nil, &prof); err != nil || code != http.StatusOK || prof.BearerToken == "" {
		return fmt.Errorf("download the profile from %s: status %d: %v", activation, code, err)
	}
	ep, err := url.Parse(prof.Endpoint)
	if err != nil || ep.Host == "" {
		return fmt.Errorf("profile endpoint %q is not a URL", prof.Endpoint)
	}
	b.endpointPath, b.token, b.tables = strings.TrimRight(ep.Path, "/"), prof.BearerToken, names
	if code, err := b.rc.do(http.MethodPatch, uc+"/shares/"+b.share+"/permissions", map[string]any{"changes": []any{
		map[string]any{"principal": b.share, "add": []string{"SELECT"}}}}, nil); err != nil || code != http.StatusOK {
		return fmt.Errorf("grant %s on %s: status %d: %v", b.share, b.share, code, err)
	}
	return nil
}

// measureAll runs the kinds in order: the cold queries first, while no
// copy has been read, then the cached ones on the first copy.
func (b *sharingBench) measureAll(ctx context.Context, log io.Writer) ([]SharingKind, error) {
	cfg, total := b.cfg, b.gen.files()
	var out []SharingKind
	// add keeps a kind's result; after a kind with failed queries the
	// run stops (RunSharing reports them).
	add := func(k SharingKind) bool {
		fmt.Fprintf(log, "bench: %s\n", k.line())
		out = append(out, k)
		return k.Errors == 0 && ctx.Err() == nil
	}

	fmt.Fprintf(log, "bench: cold: the first query of each of %d copies\n", cfg.Tables)
	cold := b.run(ctx, 1, cfg.Tables, 0, func(cl, seq int) sharingSample {
		return b.query(ctx, b.nodeFor(cl, seq, 1), b.tables[seq], `{}`, total, -1)
	})
	cold.Kind, cold.Description = "cold", "first query of a copy never read (snapshot built from the log)"
	if !add(cold) {
		return out, ctx.Err()
	}

	first := b.tables[0]
	whole := func(clients int) func(cl, seq int) sharingSample {
		return func(cl, seq int) sharingSample {
			return b.query(ctx, b.nodeFor(cl, seq, clients), first, `{}`, total, -1)
		}
	}
	if cfg.Warmup > 0 {
		fmt.Fprintf(log, "bench: %s warm-up\n", cfg.Warmup)
		b.run(ctx, 1, 0, cfg.Warmup, whole(1))
	}
	fmt.Fprintf(log, "bench: cached: one client querying %s\n", first)
	k := b.run(ctx, 1, cfg.Iterations, cfg.Duration, whole(1))
	k.Kind, k.Description = "cached", "the whole table, one sequential client"
	if !add(k) {
		return out, ctx.Err()
	}

	if cfg.Clients > 1 {
		fmt.Fprintf(log, "bench: cached: %d concurrent clients\n", cfg.Clients)
		k = b.run(ctx, cfg.Clients, cfg.Iterations, cfg.Duration, whole(cfg.Clients))
		k.Kind, k.Description = "cached_concurrent", fmt.Sprintf("the whole table, %d concurrent clients", cfg.Clients)
		if !add(k) {
			return out, ctx.Err()
		}
	}

	fmt.Fprintf(log, "bench: predicate: part = p, one client\n")
	k = b.run(ctx, 1, cfg.Iterations, cfg.Duration, func(cl, seq int) sharingSample {
		part := seq % cfg.Partitions
		hint := fmt.Sprintf(`{"op":"equal","children":[{"op":"column","name":"part","valueType":"int"},`+
			`{"op":"literal","value":"%d","valueType":"int"}]}`, part)
		body, _ := json.Marshal(map[string]string{"jsonPredicateHints": hint})
		return b.query(ctx, b.nodeFor(cl, seq, 1), first, string(body), b.gen.filesOf(part), part)
	})
	k.Kind, k.Description = "predicate", "jsonPredicateHints part = p (one partition), one client"
	if !add(k) {
		return out, ctx.Err()
	}

	if cfg.MaxFiles > 0 {
		fmt.Fprintf(log, "bench: paged: maxFiles %d, one client\n", cfg.MaxFiles)
		k = b.run(ctx, 1, cfg.Iterations, cfg.Duration, func(cl, seq int) sharingSample {
			return b.pagedRead(ctx, b.nodeFor(cl, seq, 1), first, total)
		})
		k.Kind, k.Description = "paged", fmt.Sprintf("the whole table in pages of maxFiles=%d, one client", cfg.MaxFiles)
		add(k)
	}
	return out, ctx.Err()
}

// nodeFor is the target a query goes to: a sequential client goes round
// the nodes; each concurrent client keeps to one, as a client keeps to
// its profile's endpoint.
func (b *sharingBench) nodeFor(client, seq, clients int) int {
	if clients == 1 {
		return seq % len(b.endpoints)
	}
	return client % len(b.endpoints)
}

// sharingSample is one measured answer (or paged read).
type sharingSample struct {
	node        int
	took, first time.Duration
	bytes       int64
	files       int
	pages       []time.Duration
	err         error
}

// run runs clients, each sending one(client, seq) sequentially, until
// iterations answers are in (when > 0) or duration has passed, and
// summarises them. Queries under way when the time is up are finished
// and counted.
func (b *sharingBench) run(ctx context.Context, clients, iterations int, duration time.Duration, one func(client, seq int) sharingSample) SharingKind {
	var tickets atomic.Int64
	start := time.Now()
	deadline := start.Add(duration)
	pids := b.rc.pids()
	s0, c0 := cpuSeconds(pids), cpuSeconds([]int{os.Getpid()})
	per := make([][]sharingSample, clients)
	var wg sync.WaitGroup
	for cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				seq := int(tickets.Add(1) - 1)
				if (iterations > 0 && seq >= iterations) || (iterations == 0 && !time.Now().Before(deadline)) {
					return
				}
				per[cl] = append(per[cl], one(cl, seq))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	k := SharingKind{Clients: clients, ElapsedS: elapsed.Seconds()}
	if len(pids) > 0 {
		k.ServerCPUSeconds = cpuSeconds(pids) - s0
	}
	k.ClientCPUSeconds = cpuSeconds([]int{os.Getpid()}) - c0
	var took, first, pages, leader, follower []time.Duration
	var bytesSum int64
	for _, ss := range per {
		for _, s := range ss {
			if s.err != nil {
				k.Errors++
				if len(k.ErrorSamples) < 5 {
					k.ErrorSamples = append(k.ErrorSamples, s.err.Error())
				}
				continue
			}
			if k.Queries == 0 || s.files < k.FilesMin {
				k.FilesMin = s.files
			}
			k.FilesMax = max(k.FilesMax, s.files)
			k.Queries++
			bytesSum += s.bytes
			took, first = append(took, s.took), append(first, s.first)
			pages = append(pages, s.pages...)
			if b.targets[s.node] == b.leader {
				leader = append(leader, s.took)
			} else {
				follower = append(follower, s.took)
			}
		}
	}
	if k.Queries > 0 {
		k.BytesPerAnswer = float64(bytesSum) / float64(k.Queries)
		k.QueriesPerSec = float64(k.Queries) / elapsed.Seconds()
		k.ServerCPUMsPerQuery = k.ServerCPUSeconds * 1000 / float64(k.Queries)
	}
	k.Latency, k.FirstByte = percentiles(took), percentiles(first)
	if len(pages) > 0 {
		p := percentiles(pages)
		k.PageLatency, k.Pages = &p, len(pages)/max(k.Queries, 1)
	}
	if len(b.targets) > 1 && len(leader) > 0 && len(follower) > 0 {
		l, f := percentiles(leader), percentiles(follower)
		k.ViaLeader, k.ViaFollower = &l, &f
	}
	return k
}

// query sends one POST .../query as the Python client does and reads
// the whole answer. want is the number of file lines the answer must
// hold; part, when >= 0, is the only partition they may be of.
func (b *sharingBench) query(ctx context.Context, node int, table, body string, want, part int) sharingSample {
	s := sharingSample{node: node}
	buf := answerBuffers.Get().(*bytes.Buffer)
	defer answerBuffers.Put(buf)
	status, err := b.post(ctx, node, table, body, buf, &s)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d: %.300s", status, buf.Bytes())
	}
	if err == nil {
		var a answerScan
		if a, err = scanAnswer(buf.Bytes(), part); err == nil && a.files != want {
			err = fmt.Errorf("%d file lines, want %d", a.files, want)
		}
		s.files = a.files
	}
	s.err = wrapQuery(table, b.targets[node], err)
	return s
}

// pagedRead reads a table in pages of MaxFiles, following the page
// tokens on the same node, and checks the pages add up to want files.
func (b *sharingBench) pagedRead(ctx context.Context, node int, table string, want int) sharingSample {
	s := sharingSample{node: node}
	buf := answerBuffers.Get().(*bytes.Buffer)
	defer answerBuffers.Put(buf)
	token := ""
	start := time.Now()
	for {
		req := map[string]any{"maxFiles": b.cfg.MaxFiles}
		if token != "" {
			req["pageToken"] = token
		}
		body, _ := json.Marshal(req)
		var page sharingSample
		status, err := b.post(ctx, node, table, string(body), buf, &page)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("page %d: status %d: %.300s", len(s.pages)+1, status, buf.Bytes())
		}
		var a answerScan
		if err == nil {
			a, err = scanAnswer(buf.Bytes(), -1)
		}
		if err == nil && (a.files > b.cfg.MaxFiles || (a.next != "" && a.files != b.cfg.MaxFiles)) {
			err = fmt.Errorf("page %d holds %d files with maxFiles %d", len(s.pages)+1, a.files, b.cfg.MaxFiles)
		}
		if err != nil {
			s.err = wrapQuery(table, b.targets[node], err)
			return s
		}
		if len(s.pages) == 0 {
			s.first = page.first
		}
		s.pages, s.bytes, s.files = append(s.pages, page.took), s.bytes+page.bytes, s.files+a.files
		if token = a.next; token == "" {
			break
		}
	}
	s.took = time.Since(start)
	if pages := (want + b.cfg.MaxFiles - 1) / b.cfg.MaxFiles; s.files != want || len(s.pages) != max(pages, 1) {
		s.err = wrapQuery(table, b.targets[node], fmt.Errorf("%d pages of %d files in all, want %d pages of %d", len(s.pages), s.files, max(pages, 1), want))
	}
	return s
}

func wrapQuery(table, node string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("query %s through %s: %w", table, node, err)
}

// answerBuffers hold answers while they are checked; reused, so that
// reading a multi-megabyte answer does not grow a new buffer each time.
var answerBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// post sends one query and reads its answer into buf, timing it into s.
func (b *sharingBench) post(ctx context.Context, node int, table, body string, buf *bytes.Buffer, s *sharingSample) (int, error) {
	u := fmt.Sprintf("%s/shares/%s/schemas/%s/tables/%s/query", b.endpoints[node], url.PathEscape(b.share), url.PathEscape(b.schema), url.PathEscape(table))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("delta-sharing-capabilities", "responseformat=parquet")
	req.Header.Set("User-Agent", "raftcat-bench")
	start := time.Now()
	resp, err := b.http.Do(req)
	if err != nil {
		return 0, err
	}
	s.first = time.Since(start)
	defer resp.Body.Close()
	buf.Reset()
	n, err := buf.ReadFrom(resp.Body)
	s.took, s.bytes = time.Since(start), n
	return resp.StatusCode, err
}

// answerScan is what the bench checks of an NDJSON query answer.
type answerScan struct {
	files int
	next  string // the endStreamAction's nextPageToken
}

var (
	fileLine      = []byte(`{"file":`)
	endStreamLine = []byte(`{"endStreamAction":`)
)

// scanAnswer checks an answer's shape (protocol, metaData, then files
// and an optional endStreamAction) and counts its file lines; with part
// >= 0 every file must be of that partition.
func scanAnswer(raw []byte, part int) (answerScan, error) {
	var a answerScan
	wantPart := fmt.Sprint(part)
	for n := 1; len(raw) > 0; n++ {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte{'\n'})
		switch {
		case n == 1 && !bytes.HasPrefix(line, []byte(`{"protocol":`)):
			return a, fmt.Errorf("line 1 is not the protocol: %.200s", line)
		case n == 2 && !bytes.HasPrefix(line, []byte(`{"metaData":`)):
			return a, fmt.Errorf("line 2 is not the metaData: %.200s", line)
		case n <= 2:
		case bytes.HasPrefix(line, fileLine):
			a.files++
			if part < 0 {
				continue
			}
			var f struct {
				File struct {
					PartitionValues map[string]*string `json:"partitionValues"`
				} `json:"file"`
			}
			if err := json.Unmarshal(line, &f); err != nil {
				return a, fmt.Errorf("line %d: %v", n, err)
			}
			if v := f.File.PartitionValues["part"]; v == nil || *v != wantPart {
				return a, fmt.Errorf("line %d: a file of another partition than part = %d: %.200s", n, part, line)
			}
		case bytes.HasPrefix(line, endStreamLine):
			var es struct {
				End struct {
					Next  string `json:"nextPageToken"`
					Error string `json:"errorMessage"`
				} `json:"endStreamAction"`
			}
			if err := json.Unmarshal(line, &es); err != nil {
				return a, fmt.Errorf("line %d: %v", n, err)
			}
			if es.End.Error != "" {
				return a, fmt.Errorf("the answer ended with an error: %s", es.End.Error)
			}
			if len(bytes.TrimSpace(raw)) > 0 {
				return a, fmt.Errorf("line %d: lines after the endStreamAction", n)
			}
			a.next = es.End.Next
		case len(bytes.TrimSpace(line)) == 0 && len(raw) == 0:
		default:
			return a, fmt.Errorf("line %d is not a file: %.200s", n, line)
		}
	}
	return a, nil
}

// sharingTable generates a Delta table's log: version 0 with protocol
// (1, 2) and metaData (id long, part int, v string; partitioned by part),
// then commits 1..commits adding filesPerCommit files each, with stats
// on id. Data files are not written: a query reads only the log.
type sharingTable struct {
	commits, filesPerCommit, partitions int
}

func (g sharingTable) files() int { return g.commits * g.filesPerCommit }

// filesOf is how many files have part = p.
func (g sharingTable) filesOf(p int) int {
	n := g.files() / g.partitions
	if p < g.files()%g.partitions {
		n++
	}
	return n
}

const sharingSchema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"part","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"v","type":"string","nullable":true,"metadata":{}}]}`

// sharingEpoch is the generated commits' timestamp base (ms).
const sharingEpoch = 1_700_000_000_000

// commit returns version v's file.
func (g sharingTable) commit(v int) []byte {
	var b bytes.Buffer
	ts := int64(sharingEpoch + v*1000)
	if v == 0 {
		fmt.Fprintf(&b, `{"commitInfo":{"timestamp":%d,"operation":"CREATE TABLE","operationParameters":{"partitionBy":"[\"part\"]"},"isBlindAppend":true}}`+"\n", ts)
		b.WriteString(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n")
		meta, _ := json.Marshal(map[string]any{"metaData": map[string]any{
			"id": "0b5e55ed-5ca1-4e00-8000-00000000d5b0", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
			"schemaString": sharingSchema, "partitionColumns": []string{"part"}, "configuration": map[string]string{}, "createdTime": ts}})
		b.Write(meta)
		b.WriteByte('\n')
		return b.Bytes()
	}
	fmt.Fprintf(&b, `{"commitInfo":{"timestamp":%d,"operation":"WRITE","operationParameters":{"mode":"Append","partitionBy":"[]"},"isBlindAppend":true}}`+"\n", ts)
	for j := range g.filesPerCommit {
		i := (v-1)*g.filesPerCommit + j
		part := i % g.partitions
		stats := fmt.Sprintf(`{"numRecords":1000,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i*1000, i*1000+999)
		st, _ := json.Marshal(stats)
		fmt.Fprintf(&b, `{"add":{"path":"part=%d/part-%05d-%08x-b3c4-4d5e-8f60-%012x.c000.snappy.parquet","partitionValues":{"part":"%d"},`+
			`"size":%d,"modificationTime":%d,"dataChange":true,"stats":%s}}`+"\n",
			part, j, i, i, part, 100_000+(i*7919)%50_000, ts, st)
	}
	return b.Bytes()
}

// write writes the log into each directory (identical copies) and
// returns the size of one.
func (g sharingTable) write(dirs ...string) (int64, error) {
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(d, "_delta_log"), 0o755); err != nil {
			return 0, err
		}
	}
	var size int64
	for v := 0; v <= g.commits; v++ {
		raw := g.commit(v)
		size += int64(len(raw))
		for _, d := range dirs {
			if err := os.WriteFile(filepath.Join(d, "_delta_log", fmt.Sprintf("%020d.json", v)), raw, 0o644); err != nil {
				return 0, err
			}
		}
	}
	return size, nil
}

// line is a one-line summary of a kind.
func (k SharingKind) line() string {
	return fmt.Sprintf("%-17s %2d clients %5d queries  p50 %7.1f  p90 %7.1f  p99 %7.1f  mean %7.1f ms  %6.1f queries/s  %d-%d files  %.0f KiB/answer  errors %d",
		k.Kind, k.Clients, k.Queries, k.Latency.P50, k.Latency.P90, k.Latency.P99, k.Latency.Mean, k.QueriesPerSec,
		k.FilesMin, k.FilesMax, k.BytesPerAnswer/1024, k.Errors)
}

// Text is the human summary of a sharing report.
func (rep SharingReport) Text() string {
	var b strings.Builder
	t := rep.Table
	fmt.Fprintf(&b, "Delta Sharing queries: %d files (%d commits of %d, %d partitions, log %.1f MiB), %d copies; %d nodes (%s), %d CPUs\n",
		t.Files, t.Commits, t.FilesPerCommit, t.Partitions, float64(t.LogBytes)/(1<<20), t.Copies, rep.Nodes, rep.Target, rep.CPUs)
	fmt.Fprintf(&b, "%-17s %7s %7s %6s %9s %8s %8s %8s %8s %9s %9s %12s %9s\n", "kind", "clients", "queries", "files",
		"KiB/ans", "p50 ms", "p90 ms", "p99 ms", "mean ms", "1st byte", "queries/s", "ldr/flw p50", "srv CPU")
	for _, k := range rep.Kinds {
		files := fmt.Sprint(k.FilesMin)
		if k.FilesMax != k.FilesMin {
			files = fmt.Sprintf("%d-%d", k.FilesMin, k.FilesMax)
		}
		split := "-"
		if k.ViaLeader != nil && k.ViaFollower != nil {
			split = fmt.Sprintf("%.1f/%.1f", k.ViaLeader.P50, k.ViaFollower.P50)
		}
		cpu := "-"
		if k.ServerCPUSeconds > 0 {
			cpu = fmt.Sprintf("%.1f ms/q", k.ServerCPUMsPerQuery)
		}
		fmt.Fprintf(&b, "%-17s %7d %7d %6s %9.0f %8.1f %8.1f %8.1f %8.1f %9.1f %9.1f %12s %9s\n", k.Kind, k.Clients, k.Queries, files,
			k.BytesPerAnswer/1024, k.Latency.P50, k.Latency.P90, k.Latency.P99, k.Latency.Mean, k.FirstByte.P50, k.QueriesPerSec, split, cpu)
	}
	for _, k := range rep.Kinds {
		if k.PageLatency != nil {
			fmt.Fprintf(&b, "%s: %d pages a read, page p50 %.1f ms, p99 %.1f ms\n", k.Kind, k.Pages, k.PageLatency.P50, k.PageLatency.P99)
		}
	}
	if rep.Verified {
		b.WriteString("every answer held the expected files\n")
	}
	return b.String()
}

package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/raftcat/raftcat/internal/localcluster"
	"github.com/raftcat/raftcat/snapshot"
	"github.com/raftcat/raftcat/storage"
)

// ScaleConfig sizes the many-tables measurement.
type ScaleConfig struct {
	Bin string // raftcat binary the nodes run
	Dir string // run directory: snapshot files, node data dirs and logs

	Tables          int // tables in the full state (default 1,000,000)
	Schemas         int // schemas they are spread over (default 1,000)
	CommitsPerTable int // versions ratified per table after its create (default 10)
	BaselineTables  int // tables in the small state loads are compared with (default 1,000)
	Loads           int // measured loads per state (default 2,000)
	HTTPCommits     int // commits through the API after the restore, replayed by the restarted node (default 100)
	Seed            uint64
	// Timeout bounds each wait for the cluster: a restore, a restart, a
	// new node catching up (default 30 minutes).
	Timeout time.Duration
	Flags   []string // extra `raftcat serve` flags for every node
	// NodeMemoryLimit is the GOMEMLIMIT every node runs with ("" for none,
	// "auto" for three quarters of this machine's memory shared by four
	// nodes), so that four nodes holding the full state fit on one host.
	NodeMemoryLimit string
}

func (c *ScaleConfig) defaults() error {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Tables, 1_000_000)
	def(&c.Schemas, 1_000)
	def(&c.CommitsPerTable, 10)
	def(&c.BaselineTables, 1_000)
	def(&c.Loads, 2_000)
	def(&c.HTTPCommits, 100)
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Minute
	}
	switch {
	case c.Bin == "" || c.Dir == "":
		return errors.New("bench scale: the raftcat binary and a run directory are required")
	case c.Tables < 1 || c.Schemas < 1 || c.CommitsPerTable < 1 || c.BaselineTables < 1 || c.Loads < 1 || c.HTTPCommits < 1:
		return errors.New("bench scale: tables, schemas, commits, baseline tables, loads and HTTP commits must be at least 1")
	case c.BaselineTables > c.Tables:
		return errors.New("bench scale: the baseline cannot have more tables than the full state")
	}
	c.Schemas = min(c.Schemas, c.Tables)
	if c.NodeMemoryLimit == "auto" {
		c.NodeMemoryLimit = ""
		if total := scaleMemTotal(); total > 0 {
			c.NodeMemoryLimit = fmt.Sprintf("%dMiB", total*3/4/4>>20)
		}
	}
	c.HTTPCommits = min(c.HTTPCommits, c.Tables)
	dir, err := filepath.Abs(c.Dir)
	c.Dir = dir
	return err
}

// ScaleResult is what the many-tables measurement found. Times are wall
// clock on this machine, with the bench and every node sharing its cores.
type ScaleResult struct {
	Tables          int `json:"tables"`
	Schemas         int `json:"schemas"`
	CommitsPerTable int `json:"commits_per_table"`

	// Building the state in process through the apply path.
	CommandsApplied uint64  `json:"commands_applied"`
	BuildSeconds    float64 `json:"build_seconds"`
	AppliedPerSec   float64 `json:"applied_per_second"`
	// HeapBytes is the live heap the built state takes (after a full GC).
	HeapBytes     uint64  `json:"heap_bytes"`
	BytesPerTable float64 `json:"bytes_per_table"`

	SnapshotFile          string  `json:"snapshot_file"`
	SnapshotBytes         int64   `json:"snapshot_bytes"`
	SnapshotBytesPerTable float64 `json:"snapshot_bytes_per_table"`
	SnapshotWriteMs       float64 `json:"snapshot_write_ms"` // encode, write and fsync
	// SnapshotReadMs is verifying and decoding the file into a state, what
	// every node does to restore or install it; RestoredBytesPerTable is
	// the live heap that state takes.
	SnapshotReadMs        float64 `json:"snapshot_read_ms"`
	RestoredBytesPerTable float64 `json:"restored_bytes_per_table"`

	// RestoreMs is the POST /v1/cluster/restore of the full snapshot until
	// it answered (the leader installed it and a quorum has it);
	// RestoreConvergedMs until every node reported the leader's digest.
	RestoreMs          float64 `json:"restore_ms"`
	RestoreConvergedMs float64 `json:"restore_converged_ms"`
	// NodeRSSBytes is each node's resident memory with the full state;
	// NodePeakRSSBytes each node process's peak at the end of the run
	// (the restarted and the new node count from their start).
	NodeRSSBytes     []int64 `json:"node_rss_bytes"`
	NodePeakRSSBytes []int64 `json:"node_peak_rss_bytes"`

	// HTTPCommits were ratified through the Delta API after the restore,
	// so the restarted node replays them from its log after its snapshot.
	HTTPCommits int          `json:"http_commits"`
	Restart     ScaleCatchUp `json:"restart"`
	Install     ScaleCatchUp `json:"install_snapshot"`
	Baseline    ScaleLoad    `json:"load_baseline"`
	Full        ScaleLoad    `json:"load_full"`
	// FullSettled repeats the full state's loads at the end, once the
	// restore's garbage is collected and every node is idle again.
	FullSettled ScaleLoad     `json:"load_full_settled"`
	Digest      string        `json:"digest"` // the final state digest every node reported
	Dir         string        `json:"dir"`
	Phases      []ScalePhase  `json:"phases"`
	Config      ScaleSettings `json:"config"`
}

// ScaleSettings records the sizes a run used.
type ScaleSettings struct {
	BaselineTables  int      `json:"baseline_tables"`
	Loads           int      `json:"loads"`
	Seed            uint64   `json:"seed"`
	Flags           []string `json:"serve_flags,omitempty"`
	NodeMemoryLimit string   `json:"node_gomemlimit,omitempty"`
}

// ScaleCatchUp is how long a node took to rejoin (a restart from its data
// dir) or join (a new, empty node) the cluster, from its process start.
type ScaleCatchUp struct {
	Node string `json:"node"`
	// ReadyMs: /readyz answers 200 (state loaded, leader known, log applied).
	ReadyMs float64 `json:"ready_ms"`
	// CaughtUpMs: its applied index reached the leader's.
	CaughtUpMs float64 `json:"caught_up_ms"`
	// ConvergedMs: its state digest equals the leader's (includes
	// computing both digests).
	ConvergedMs float64 `json:"converged_ms"`
	// SnapshotIndex is the node's newest snapshot when it caught up;
	// LogEntries how many log entries past it the leader had applied.
	SnapshotIndex uint64 `json:"snapshot_index"`
	LogEntries    uint64 `json:"log_entries"`
	// SnapshotRestores counts the snapshots the process loaded: from its
	// own data dir at start, or installed from the leader.
	SnapshotRestores uint64 `json:"snapshot_restores"`
}

// ScaleLoad is the latency of Delta API loads of random tables, sent
// sequentially round-robin over the nodes.
type ScaleLoad struct {
	Tables int     `json:"tables"`
	Loads  int     `json:"loads"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

// ScalePhase is one step of the run and its wall time.
type ScalePhase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// RunScale builds a catalog of cfg.Tables tables in process through the
// real apply path, measures its memory and snapshot, restores it into a
// three-node cluster of real processes through the HTTP restore endpoint,
// then measures load latency against a small baseline, a follower's
// restart (snapshot plus log replay) and a new node's InstallSnapshot.
// Progress goes to log. On error the result holds what was measured.
func RunScale(ctx context.Context, cfg ScaleConfig, log io.Writer) (ScaleResult, error) {
	if err := cfg.defaults(); err != nil {
		return ScaleResult{}, err
	}
	r := &scaleRun{cfg: cfg, log: log, client: newScaleClient(), rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5ca1e))}
	r.res = ScaleResult{Tables: cfg.Tables, Schemas: cfg.Schemas, CommitsPerTable: cfg.CommitsPerTable, Dir: cfg.Dir,
		Config: ScaleSettings{BaselineTables: cfg.BaselineTables, Loads: cfg.Loads, Seed: cfg.Seed, Flags: cfg.Flags,
			NodeMemoryLimit: cfg.NodeMemoryLimit}}
	err := r.run(ctx)
	return r.res, err
}

type scaleRun struct {
	cfg    ScaleConfig
	log    io.Writer
	client *scaleClient
	rng    *rand.Rand
	res    ScaleResult
	start  time.Time
	phase  time.Time
}

func (r *scaleRun) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "[%7.1fs] %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// done records the phase that began at r.phase and starts the next.
func (r *scaleRun) done(name string) {
	r.res.Phases = append(r.res.Phases, ScalePhase{Name: name, Seconds: time.Since(r.phase).Seconds()})
	r.phase = time.Now()
}

func (r *scaleRun) run(ctx context.Context) error {
	cfg := r.cfg
	r.start, r.phase = time.Now(), time.Now()
	clusterDir := filepath.Join(cfg.Dir, "cluster")
	if err := os.MkdirAll(clusterDir, 0o755); err != nil {
		return err
	}
	// The snapshot's metastore root is the one the nodes are started
	// with, so restored tables live below the cluster's own warehouse.
	root, err := storage.Normalize("file://" + filepath.Join(clusterDir, "warehouse"))
	if err != nil {
		return err
	}

	baseSnap := filepath.Join(cfg.Dir, "baseline.snap")
	baseSchemas := min(cfg.Schemas, cfg.BaselineTables)
	r.logf("building the baseline state: %d tables in %d schemas, %d commits each", cfg.BaselineTables, baseSchemas, cfg.CommitsPerTable)
	base, err := buildScaleState(root, cfg.BaselineTables, baseSchemas, cfg.CommitsPerTable, nil)
	if err != nil {
		return fmt.Errorf("baseline state: %w", err)
	}
	if _, _, err := writeScaleSnapshot(baseSnap, base); err != nil {
		return err
	}
	r.done("baseline state")

	if err := r.buildFull(root); err != nil {
		return err
	}
	if err := r.readBack(); err != nil {
		return err
	}

	r.logf("starting three nodes in %s", clusterDir)
	opts := localcluster.Options{Bin: cfg.Bin, Dir: clusterDir, Nodes: 3, Flags: cfg.Flags}
	if cfg.NodeMemoryLimit != "" {
		opts.Env = []string{"GOMEMLIMIT=" + cfg.NodeMemoryLimit}
	}
	cl, err := localcluster.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	defer cl.Stop()
	r.done("cluster start")

	// The baseline first: its own restore, then loads.
	if _, _, err := r.restore(ctx, cl, baseSnap); err != nil {
		return fmt.Errorf("baseline restore: %w", err)
	}
	r.done("baseline restore")
	r.logf("baseline: %d loads over %d tables", cfg.Loads, cfg.BaselineTables)
	if r.res.Baseline, err = r.client.loads(ctx, cl.URLs(), cfg.Loads, cfg.BaselineTables, baseSchemas, int64(cfg.CommitsPerTable), r.rng); err != nil {
		return fmt.Errorf("baseline loads: %w", err)
	}
	r.logf("baseline loads: p50 %.2f ms, p99 %.2f ms", r.res.Baseline.P50Ms, r.res.Baseline.P99Ms)
	r.done("baseline loads")

	answered, convergedAt, err := r.restore(ctx, cl, r.res.SnapshotFile)
	if err != nil {
		return fmt.Errorf("full restore: %w", err)
	}
	r.res.RestoreMs, r.res.RestoreConvergedMs = scaleMs(answered), scaleMs(convergedAt)
	r.res.NodeRSSBytes, _ = scaleRSS(cl.Pids())
	r.done("full restore")
	r.logf("full: %d loads over %d tables", cfg.Loads, cfg.Tables)
	if r.res.Full, err = r.client.loads(ctx, cl.URLs(), cfg.Loads, cfg.Tables, cfg.Schemas, int64(cfg.CommitsPerTable), r.rng); err != nil {
		return fmt.Errorf("full loads: %w", err)
	}
	r.logf("full loads: p50 %.2f ms, p99 %.2f ms", r.res.Full.P50Ms, r.res.Full.P99Ms)
	r.done("full loads")

	if err := r.commits(ctx, cl); err != nil {
		return err
	}
	r.done("HTTP commits")
	if err := r.restart(ctx, cl); err != nil {
		return err
	}
	r.done("follower restart")
	if err := r.install(ctx, cl); err != nil {
		return err
	}
	r.done("new node")
	_, r.res.NodePeakRSSBytes = scaleRSS(cl.Pids())
	if r.res.FullSettled, err = r.client.loads(ctx, cl.URLs(), cfg.Loads, cfg.Tables, cfg.Schemas, int64(cfg.CommitsPerTable), r.rng); err != nil {
		return fmt.Errorf("settled loads: %w", err)
	}
	r.logf("full loads, settled: p50 %.2f ms, p99 %.2f ms", r.res.FullSettled.P50Ms, r.res.FullSettled.P99Ms)
	r.done("settled loads")
	r.logf("done")
	return nil
}

// buildFull builds the full state, measures it and writes its snapshot,
// then lets it go: the nodes need the memory.
func (r *scaleRun) buildFull(root string) error {
	cfg := r.cfg
	r.logf("building the full state: %d tables in %d schemas, %d commits each", cfg.Tables, cfg.Schemas, cfg.CommitsPerTable)
	full, err := buildScaleState(root, cfg.Tables, cfg.Schemas, cfg.CommitsPerTable, func(done int, took time.Duration) {
		r.logf("  %d tables (%.0f commands/s)", done, float64(done*(2+cfg.CommitsPerTable))/took.Seconds())
	})
	if err != nil {
		return fmt.Errorf("full state: %w", err)
	}
	r.res.CommandsApplied, r.res.BuildSeconds = full.commands, full.elapsed.Seconds()
	r.res.AppliedPerSec = float64(full.commands) / full.elapsed.Seconds()
	r.res.HeapBytes, r.res.BytesPerTable = full.heapBytes, float64(full.heapBytes)/float64(cfg.Tables)
	r.logf("built in %.1f s (%.0f commands/s): live heap %d MiB, %.0f bytes per table",
		r.res.BuildSeconds, r.res.AppliedPerSec, full.heapBytes>>20, r.res.BytesPerTable)
	r.done("build")

	r.res.SnapshotFile = filepath.Join(cfg.Dir, "full.snap")
	size, took, err := writeScaleSnapshot(r.res.SnapshotFile, full)
	if err != nil {
		return err
	}
	r.res.SnapshotBytes, r.res.SnapshotWriteMs = size, scaleMs(took)
	r.res.SnapshotBytesPerTable = float64(size) / float64(cfg.Tables)
	r.logf("snapshot: %d MiB (%.0f bytes per table) written in %.1f s", size>>20, r.res.SnapshotBytesPerTable, took.Seconds())
	runtime.GC()
	debug.FreeOSMemory()
	r.done("snapshot write")
	return nil
}

// readBack decodes the snapshot as a restoring node does, checks what it
// holds and measures the restored state's memory.
func (r *scaleRun) readBack() error {
	cfg := r.cfg
	f, err := os.Open(r.res.SnapshotFile)
	if err != nil {
		return err
	}
	defer f.Close()
	before := liveHeap()
	start := time.Now()
	st, hdr, err := snapshot.ReadState(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return fmt.Errorf("read back %s: %w", r.res.SnapshotFile, err)
	}
	r.res.SnapshotReadMs = scaleMs(time.Since(start))
	after := liveHeap()
	catalogs, schemas, tables, commits := st.Counts()
	if catalogs != 1 || schemas != cfg.Schemas+1 || tables != cfg.Tables || commits != cfg.Tables || hdr.Index != r.res.CommandsApplied {
		return fmt.Errorf("snapshot holds %d catalogs, %d schemas, %d tables, %d commits at index %d; want 1, %d, %d, %d at %d",
			catalogs, schemas, tables, commits, hdr.Index, cfg.Schemas+1, cfg.Tables, cfg.Tables, r.res.CommandsApplied)
	}
	if after > before {
		r.res.RestoredBytesPerTable = float64(after-before) / float64(cfg.Tables)
	}
	runtime.KeepAlive(st)
	runtime.GC()
	debug.FreeOSMemory()
	r.logf("snapshot read back in %.1f s: %.0f bytes per table restored", r.res.SnapshotReadMs/1000, r.res.RestoredBytesPerTable)
	r.done("snapshot read")
	return nil
}

// writeScaleSnapshot writes a built state with the snapshot codec, as a
// raft snapshot or a backup is written, and syncs it.
func writeScaleSnapshot(file string, b scaleBuild) (int64, time.Duration, error) {
	start := time.Now()
	f, err := os.Create(file)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	hdr := snapshot.Header{Index: b.index, Term: 1, CreatedUnixMs: time.Now().UnixMilli(),
		Meta: map[string]string{"source": "raftcat bench scale"}}
	if err := snapshot.WriteState(f, b.state, hdr); err != nil {
		return 0, 0, fmt.Errorf("write snapshot %s: %w", file, err)
	}
	if err := f.Sync(); err != nil {
		return 0, 0, err
	}
	took := time.Since(start)
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	return fi.Size(), took, f.Close()
}

// restore posts a snapshot to the leader and waits until every node has
// it: the time the POST took, and until all digests matched.
func (r *scaleRun) restore(ctx context.Context, cl *localcluster.Cluster, file string) (time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	urls := cl.URLs()
	li, err := r.client.leader(ctx, urls, cl.Names())
	if err != nil {
		return 0, 0, err
	}
	r.logf("restoring %s through %s (leader)", filepath.Base(file), urls[li])
	start := time.Now()
	if err := r.client.restore(ctx, urls[li], file); err != nil {
		return 0, 0, err
	}
	answered := time.Since(start)
	r.logf("  restore answered after %.1f s; waiting for every node", answered.Seconds())
	digest, err := r.client.converged(ctx, urls, urls[li])
	if err != nil {
		return answered, 0, err
	}
	r.res.Digest = digest
	converged := time.Since(start)
	r.logf("  all nodes at digest %.12s after %.1f s", digest, converged.Seconds())
	return answered, converged, nil
}

// commits ratifies one more version of HTTPCommits random tables through
// the Delta API, so the log holds entries past the restored snapshot.
func (r *scaleRun) commits(ctx context.Context, cl *localcluster.Cluster) error {
	cfg := r.cfg
	urls := cl.URLs()
	for k, i := range r.rng.Perm(cfg.Tables)[:cfg.HTTPCommits] {
		if err := r.client.commit(ctx, urls[k%len(urls)], i, cfg.Schemas, int64(cfg.CommitsPerTable)+1); err != nil {
			return err
		}
	}
	r.res.HTTPCommits = cfg.HTTPCommits
	r.logf("%d commits through the Delta API", cfg.HTTPCommits)
	return nil
}

// restart kills a follower with SIGKILL and starts it again from its data
// dir: it loads its snapshot, then replays the log after it.
func (r *scaleRun) restart(ctx context.Context, cl *localcluster.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	urls, names := cl.URLs(), cl.Names()
	li, err := r.client.leader(ctx, urls, names)
	if err != nil {
		return err
	}
	fi := (li + 1) % len(urls)
	r.logf("killing follower %s (SIGKILL) and restarting it", names[fi])
	cl.Kill(fi)
	r.client.forget(urls[fi])
	start := time.Now()
	if err := cl.Restart(fi); err != nil {
		return err
	}
	c, err := r.catchUp(ctx, urls[fi], urls[li], start)
	c.Node = names[fi]
	r.res.Restart = c
	if err != nil {
		return fmt.Errorf("restarted %s: %w", names[fi], err)
	}
	r.logf("  %s ready after %.1f s, caught up after %.1f s, same digest after %.1f s (snapshot %d + %d log entries)",
		c.Node, c.ReadyMs/1000, c.CaughtUpMs/1000, c.ConvergedMs/1000, c.SnapshotIndex, c.LogEntries)
	return nil
}

// install adds a fourth node with an empty data dir: the leader sends it
// the snapshot (InstallSnapshot), then the log after it.
func (r *scaleRun) install(ctx context.Context, cl *localcluster.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	li, err := r.client.leader(ctx, cl.URLs(), cl.Names())
	if err != nil {
		return err
	}
	start := time.Now()
	ni, err := cl.Add()
	if err != nil {
		return err
	}
	urls, names := cl.URLs(), cl.Names()
	r.logf("added %s with an empty data dir", names[ni])
	c, err := r.catchUp(ctx, urls[ni], urls[li], start)
	c.Node = names[ni]
	r.res.Install = c
	if err != nil {
		return fmt.Errorf("new node %s: %w", names[ni], err)
	}
	if c.SnapshotRestores == 0 {
		return fmt.Errorf("new node %s caught up without installing a snapshot", names[ni])
	}
	r.logf("  %s ready after %.1f s, caught up after %.1f s, same digest after %.1f s",
		c.Node, c.ReadyMs/1000, c.CaughtUpMs/1000, c.ConvergedMs/1000)
	// Every node, the new one included, must hold the same state.
	digest, err := r.client.converged(ctx, urls, urls[li])
	if err != nil {
		return err
	}
	r.res.Digest = digest
	return nil
}

// catchUp times a node from its process start: ready, applied index at
// the leader's, then the same digest as the leader.
func (r *scaleRun) catchUp(ctx context.Context, url, leaderURL string, start time.Time) (ScaleCatchUp, error) {
	var c ScaleCatchUp
	if err := r.client.waitReady(ctx, url); err != nil {
		return c, err
	}
	c.ReadyMs = scaleMs(time.Since(start))
	st, err := r.client.caughtUp(ctx, url, leaderURL)
	if err != nil {
		return c, err
	}
	c.CaughtUpMs = scaleMs(time.Since(start))
	c.SnapshotIndex, c.SnapshotRestores = st.LastSnapshotIndex, st.SnapshotRestores
	if st.AppliedIndex > st.LastSnapshotIndex {
		c.LogEntries = st.AppliedIndex - st.LastSnapshotIndex
	}
	if _, err := r.client.converged(ctx, []string{url, leaderURL}, leaderURL); err != nil {
		return c, err
	}
	c.ConvergedMs = scaleMs(time.Since(start))
	return c, nil
}

// scaleRSS reads each process's resident set size and its peak (0 where
// unreadable).
func scaleRSS(pids []int) (rss, peak []int64) {
	rss, peak = make([]int64, len(pids)), make([]int64, len(pids))
	for i, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		rss[i], peak[i] = scaleKB(string(b), "VmRSS:"), scaleKB(string(b), "VmHWM:")
	}
	return rss, peak
}

// scaleKB reads a "Name:   123 kB" line of a /proc file, in bytes.
func scaleKB(text, name string) int64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Text is a human summary of the result.
func (s ScaleResult) Text() string {
	var b strings.Builder
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	fmt.Fprintf(&b, "scale: %d tables in %d schemas, %d commits each\n", s.Tables, s.Schemas, s.CommitsPerTable)
	fmt.Fprintf(&b, "  build (in process)      %d commands in %.1f s (%.0f/s)\n", s.CommandsApplied, s.BuildSeconds, s.AppliedPerSec)
	fmt.Fprintf(&b, "  memory per table        %.0f B built, %.0f B restored from the snapshot (live heap %.0f MiB)\n",
		s.BytesPerTable, s.RestoredBytesPerTable, mib(int64(s.HeapBytes)))
	list := func(ns []int64) string {
		var out []string
		for _, n := range ns {
			out = append(out, fmt.Sprintf("%.0f", mib(n)))
		}
		return strings.Join(out, ", ")
	}
	fmt.Fprintf(&b, "  node RSS                %s MiB with the full state; peaks %s MiB", list(s.NodeRSSBytes), list(s.NodePeakRSSBytes))
	if s.Config.NodeMemoryLimit != "" {
		fmt.Fprintf(&b, " (GOMEMLIMIT %s)", s.Config.NodeMemoryLimit)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  snapshot                %.1f MiB (%.0f B per table), written in %.2f s, read in %.2f s\n",
		mib(s.SnapshotBytes), s.SnapshotBytesPerTable, s.SnapshotWriteMs/1000, s.SnapshotReadMs/1000)
	fmt.Fprintf(&b, "  restore over HTTP       answered in %.2f s, every node at the same digest after %.2f s\n",
		s.RestoreMs/1000, s.RestoreConvergedMs/1000)
	fmt.Fprintf(&b, "  follower restart        ready %.2f s, caught up %.2f s, same digest %.2f s (snapshot + %d log entries)\n",
		s.Restart.ReadyMs/1000, s.Restart.CaughtUpMs/1000, s.Restart.ConvergedMs/1000, s.Restart.LogEntries)
	fmt.Fprintf(&b, "  new empty node          ready %.2f s, caught up %.2f s, same digest %.2f s (InstallSnapshot)\n",
		s.Install.ReadyMs/1000, s.Install.CaughtUpMs/1000, s.Install.ConvergedMs/1000)
	fmt.Fprintf(&b, "  load latency            %8s %8s %8s %8s\n", "p50 ms", "p90 ms", "p99 ms", "max ms")
	for _, l := range []ScaleLoad{s.Baseline, s.Full, s.FullSettled} {
		fmt.Fprintf(&b, "    %9d tables    %8.2f %8.2f %8.2f %8.2f  (%d loads)\n", l.Tables, l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs, l.Loads)
	}
	fmt.Fprintf(&b, "  digest                  %s\n", s.Digest)
	return b.String()
}

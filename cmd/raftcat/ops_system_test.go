package main

// Operations tests against real `raftcat serve` processes: CLI backup and
// restore, members, leaving on SIGTERM, SIGKILL under a write load, a
// rolling restart under a write load, and the restart of the node every
// --join names. Writers follow the Delta API commit
// recovery rules: a 5xx, a transport error or a timeout is retried with
// the byte-identical request; a 200 (first try or retry) means the commit
// landed; only a 409 would mean "rebase", which a table's single writer
// must never see.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// opsNode is a serve process that a test stops, kills and starts again
// from the same data dir. Only the test goroutine touches it.
type opsNode struct {
	*proc
	bin     string
	running bool
	past    []string // logs of earlier runs of this node
}

func (n *opsNode) launch(t *testing.T) {
	t.Helper()
	n.start(t, n.bin)
	n.running = true
}

// exited records the end of the current run.
func (n *opsNode) exited(err error) {
	n.running = false
	n.past = append(n.past, fmt.Sprintf("%s(run ended: %v)\n", n.log.String(), err))
}

// stop signals the process and waits for it to exit; it returns the exit
// error (nil for status 0).
func (n *opsNode) stop(t *testing.T, sig syscall.Signal, timeout time.Duration) error {
	t.Helper()
	if err := n.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, n.name, err)
	}
	select {
	case err := <-n.done:
		n.exited(err)
		return err
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v of %v", n.name, timeout, sig)
		return nil
	}
}

// stillRunning reports whether the process is up, noting an exit the test
// did not cause.
func (n *opsNode) stillRunning() bool {
	if !n.running {
		return false
	}
	select {
	case err := <-n.done:
		n.exited(err)
		return false
	default:
		return true
	}
}

// startOpsCluster starts n nodes forming one cluster, like startProcesses,
// with extra serve flags per node (extra may be nil).
func startOpsCluster(t *testing.T, n int, extra func(i int) []string) []*opsNode {
	t.Helper()
	return startOpsClusterOf(t, raftcatBinary(t), n, extra)
}

// startOpsClusterOf is startOpsCluster running the binary bin.
func startOpsClusterOf(t *testing.T, bin string, n int, extra func(i int) []string) []*opsNode {
	t.Helper()
	ports := freePorts(t, 3*n)
	root := t.TempDir()
	nodes := make([]*opsNode, n)
	t.Cleanup(func() {
		for _, nd := range nodes {
			if nd == nil {
				continue
			}
			if nd.running {
				_ = nd.cmd.Process.Kill()
				nd.exited(<-nd.done)
			}
			if t.Failed() {
				t.Logf("---- %s log ----\n%s", nd.name, strings.Join(nd.past, "---- (restarted) ----\n"))
			}
		}
	})
	for i := range nodes {
		httpP, raftP, gossip := ports[3*i], ports[3*i+1], ports[3*i+2]
		p := &proc{name: fmt.Sprintf("node%d", i+1), url: fmt.Sprintf("http://127.0.0.1:%d", httpP)}
		p.args = []string{"serve", "--node-id", p.name, "--data-dir", filepath.Join(root, p.name),
			"--http-addr", fmt.Sprintf("127.0.0.1:%d", httpP), "--raft-addr", fmt.Sprintf("127.0.0.1:%d", raftP),
			"--gossip-addr", fmt.Sprintf("127.0.0.1:%d", gossip), "--join", fmt.Sprintf("127.0.0.1:%d", ports[2]),
			"--bootstrap-expect", strconv.Itoa(n), "--storage-root", "file://" + filepath.Join(root, "warehouse"),
			"--raft-heartbeat-timeout", "500ms", "--raft-election-timeout", "500ms"}
		if extra != nil {
			p.args = append(p.args, extra(i)...)
		}
		nodes[i] = &opsNode{proc: p, bin: bin}
		nodes[i].launch(t)
	}
	for _, nd := range nodes {
		testcluster.WaitFor(t, 60*time.Second, nd.name+" ready", nd.ready)
	}
	return nodes
}

var opsHTTP = &http.Client{Timeout: 10 * time.Second}

// getJSON is a GET that tolerates a node being down: ok is false on a
// transport error or a non-200 answer.
func getJSON(url string, headers ...string) (map[string]any, bool) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, false
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := opsHTTP.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return nil, false
	}
	return out, true
}

// clusterView is the part of /v1/cluster these tests read.
type clusterView struct {
	State    string `json:"state"`
	LeaderID string `json:"leader_id"`
	Members  []struct {
		ID     string `json:"id"`
		Leader bool   `json:"leader"`
	} `json:"members"`
}

func viewOf(url string) (clusterView, bool) {
	var v clusterView
	resp, err := opsHTTP.Get(url + "/v1/cluster")
	if err != nil {
		return v, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return v, false
	}
	return v, true
}

// gossipStatus is the gossip status a node reports for another node.
func gossipStatus(url, id string) string {
	var v struct {
		Gossip []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"gossip"`
	}
	resp, err := opsHTTP.Get(url + "/v1/cluster")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return ""
	}
	for _, g := range v.Gossip {
		if g.ID == id {
			return g.Status
		}
	}
	return ""
}

// opsLeader waits for a running node that leads and is ready.
func opsLeader(t *testing.T, nodes []*opsNode) *opsNode {
	t.Helper()
	var leader *opsNode
	testcluster.WaitFor(t, 30*time.Second, "a ready leader", func() bool {
		for _, nd := range nodes {
			if v, ok := viewOf(nd.url); ok && nd.running && v.State == "Leader" && nd.ready() {
				leader = nd
				return true
			}
		}
		return false
	})
	return leader
}

func othersThan(nodes []*opsNode, skip *opsNode) []*opsNode {
	var out []*opsNode
	for _, nd := range nodes {
		if nd != skip {
			out = append(out, nd)
		}
	}
	return out
}

// stateDigest returns a node's state digest and applied index.
func stateDigest(url string) (string, uint64, bool) {
	b, ok := getJSON(url + "/v1/cluster/state-digest")
	if !ok {
		return "", 0, false
	}
	d, _ := b["digest"].(string)
	idx, _ := b["applied_index"].(float64)
	return d, uint64(idx), d != ""
}

// waitConverged waits until every node reports the same state digest and
// returns it.
func waitConverged(t *testing.T, nodes []*opsNode, timeout time.Duration) string {
	t.Helper()
	var digest string
	testcluster.WaitFor(t, timeout, "equal state digests on all nodes", func() bool {
		var first string
		for i, nd := range nodes {
			d, _, ok := stateDigest(nd.url)
			if !ok || (i > 0 && d != first) {
				return false
			}
			first = d
		}
		digest = first
		return true
	})
	return digest
}

// runCLI runs the built binary and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(raftcatBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("run raftcat %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

// commitWithBackfill is an add-commit of version v that also reports
// versions up to v-lag as published (lag is at least 1), so the
// unbackfilled-commit limit never applies however many versions a writer
// commits, and the table keeps its last lag commits.
func commitWithBackfill(uuid string, v int64, fileName string, lag int64) []byte {
	body := testcluster.CommitBody(uuid, v, fileName)
	if lag = max(lag, 1); v > lag {
		body["updates"] = append(body["updates"].([]any),
			map[string]any{"action": "set-latest-backfilled-version", "latest-published-version": v - lag})
	}
	raw, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return raw
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TestCLISnapshotSaveInspectRestore backs the catalog up through a
// follower with the CLI, changes it, restores the backup through another
// follower, and checks that every node is back at the backed-up state; a
// truncated backup is refused without changing anything.
func TestCLISnapshotSaveInspectRestore(t *testing.T) {
	nodes := startOpsCluster(t, 3, nil)
	leader := opsLeader(t, nodes)
	followers := othersThan(nodes, leader)
	id := testcluster.CreateManaged(t, followers[0].url, followers[1].url, "unity", "default", "backup")
	path := testcluster.TablePath("unity", "default", "backup")
	commit := func(via *opsNode, v int64, file string) {
		t.Helper()
		r := testcluster.Do(t, http.MethodPost, via.url+path, testcluster.CommitBody(id, v, file))
		if r.Status != http.StatusOK {
			t.Fatalf("commit v%d via %s: %d %s", v, via.name, r.Status, r.Raw)
		}
	}
	for v := int64(1); v <= 3; v++ {
		commit(nodes[v%3], v, testcluster.StagedName(v, "before-backup"))
	}

	file := filepath.Join(t.TempDir(), "catalog.snap")
	code, out, errOut := runCLI(t, "snapshot", "save", "--addr", followers[0].url, file)
	if code != 0 || !strings.Contains(out, "saved") {
		t.Fatalf("snapshot save: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "snapshot", "inspect", file)
	if code != 0 {
		t.Fatalf("snapshot inspect: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+(\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("snapshot inspect output has no %q line:\n%s", name, out)
		}
		return m[1]
	}
	if got := field("format version"); got != "2" {
		t.Errorf("format version %s, want 2\n%s", got, out)
	}
	if idx, err := strconv.ParseUint(field("raft index"), 10, 64); err != nil || idx == 0 {
		t.Errorf("raft index %q, want a positive number\n%s", field("raft index"), out)
	}
	for _, name := range []string{"catalogs", "schemas", "tables"} {
		if got := field(name); got != "1" {
			t.Errorf("%s %s, want 1\n%s", name, got, out)
		}
	}

	// Change the catalog after the backup.
	commit(leader, 4, testcluster.StagedName(4, "after-backup"))
	catalogs := "/api/2.1/unity-catalog/catalogs"
	if r := testcluster.Do(t, http.MethodPost, followers[1].url+catalogs, map[string]any{"name": "extra"}); r.Status != http.StatusOK {
		t.Fatalf("create catalog extra: %d %s", r.Status, r.Raw)
	}
	changed := waitConverged(t, nodes, 30*time.Second)

	code, out, errOut = runCLI(t, "snapshot", "restore", "--addr", followers[1].url, file)
	if code != 0 {
		t.Fatalf("snapshot restore: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	restored := waitConverged(t, nodes, 60*time.Second)
	if restored == changed {
		t.Fatalf("state digest %s did not change with the restore", restored)
	}
	for _, nd := range nodes {
		r := testcluster.Do(t, http.MethodGet, nd.url+path, nil, "X-Raftcat-Consistency", "stale")
		if r.Status != http.StatusOK || r.Body["latest-table-version"] != float64(3) {
			t.Errorf("%s after restore: %d latest-table-version %v, want 3: %s", nd.name, r.Status, r.Body["latest-table-version"], r.Raw)
		}
		if r := testcluster.Do(t, http.MethodGet, nd.url+catalogs+"/extra", nil, "X-Raftcat-Consistency", "stale"); r.Status != http.StatusNotFound {
			t.Errorf("%s after restore: catalog extra answers %d, want 404: %s", nd.name, r.Status, r.Raw)
		}
	}
	if r := testcluster.Do(t, http.MethodGet, followers[0].url+path, nil); r.Status != http.StatusOK || r.Body["latest-table-version"] != float64(3) {
		t.Errorf("linearizable load after restore: %d %s", r.Status, r.Raw)
	}

	// A truncated backup: inspect and restore refuse it, nothing changes.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "truncated.snap")
	if err := os.WriteFile(cut, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "snapshot", "inspect", cut)
	if code == 0 || !strings.Contains(errOut, "truncated") {
		t.Errorf("inspect of a truncated file: exit %d, want non-zero with \"truncated\"\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "snapshot", "restore", "--addr", followers[0].url, cut)
	if code == 0 {
		t.Errorf("restore of a truncated file exited 0\nstdout: %s\nstderr: %s", out, errOut)
	}
	// The CLI refuses before uploading; the cluster must refuse it too.
	req, err := http.NewRequest(http.MethodPost, followers[0].url+"/v1/cluster/restore", bytes.NewReader(raw[:len(raw)/2]))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := opsHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("uploading a truncated snapshot: %d %s, want 400", resp.StatusCode, body)
	}
	for _, nd := range nodes {
		if d, _, ok := stateDigest(nd.url); !ok || d != restored {
			t.Errorf("%s state digest %q after refused restores, want %q", nd.name, d, restored)
		}
	}

	// The restored cluster takes writes: version 4 is free again.
	commit(followers[1], 4, testcluster.StagedName(4, "after-restore"))
}

// TestCLIMembersListsNodesAndOneLeader runs `raftcat members`.
func TestCLIMembersListsNodesAndOneLeader(t *testing.T) {
	nodes := startOpsCluster(t, 3, nil)
	leader := opsLeader(t, nodes)
	code, out, errOut := runCLI(t, "members", "--addr", othersThan(nodes, leader)[0].url)
	if code != 0 {
		t.Fatalf("members: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	rows := map[string][]string{}
	leaders := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "node") {
			continue
		}
		rows[f[0]] = f
		for _, x := range f[1:] {
			if x == "leader" {
				leaders++
			}
		}
	}
	for _, nd := range nodes {
		if rows[nd.name] == nil {
			t.Errorf("members output does not list %s:\n%s", nd.name, out)
		}
	}
	if len(rows) != 3 || leaders != 1 {
		t.Errorf("members output: %d nodes and %d leaders, want 3 and 1:\n%s", len(rows), leaders, out)
	}
	if !strings.Contains(out, "leader "+leader.name) {
		t.Errorf("members output does not name %s as the leader:\n%s", leader.name, out)
	}
}

// TestSIGTERMWithLeaveOnTerminateHandsOverAndLeaves stops the leader with
// SIGTERM while --leave-on-terminate is set: it hands leadership over,
// gets removed, and exits 0; the others carry on as a cluster of two.
func TestSIGTERMWithLeaveOnTerminateHandsOverAndLeaves(t *testing.T) {
	nodes := startOpsCluster(t, 3, func(int) []string { return []string{"--leave-on-terminate"} })
	leader := opsLeader(t, nodes)
	rest := othersThan(nodes, leader)
	if err := leader.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("%s exit after SIGTERM: %v", leader.name, err)
	}
	lastLog := leader.past[len(leader.past)-1]
	if !strings.Contains(lastLog, `msg="left the cluster"`) || strings.Contains(lastLog, "could not leave") {
		t.Errorf("%s did not leave the cluster before stopping", leader.name)
	}
	testcluster.WaitFor(t, 30*time.Second, "a new leader and a configuration without "+leader.name, func() bool {
		var leaderID string
		for _, nd := range rest {
			v, ok := viewOf(nd.url)
			if !ok || v.LeaderID == "" || v.LeaderID == leader.name || len(v.Members) != 2 {
				return false
			}
			if leaderID != "" && v.LeaderID != leaderID {
				return false
			}
			leaderID = v.LeaderID
			for _, m := range v.Members {
				if m.ID == leader.name {
					return false
				}
			}
		}
		return true
	})
	id := testcluster.CreateManaged(t, rest[0].url, rest[1].url, "unity", "default", "after_leave")
	path := testcluster.TablePath("unity", "default", "after_leave")
	for v := int64(1); v <= 2; v++ {
		if r := testcluster.Do(t, http.MethodPost, rest[v%2].url+path, testcluster.CommitBody(id, v, testcluster.StagedName(v, "x"))); r.Status != http.StatusOK {
			t.Fatalf("commit v%d via %s after the leave: %d %s", v, rest[v%2].name, r.Status, r.Raw)
		}
	}
}

// versionStat is how one version's commit went, attempt by attempt.
type versionStat struct {
	version    int64
	file       string
	firstStart time.Time
	firstFail  time.Time // zero when the first attempt succeeded
	failures   int
	causes     []string  // what each failed attempt got
	acked      time.Time // zero when never acknowledged
}

// tableWriter commits versions 1, 2, ... to its own table, following the
// commit recovery rules. It sticks to one node and moves to the next one
// after a failed attempt.
type tableWriter struct {
	name, uuid, path string
	urls             []string
	pref             int
	lag              int64 // commits left unbackfilled (0: 1)
	client           *http.Client

	mu       sync.Mutex
	stats    []versionStat
	problems []string
}

func newTableWriter(t *testing.T, nodes []*opsNode, i int, name string) *tableWriter {
	w := &tableWriter{name: name, path: testcluster.TablePath("unity", "default", name), pref: i % len(nodes),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}}
	for _, nd := range nodes {
		w.urls = append(w.urls, nd.url)
	}
	w.uuid = testcluster.CreateManaged(t, w.urls[i%len(nodes)], w.urls[(i+1)%len(nodes)], "unity", "default", name)
	t.Cleanup(func() {
		w.client.CloseIdleConnections()
		if _, problems := w.snapshot(); t.Failed() && len(problems) > 0 {
			t.Logf("writer %s problems:\n%s", name, strings.Join(problems, "\n"))
		}
	})
	return w
}

func (w *tableWriter) problem(format string, args ...any) {
	w.mu.Lock()
	w.problems = append(w.problems, fmt.Sprintf("%s: ", w.name)+fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

// acked is the number of acknowledged versions (they are 1..acked).
func (w *tableWriter) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.stats {
		if !s.acked.IsZero() {
			n++
		}
	}
	return n
}

// run commits until stop is closed, then finishes the version in flight.
// It gives up on a version (its outcome then stays unknown) at giveUp.
func (w *tableWriter) run(stop <-chan struct{}, giveUp time.Time) {
	for v := int64(1); ; v++ {
		select {
		case <-stop:
			return
		default:
		}
		st := versionStat{version: v, file: testcluster.StagedName(v, w.name+"-"+randomID()), firstStart: time.Now()}
		body := commitWithBackfill(w.uuid, v, st.file, w.lag)
		w.mu.Lock()
		w.stats = append(w.stats, st)
		w.mu.Unlock()
		for {
			if time.Now().After(giveUp) {
				w.problem("version %d unresolved after %d failed attempts", v, st.failures)
				return
			}
			start := time.Now()
			status, answer, err := w.post(body)
			if err == nil && status == http.StatusOK {
				var got struct {
					Latest int64 `json:"latest-table-version"`
				}
				if jerr := json.Unmarshal(answer, &got); jerr != nil || got.Latest != v {
					w.problem("version %d: 200 whose latest-table-version is %d: %s", v, got.Latest, answer)
				}
				st.acked = time.Now()
				w.mu.Lock()
				w.stats[len(w.stats)-1] = st
				w.mu.Unlock()
				break
			}
			if err == nil && status < 500 {
				w.problem("version %d via %s: HTTP %d %s", v, w.urls[w.pref], status, answer)
				return
			}
			if st.failures == 0 {
				st.firstFail = start
			}
			st.failures++
			cause := fmt.Sprint(err)
			if err == nil {
				var e struct {
					Error struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				_ = json.Unmarshal(answer, &e)
				cause = fmt.Sprintf("HTTP %d %s", status, e.Error.Message)
			}
			st.causes = append(st.causes, fmt.Sprintf("%s after %v: %s", w.urls[w.pref], time.Since(start).Round(time.Millisecond), cause))
			w.mu.Lock()
			w.stats[len(w.stats)-1] = st
			w.mu.Unlock()
			w.pref = (w.pref + 1) % len(w.urls)
			time.Sleep(50 * time.Millisecond) // retry backoff of the client, not synchronisation
		}
	}
}

func (w *tableWriter) post(body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, w.urls[w.pref]+w.path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}

func (w *tableWriter) snapshot() ([]versionStat, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]versionStat(nil), w.stats...), append([]string(nil), w.problems...)
}

// runWriters starts the writers; the returned function stops them and
// waits until they have finished.
func runWriters(writers []*tableWriter, giveUp time.Time) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Add(1)
		go func() { defer wg.Done(); w.run(stop, giveUp) }()
	}
	var once sync.Once
	return func() { once.Do(func() { close(stop); wg.Wait() }) }
}

// verifyWriters checks every table against what its writer was told:
// no acknowledged version lost, versions contiguous, acknowledged file
// names kept. Call it once the cluster has converged; the linearizable
// loads go to the leader itself.
func verifyWriters(t *testing.T, nodes []*opsNode, writers []*tableWriter) {
	t.Helper()
	leader := opsLeader(t, nodes)
	for _, w := range writers {
		stats, problems := w.snapshot()
		for _, p := range problems {
			t.Error(p)
		}
		files := map[int64]string{}
		var highest int64
		unresolved := false
		failed, ackedAfterRetry := 0, 0
		for _, s := range stats {
			failed += s.failures
			if s.acked.IsZero() {
				unresolved = true
				continue
			}
			if s.failures > 0 {
				ackedAfterRetry++
			}
			if s.version != highest+1 {
				t.Errorf("%s: acknowledged version %d after %d", w.name, s.version, highest)
			}
			files[s.version], highest = s.file, s.version
		}
		if highest == 0 {
			t.Errorf("%s: no commit was acknowledged", w.name)
		}
		var r testcluster.Response
		testcluster.WaitFor(t, 30*time.Second, w.name+" linearizable load", func() bool {
			r = testcluster.Do(t, http.MethodGet, leader.url+w.path, nil)
			return r.Status == http.StatusOK
		})
		loaded := decodeLoad(t, w.name, r.Raw)
		maxLatest := highest
		if unresolved {
			maxLatest++ // an attempt whose outcome stayed unknown may have landed
		}
		if loaded.Latest < highest || loaded.Latest > maxLatest {
			t.Errorf("%s: latest-table-version %d, acknowledged up to %d (unresolved attempt: %v)", w.name, loaded.Latest, highest, unresolved)
		}
		for i, c := range loaded.Commits {
			if i > 0 && c.Version != loaded.Commits[i-1].Version+1 {
				t.Errorf("%s: commits not contiguous: %d after %d", w.name, c.Version, loaded.Commits[i-1].Version)
			}
			if want, ok := files[c.Version]; ok && c.FileName != want {
				t.Errorf("%s: version %d has file %s, acknowledged %s", w.name, c.Version, c.FileName, want)
			}
		}
		if n := len(loaded.Commits); n == 0 || loaded.Commits[n-1].Version != loaded.Latest {
			t.Errorf("%s: commits %v do not end at latest-table-version %d", w.name, loaded.Commits, loaded.Latest)
		}
		if kept := min(loaded.Latest, max(w.lag, 1)); int64(len(loaded.Commits)) < kept {
			t.Errorf("%s: %d unbackfilled commits %v, want the last %d", w.name, len(loaded.Commits), loaded.Commits, kept)
		}
		// Every node holds the same: the latest version and the
		// unbackfilled commits just checked against the acknowledgements.
		for _, nd := range nodes {
			s := testcluster.Do(t, http.MethodGet, nd.url+w.path, nil, "X-Raftcat-Consistency", "stale")
			if s.Status != http.StatusOK {
				t.Errorf("%s: %s stale load %d %s", w.name, nd.name, s.Status, s.Raw)
				continue
			}
			if got := decodeLoad(t, w.name, s.Raw); got.Latest != loaded.Latest || !slices.Equal(got.Commits, loaded.Commits) {
				t.Errorf("%s: %s stale load: latest-table-version %d commits %v, want %d %v", w.name, nd.name, got.Latest, got.Commits, loaded.Latest, loaded.Commits)
			}
		}
		t.Logf("%s: %d versions acknowledged (%d of them after retries; %d failed attempts), latest-table-version %d",
			w.name, highest, ackedAfterRetry, failed, loaded.Latest)
	}
}

// loadedTable is the part of a Delta table load verifyWriters checks.
type loadedTable struct {
	Latest  int64 `json:"latest-table-version"`
	Commits []struct {
		Version  int64  `json:"version"`
		FileName string `json:"file-name"`
	} `json:"commits"`
}

// decodeLoad decodes a load answer, its commits in ascending versions
// (the answer lists the newest first).
func decodeLoad(t *testing.T, table string, raw []byte) loadedTable {
	t.Helper()
	var l loadedTable
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatalf("%s: decode load: %v: %s", table, err, raw)
	}
	slices.Reverse(l.Commits)
	return l
}

// TestSIGKILLDuringWriteLoadLosesNoAcknowledgedCommit kills a node with
// SIGKILL every ~2 s (the leader first) while four writers commit, and
// restarts it from its data dir at once.
func TestSIGKILLDuringWriteLoadLosesNoAcknowledgedCommit(t *testing.T) {
	nodes := startOpsCluster(t, 3, nil)
	var writers []*tableWriter
	for i := 0; i < 4; i++ {
		writers = append(writers, newTableWriter(t, nodes, i, fmt.Sprintf("load%d", i)))
	}
	stopWriters := runWriters(writers, time.Now().Add(40*time.Second))
	defer stopWriters()

	end := time.Now().Add(8 * time.Second)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	kills := 0
	for time.Now().Before(end) {
		<-tick.C
		victim := nodes[mrand.IntN(len(nodes))]
		if kills == 0 {
			for _, nd := range nodes {
				if v, ok := viewOf(nd.url); ok && v.State == "Leader" {
					victim = nd
				}
			}
		}
		for _, nd := range nodes {
			if !nd.stillRunning() {
				t.Fatalf("%s exited by itself", nd.name)
			}
		}
		v, _ := viewOf(victim.url)
		t.Logf("SIGKILL %s (raft state %q)", victim.name, v.State)
		_ = victim.stop(t, syscall.SIGKILL, 10*time.Second)
		victim.launch(t)
		kills++
	}
	stopWriters()
	for _, nd := range nodes {
		if !nd.stillRunning() {
			t.Fatalf("%s exited by itself", nd.name)
		}
		testcluster.WaitFor(t, 60*time.Second, nd.name+" ready", nd.ready)
	}
	waitConverged(t, nodes, 60*time.Second)
	verifyWriters(t, nodes, writers)
	t.Logf("%d SIGKILLs", kills)
}

// restartMeasure is the client-visible effect of one node's restart.
type restartMeasure struct {
	Node           string `json:"node"`
	WasLeader      bool   `json:"was_leader"`
	UnavailableMs  int64  `json:"unavailable_ms"`
	SlowestAckMs   int64  `json:"slowest_ack_ms"`
	FailedAttempts int    `json:"failed_attempts"`
	StopMs         int64  `json:"stop_ms"`
	StartToReadyMs int64  `json:"start_to_ready_ms"`
}

// TestRollingRestartUnderWriteLoad restarts every node in turn (SIGTERM,
// start again, wait until ready and writes flow) while two writers commit
// continuously, and measures how long clients saw the catalog unavailable.
func TestRollingRestartUnderWriteLoad(t *testing.T) {
	nodes := startOpsCluster(t, 3, nil)
	writers := []*tableWriter{newTableWriter(t, nodes, 0, "rolling0"), newTableWriter(t, nodes, 1, "rolling1")}
	stopWriters := runWriters(writers, time.Now().Add(120*time.Second))
	defer stopWriters()
	progressed := func(what string, base []int, more int) {
		t.Helper()
		testcluster.WaitFor(t, 30*time.Second, what, func() bool {
			for i, w := range writers {
				if w.acked() < base[i]+more {
					return false
				}
			}
			return true
		})
	}
	counts := func() []int {
		var out []int
		for _, w := range writers {
			out = append(out, w.acked())
		}
		return out
	}
	progressed("writers committing", counts(), 3)

	type window struct{ from, to time.Time }
	var windows []window
	measures := make([]restartMeasure, len(nodes))
	for i, nd := range nodes {
		v, _ := viewOf(nd.url)
		measures[i] = restartMeasure{Node: nd.name, WasLeader: v.State == "Leader"}
		from := time.Now()
		if i > 0 {
			windows[i-1].to = from
		}
		windows = append(windows, window{from: from})
		if err := nd.stop(t, syscall.SIGTERM, 30*time.Second); err != nil {
			t.Fatalf("%s exit after SIGTERM: %v", nd.name, err)
		}
		measures[i].StopMs = time.Since(from).Milliseconds()
		started := time.Now()
		nd.launch(t)
		testcluster.WaitFor(t, 60*time.Second, nd.name+" ready after restart", nd.ready)
		measures[i].StartToReadyMs = time.Since(started).Milliseconds()
		progressed("writers committing after restarting "+nd.name, counts(), 3)
	}
	windows[len(windows)-1].to = time.Now()
	stopWriters()
	for _, nd := range nodes {
		if !nd.stillRunning() {
			t.Fatalf("%s exited by itself", nd.name)
		}
	}
	waitConverged(t, nodes, 60*time.Second)
	verifyWriters(t, nodes, writers)

	worst := make([]string, len(nodes))
	for _, w := range writers {
		stats, _ := w.snapshot()
		for _, s := range stats {
			if s.acked.IsZero() {
				continue
			}
			for i, win := range windows {
				if s.firstStart.Before(win.from) || !s.firstStart.Before(win.to) {
					continue
				}
				m := &measures[i]
				m.SlowestAckMs = max(m.SlowestAckMs, s.acked.Sub(s.firstStart).Milliseconds())
				m.FailedAttempts += s.failures
				if gap := s.acked.Sub(s.firstFail).Milliseconds(); !s.firstFail.IsZero() && gap >= m.UnavailableMs {
					m.UnavailableMs = gap
					worst[i] = fmt.Sprintf("%s v%d: %s", w.name, s.version, strings.Join(s.causes, "; "))
				}
			}
		}
	}
	for i, m := range measures {
		t.Logf("rolling restart of %s: unavailable for %d ms (leader: %v, failed attempts %d, slowest acknowledged commit %d ms, SIGTERM to exit %d ms, start to ready %d ms)",
			m.Node, m.UnavailableMs, m.WasLeader, m.FailedAttempts, m.SlowestAckMs, m.StopMs, m.StartToReadyMs)
		if worst[i] != "" {
			t.Logf("  longest: %s", worst[i])
		}
	}
	if out := os.Getenv("RAFTCAT_MEASURE_OUT"); out != "" {
		raw, err := json.MarshalIndent(map[string]any{"rolling_restart": measures}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, append(raw, '\n'), 0o644); err != nil {
			t.Fatalf("write %s: %v", out, err)
		}
	}
}

// TestRestartedSeedNodeForwardsOnceReady restarts node1, the node every
// --join names (as scripts/local-cluster.sh does), after a SIGKILL. Once
// it reports ready it must serve requests that need the leader (here a
// linearizable read, forwarded) within a few election timeouts.
func TestRestartedSeedNodeForwardsOnceReady(t *testing.T) {
	nodes := startOpsCluster(t, 3, nil)
	seed := nodes[0]
	_ = seed.stop(t, syscall.SIGKILL, 10*time.Second)
	// Down long enough for its peers' gossip to declare it failed, as any
	// crash that is not restarted within seconds.
	testcluster.WaitFor(t, 30*time.Second, "peers seeing "+seed.name+" failed", func() bool {
		return gossipStatus(nodes[1].url, seed.name) == "failed"
	})
	seed.launch(t)
	testcluster.WaitFor(t, 60*time.Second, seed.name+" ready after restart", seed.ready)
	readyAt := time.Now()
	var last testcluster.Response
	defer func() {
		if t.Failed() {
			view, _ := getJSON(seed.url + "/v1/cluster")
			t.Logf("%s reported ready but could not reach the leader %v later: %d %s\nits gossip view: %v\n%s's gossip status for it: %s",
				seed.name, time.Since(readyAt).Round(time.Millisecond), last.Status, last.Raw, view["gossip"],
				nodes[1].name, gossipStatus(nodes[1].url, seed.name))
		}
	}()
	testcluster.WaitFor(t, 10*time.Second, seed.name+" serving a forwarded read", func() bool {
		last = testcluster.Do(t, http.MethodGet, seed.url+"/api/2.1/unity-catalog/catalogs/unity", nil)
		return last.Status == http.StatusOK
	})
	t.Logf("%s forwards %v after reporting ready", seed.name, time.Since(readyAt).Round(time.Millisecond))
}

package main

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/localcluster"
	"github.com/raftcat/raftcat/internal/logging"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// freePorts reserves n loopback ports for nodes run as processes (see
// localcluster.FreePorts: they never collide with ports the kernel picks
// for the in-process clusters of other tests).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := localcluster.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// proc is one `raftcat serve` process.
type proc struct {
	name string
	url  string
	args []string
	cmd  *exec.Cmd
	log  *logBuffer
	done chan error

	client *http.Client // what ready asks with (nil: http.DefaultClient)
}

// logBuffer collects log output from concurrent writers.
type logBuffer = logging.Capture

func (p *proc) start(t *testing.T, bin string) {
	t.Helper()
	p.log = &logBuffer{}
	p.cmd = exec.Command(bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	p.done = make(chan error, 1)
	go func() { p.done <- p.cmd.Wait() }()
}

func (p *proc) ready() bool {
	client := p.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Get(p.url + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startProcesses starts n nodes as separate processes forming one cluster;
// extra flags go to every node.
func startProcesses(t *testing.T, n int, extra ...string) []*proc {
	t.Helper()
	bin := raftcatBinary(t)
	ports := freePorts(t, 3*n)
	root := t.TempDir()
	procs := make([]*proc, n)
	for i := range procs {
		http, raftP, gossip := ports[3*i], ports[3*i+1], ports[3*i+2]
		p := &proc{name: fmt.Sprintf("node%d", i+1), url: fmt.Sprintf("http://127.0.0.1:%d", http)}
		p.args = []string{"serve", "--node-id", p.name, "--data-dir", filepath.Join(root, p.name),
			"--http-addr", fmt.Sprintf("127.0.0.1:%d", http), "--raft-addr", fmt.Sprintf("127.0.0.1:%d", raftP),
			"--gossip-addr", fmt.Sprintf("127.0.0.1:%d", gossip), "--join", fmt.Sprintf("127.0.0.1:%d", ports[2]),
			"--bootstrap-expect", strconv.Itoa(n), "--storage-root", "file://" + filepath.Join(root, "warehouse"),
			"--raft-heartbeat-timeout", "500ms", "--raft-election-timeout", "500ms"}
		p.args = append(p.args, extra...)
		p.start(t, bin)
		procs[i] = p
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
			if t.Failed() {
				t.Logf("---- %s log ----\n%s", p.name, p.log.String())
			}
		}
	})
	for _, p := range procs {
		testcluster.WaitFor(t, 60*time.Second, p.name+" ready", p.ready)
	}
	return procs
}

func appliedIndex(t *testing.T, url string) uint64 {
	r := testcluster.Do(t, http.MethodGet, url+"/v1/cluster", nil)
	v, _ := r.Body["applied_index"].(float64)
	return uint64(v)
}

// TestThreeProcessesAgreeOnCommittedTable is the system test: three real
// processes; stage on one, create on another, commit on the third, then
// every node reports the same version and etag.
func TestThreeProcessesAgreeOnCommittedTable(t *testing.T) {
	procs := startProcesses(t, 3)
	id := testcluster.CreateManaged(t, procs[0].url, procs[1].url, "unity", "default", "orders")
	path := testcluster.TablePath("unity", "default", "orders")
	var last testcluster.Response
	for v := int64(1); v <= 3; v++ {
		last = testcluster.Do(t, http.MethodPost, procs[2].url+path, testcluster.CommitBody(id, v, testcluster.StagedName(v, "x")))
		if last.Status != http.StatusOK {
			t.Fatalf("commit v%d via node3: %d %s", v, last.Status, last.Raw)
		}
	}
	wantETag := last.Body["metadata"].(map[string]any)["etag"]
	// `raftcat healthcheck --leader` passes on exactly one node, the one
	// that says it leads.
	// (Leadership could move between the two questions: ask again then.)
	bin := raftcatBinary(t)
	testcluster.WaitFor(t, 20*time.Second, "healthcheck --leader to pass on the leader alone", func() bool {
		passed, leaders := 0, 0
		for _, p := range procs {
			err := exec.Command(bin, "healthcheck", "--addr", p.url, "--leader").Run()
			leads := testcluster.Do(t, http.MethodGet, p.url+"/v1/cluster", nil).Body["state"] == "Leader"
			if leads != (err == nil) {
				return false
			}
			if leads {
				leaders++
			}
			if err == nil {
				passed++
			}
		}
		return passed == 1 && leaders == 1
	})
	for _, p := range procs {
		testcluster.WaitFor(t, 20*time.Second, p.name+" applied the commit", func() bool { return appliedIndex(t, p.url) >= last.Index() })
		for _, consistency := range []string{"stale", "linearizable"} {
			r := testcluster.Do(t, http.MethodGet, p.url+path, nil, "X-Raftcat-Consistency", consistency)
			if r.Status != http.StatusOK {
				t.Fatalf("%s %s load: %d %s", p.name, consistency, r.Status, r.Raw)
			}
			if got := r.Body["latest-table-version"]; got != float64(3) {
				t.Fatalf("%s %s: latest-table-version %v, want 3", p.name, consistency, got)
			}
			if got := r.Body["metadata"].(map[string]any)["etag"]; got != wantETag {
				t.Fatalf("%s %s: etag %v, want %v", p.name, consistency, got, wantETag)
			}
		}
	}
}

// TestProcessKilledAndRestartedKeepsAcknowledgedCommits kills a node with
// SIGKILL and restarts it from its data dir; it must hold every commit
// acknowledged before and after.
func TestProcessKilledAndRestartedKeepsAcknowledgedCommits(t *testing.T) {
	procs := startProcesses(t, 3)
	id := testcluster.CreateManaged(t, procs[0].url, procs[0].url, "unity", "default", "k")
	path := testcluster.TablePath("unity", "default", "k")
	// A 503 (no leader yet, or an unknown outcome while the killed node led)
	// is retried with the identical request, as Delta clients do.
	commit := func(via *proc, v int64) testcluster.Response {
		var r testcluster.Response
		testcluster.WaitFor(t, 30*time.Second, fmt.Sprintf("commit v%d via %s", v, via.name), func() bool {
			r = testcluster.Do(t, http.MethodPost, via.url+path, testcluster.CommitBody(id, v, testcluster.StagedName(v, "k")))
			return r.Status != http.StatusServiceUnavailable
		})
		if r.Status != http.StatusOK {
			t.Fatalf("commit v%d via %s: %d %s", v, via.name, r.Status, r.Raw)
		}
		return r
	}
	commit(procs[1], 1)
	victim := procs[2]
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	last := commit(procs[0], 2)
	victim.start(t, raftcatBinary(t))
	testcluster.WaitFor(t, 60*time.Second, "restarted node ready", victim.ready)
	testcluster.WaitFor(t, 20*time.Second, "restarted node caught up", func() bool { return appliedIndex(t, victim.url) >= last.Index() })
	r := testcluster.Do(t, http.MethodGet, victim.url+path, nil, "X-Raftcat-Consistency", "stale")
	if r.Body["latest-table-version"] != float64(2) {
		t.Fatalf("restarted node: latest-table-version %v, want 2: %s", r.Body["latest-table-version"], r.Raw)
	}
}

// TestSIGTERMStopsCleanly checks graceful shutdown exits 0.
func TestSIGTERMStopsCleanly(t *testing.T) {
	procs := startProcesses(t, 1)
	p := procs[0]
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node did not exit within 30s of SIGTERM")
	}
}

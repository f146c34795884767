package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/faultfs"
)

// raftcat is the binary the disk tests' nodes run, built once.
var raftcat struct {
	once      sync.Once
	bin, diag string
}

func buildRaftcat(t *testing.T) string {
	t.Helper()
	raftcat.once.Do(func() {
		dir, err := os.MkdirTemp("", "raftcat-bin-")
		if err != nil {
			raftcat.diag = err.Error()
			return
		}
		raftcat.bin = filepath.Join(dir, "raftcat")
		if out, err := exec.Command("go", "build", "-o", raftcat.bin, "github.com/raftcat/raftcat/cmd/raftcat").CombinedOutput(); err != nil {
			raftcat.diag = fmt.Sprintf("go build: %v\n%s", err, out)
		}
	})
	if raftcat.diag != "" {
		t.Fatal(raftcat.diag)
	}
	return raftcat.bin
}

// startOnFaultDisks starts three nodes with authentication, TLS and mutual
// TLS on, each on a fault filesystem; it returns the cluster, its admin
// token and the cluster's directory. The nodes' logs are printed if the
// test fails.
func startOnFaultDisks(t *testing.T, ctx context.Context, seed uint64, flags ...string) (*Cluster, string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cluster")
	token := NewToken()
	cl, err := Start(ctx, Options{Bin: buildRaftcat(t), Dir: dir, Nodes: 3, AdminToken: token, Secure: true,
		FaultFS: true, FaultSeed: seed, Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	dumpLogsOnFailure(t, dir, cl.Names())
	return cl, token, dir
}

// call sends a request with the admin token over the cluster's transport
// and decodes a JSON answer into out (if not nil).
func call(cl *Cluster, token, method, url string, body, out any) (int, error) {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: cl.Transport()}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil {
		err = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode, err
}

// dumpLogsOnFailure prints the tail of every node's log if the test fails.
func dumpLogsOnFailure(t *testing.T, dir string, names []string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, name := range names {
			b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
			lines := strings.Split(string(b), "\n")
			t.Logf("%s log (last lines):\n%s", name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
}

// After a power cut of every node, nodes started again without --join
// find one another from the peers they remembered (gossip-peers.json
// must have been synced), and what was acknowledged before the cut is
// there. Auth and TLS are on.
func TestNodesRestartedAloneAfterAPowerCutFindTheirCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, token, dir := startOnFaultDisks(t, ctx, 7)
	for i := range cl.URLs() {
		peers := filepath.Join(dir, cl.Names()[i], "gossip-peers.json")
		eventually(t, time.Minute, "gossip-peers.json of "+cl.Names()[i], func() bool {
			var list []string
			b, err := os.ReadFile(peers)
			return err == nil && json.Unmarshal(b, &list) == nil && len(list) >= 2
		})
	}
	status, err := call(cl, token, http.MethodPost, cl.URLs()[0]+"/api/2.1/unity-catalog/catalogs", map[string]any{"name": "kept"}, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("create a catalog: %d %v", status, err)
	}
	if _, err := cl.PowerCut(false, 0, 1, 2); err != nil {
		t.Fatal(err)
	}
	for i := range cl.URLs() {
		if err := cl.RestartAlone(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range cl.URLs() {
		eventually(t, time.Minute, u+" gossiping with all three nodes", func() bool {
			var st struct {
				Gossip []struct{ Status string } `json:"gossip"`
			}
			code, err := call(cl, token, http.MethodGet, u+"/v1/cluster", nil, &st)
			alive := 0
			for _, m := range st.Gossip {
				if m.Status == "alive" {
					alive++
				}
			}
			return err == nil && code == http.StatusOK && alive == 3
		})
	}
	if status, err := call(cl, token, http.MethodGet, cl.URLs()[1]+"/api/2.1/unity-catalog/catalogs/kept", nil, nil); err != nil || status != http.StatusOK {
		t.Fatalf("the catalog acknowledged before the cut: %d %v", status, err)
	}
}

// A node that took a snapshot and compacted its log keeps both through a
// power cut: the snapshot directory, made after the raft directory was
// last synced, must not vanish with the snapshot in it.
func TestSnapshotsSurviveAPowerCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, token, dir := startOnFaultDisks(t, ctx, 11, "--snapshot-threshold", "16", "--snapshot-interval", "200ms", "--trailing-logs", "4", "--raft-log-store", "boltdb")
	for i := 0; i < 60; i++ {
		status, err := call(cl, token, http.MethodPost, cl.URLs()[i%3]+"/api/2.1/unity-catalog/catalogs",
			map[string]any{"name": "c" + string(rune('a'+i/26)) + string(rune('a'+i%26))}, nil)
		if err != nil || status != http.StatusOK {
			t.Fatalf("create catalog %d: %d %v", i, status, err)
		}
	}
	for _, name := range cl.Names() {
		snaps := filepath.Join(dir, name, "raft", "snapshots")
		eventually(t, time.Minute, name+" taking a snapshot", func() bool {
			entries, _ := os.ReadDir(snaps)
			for _, e := range entries {
				if !strings.HasSuffix(e.Name(), ".tmp") {
					return true
				}
			}
			return false
		})
	}
	if _, err := cl.PowerCut(false, 0, 1, 2); err != nil {
		t.Fatal(err)
	}
	for i := range cl.URLs() {
		if err := cl.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range cl.URLs() {
		var list struct {
			Catalogs []struct{ Name string } `json:"catalogs"`
		}
		eventually(t, time.Minute, u+" listing every catalog", func() bool {
			code, err := call(cl, token, http.MethodGet, u+"/api/2.1/unity-catalog/catalogs?max_results=1000", nil, &list)
			return err == nil && code == http.StatusOK && len(list.Catalogs) >= 60
		})
	}
}

// leaderIndex is the index of the node that says it leads, or -1.
func leaderIndex(cl *Cluster, token string) int {
	for i, u := range cl.URLs() {
		var st struct {
			State string `json:"state"`
		}
		if code, err := call(cl, token, http.MethodGet, u+"/v1/cluster", nil, &st); err == nil && code == http.StatusOK && st.State == "Leader" {
			return i
		}
	}
	return -1
}

// createCatalog creates a catalog through any node that answers, and
// reports whether it was acknowledged.
func createCatalog(cl *Cluster, token string, nodes []int, name string) bool {
	for _, i := range nodes {
		code, err := call(cl, token, http.MethodPost, cl.URLs()[i]+"/api/2.1/unity-catalog/catalogs", map[string]any{"name": name}, nil)
		if err == nil && code == http.StatusOK {
			return true
		}
	}
	return false
}

// A leader whose disk fails a sync halts (exit status 4, saying why) and
// the other two go on committing; after a power cut (what the failed sync
// did not write is gone) and a restart, it catches up and the cluster
// converges with every acknowledged write.
func TestAFailedSyncHaltsTheNodeWhileTheClusterServes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, token, dir := startOnFaultDisks(t, ctx, 5)
	var leader int
	eventually(t, time.Minute, "a leader", func() bool { leader = leaderIndex(cl, token); return leader >= 0 })
	others := []int{(leader + 1) % 3, (leader + 2) % 3}
	cl.Disk(leader).Inject(faultfs.Fault{Kind: faultfs.FsyncEIO})
	var acked []string
	for i := 0; cl.Running(leader); i++ {
		name := fmt.Sprintf("w%d", i)
		if createCatalog(cl, token, append([]int{leader}, others...), name) {
			acked = append(acked, name)
		}
		if i > 2000 {
			t.Fatal("the leader kept running on a disk whose syncs fail")
		}
	}
	code, err := cl.WaitExit(ctx, leader)
	if err != nil || code != 4 {
		t.Fatalf("the leader exited with %d (%v), want 4", code, err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, cl.Names()[leader]+".log"))
	if !strings.Contains(string(log), "halting: the disk failed") {
		t.Fatalf("the leader's log does not say why it halted:\n%s", log)
	}
	eventually(t, time.Minute, "a write through the two others", func() bool { return createCatalog(cl, token, others, "after") })
	acked = append(acked, "after")
	if _, err := cl.PowerCut(false, leader); err != nil {
		t.Fatal(err)
	}
	cl.Disk(leader).Clear()
	if err := cl.Restart(leader); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range acked {
		eventually(t, time.Minute, name+" on the restarted node", func() bool {
			code, err := call(cl, token, http.MethodGet, cl.URLs()[leader]+"/api/2.1/unity-catalog/catalogs/"+name, nil, nil)
			return err == nil && code == http.StatusOK
		})
	}
	t.Logf("%d writes acknowledged, the leader halted, and the restarted node holds them all", len(acked))
}

// A cluster whose disks are full refuses writes in every protocol's own
// error envelope with 507 and Retry-After, changes nothing, keeps serving
// reads, and takes writes again once space is freed.
func TestAFullDiskRefusesWritesInEveryProtocol(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, token, _ := startOnFaultDisks(t, ctx, 3)
	u := cl.URLs()[0]
	if !createCatalog(cl, token, []int{0}, "before") {
		t.Fatal("a write before the disks filled was refused")
	}
	for i := range cl.URLs() {
		used, err := cl.DiskUsage(i)
		if err != nil {
			t.Fatal(err)
		}
		cl.Disk(i).Inject(faultfs.Fault{Kind: faultfs.NoSpace, Limit: used + 1<<20})
	}
	probe := 0
	eventually(t, 30*time.Second, "the leader seeing its disk full", func() bool {
		probe++
		code, err := call(cl, token, http.MethodPost, u+"/api/2.1/unity-catalog/catalogs", map[string]any{"name": fmt.Sprintf("probe%d", probe)}, nil)
		return err == nil && code == http.StatusInsufficientStorage
	})
	writes := []struct {
		name, path string
		body       any
		envelope   string // a key the protocol's error body has
	}{
		{"UC REST", "/api/2.1/unity-catalog/catalogs", map[string]any{"name": "refused"}, "error_code"},
		{"Delta API", "/api/2.1/unity-catalog/delta/v1/catalogs/unity/schemas/default/staging-tables", map[string]any{"name": "refused"}, "error"},
		{"Iceberg REST", "/api/2.1/unity-catalog/iceberg/v1/unity/namespaces", map[string]any{"namespace": []string{"refused"}}, "error"},
		{"Lance", "/lance/v1/namespace/unity%24refused/create?delimiter=%24", map[string]any{}, "error"},
	}
	for _, w := range writes {
		var out map[string]any
		code, err := call(cl, token, http.MethodPost, u+w.path, w.body, &out)
		if err != nil || code != http.StatusInsufficientStorage {
			t.Fatalf("%s on a full disk: %d %v, want 507", w.name, code, err)
		}
		if _, ok := out[w.envelope]; !ok {
			t.Fatalf("%s: 507 without its error envelope (%q): %v", w.name, w.envelope, out)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, u+"/api/2.1/unity-catalog/catalogs", strings.NewReader(`{"name":"refused"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: cl.Transport()}).Do(req)
	if err != nil || resp.StatusCode != http.StatusInsufficientStorage || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a refused write: %v %v, want 507 with Retry-After", resp, err)
	}
	resp.Body.Close()
	if code, err := call(cl, token, http.MethodGet, u+"/api/2.1/unity-catalog/catalogs/refused", nil, nil); err != nil || code != http.StatusNotFound {
		t.Fatalf("a refused write left a catalog behind: %d %v", code, err)
	}
	if code, err := call(cl, token, http.MethodGet, u+"/api/2.1/unity-catalog/catalogs/before", nil, nil); err != nil || code != http.StatusOK {
		t.Fatalf("a read on a full disk: %d %v", code, err)
	}
	for i := range cl.URLs() {
		cl.Disk(i).Clear()
	}
	eventually(t, 30*time.Second, "writes taken again once space was freed", func() bool {
		return createCatalog(cl, token, []int{0, 1, 2}, "after")
	})
	for i := range cl.URLs() {
		if !cl.Running(i) {
			t.Fatalf("%s stopped on a full disk", cl.Names()[i])
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if raftcat.bin != "" {
		os.RemoveAll(filepath.Dir(raftcat.bin))
	}
	os.Exit(code)
}

package cluster_test

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestLogStores runs three nodes with their raft log in each store:
// writes commit, and a restarted node replays its log.
func TestLogStores(t *testing.T) {
	for _, store := range []string{cluster.LogStoreSegments, cluster.LogStoreBoltDB, cluster.LogStoreWAL} {
		t.Run(store, func(t *testing.T) { testLogStore(t, store) })
	}
}

func testLogStore(t *testing.T, store string) {
	nodes := testcluster.Start(t, 3, testcluster.Options{LogStore: store})
	leader := testcluster.Leader(t, nodes)
	for _, name := range []string{"log_a", "log_b"} {
		r := testcluster.Do(t, http.MethodPost, leader.URL+"/api/2.1/unity-catalog/catalogs", map[string]any{"name": name})
		if r.Status != http.StatusOK {
			t.Fatalf("create catalog %s: %d %v", name, r.Status, r.Body)
		}
	}
	follower := testcluster.Followers(nodes, leader)[0]
	waitApplied(t, nodes, leader.Status().AppliedIndex)
	follower.Stop()
	follower.Restart(t)
	testcluster.WaitReady(t, follower)
	requireConverged(t, nodes)
	if _, ok := follower.State().Catalog("log_b"); !ok {
		t.Fatal("the restarted node lost a catalog its log held")
	}
}

// TestLogStoreMismatchIsRefused: a data directory keeps the log store it
// was started with; opening it with the other one fails and says which.
func TestLogStoreMismatchIsRefused(t *testing.T) {
	for _, c := range []struct{ made, opened string }{
		{cluster.LogStoreWAL, cluster.LogStoreBoltDB},
		{cluster.LogStoreBoltDB, cluster.LogStoreWAL},
		{cluster.LogStoreSegments, cluster.LogStoreBoltDB},
		{cluster.LogStoreBoltDB, cluster.LogStoreSegments},
		{cluster.LogStoreWAL, cluster.LogStoreSegments},
		{cluster.LogStoreSegments, cluster.LogStoreWAL},
	} {
		nd := testcluster.Start(t, 1, testcluster.Options{LogStore: c.made})[0]
		nd.Stop()
		r, err := cluster.OpenLog(nd.Dir)
		if err != nil {
			t.Fatalf("raftcat log on a %s data dir: %v", c.made, err)
		}
		if _, last, err := r.Bounds(); err != nil || last == 0 {
			t.Fatalf("the %s log read back empty (last %d): %v", c.made, last, err)
		}
		r.Close()
		n, err := cluster.Open(cluster.Config{NodeID: nd.ID(), DataDir: nd.Dir, RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0",
			BootstrapExpect: 1, LogStore: c.opened, DisableReadLease: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err == nil {
			n.Shutdown()
		}
		if err == nil || !strings.Contains(err.Error(), "--raft-log-store "+c.made) {
			t.Fatalf("a %s data dir opened with %s: %v", c.made, c.opened, err)
		}
	}
}

// TestLogStoreAuto: auto puts a new data directory's log in segment files
// and keeps a data directory's log where it is.
func TestLogStoreAuto(t *testing.T) {
	dirs := map[string]string{cluster.LogStoreAuto: "segments", cluster.LogStoreSegments: "segments", cluster.LogStoreWAL: "wal"}
	for _, made := range []string{cluster.LogStoreAuto, cluster.LogStoreSegments, cluster.LogStoreBoltDB, cluster.LogStoreWAL} {
		nd := testcluster.Start(t, 1, testcluster.Options{LogStore: made})[0]
		r := testcluster.Do(t, http.MethodPost, nd.URL+"/api/2.1/unity-catalog/catalogs", map[string]any{"name": "auto_" + made})
		if r.Status != http.StatusOK {
			t.Fatalf("create catalog: %d %v", r.Status, r.Body)
		}
		nd.Stop()
		for _, dir := range []string{"segments", "wal"} {
			_, err := os.Stat(filepath.Join(nd.Dir, "raft", dir))
			if has := err == nil; has != (dirs[made] == dir) {
				t.Fatalf("made with %s: raft/%s exists %v", made, dir, has)
			}
		}
		n, err := cluster.Open(cluster.Config{NodeID: nd.ID(), DataDir: nd.Dir, RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0",
			BootstrapExpect: 1, LogStore: cluster.LogStoreAuto, DisableReadLease: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatalf("a data dir made with %s reopened with auto: %v", made, err)
		}
		testcluster.WaitFor(t, 10*time.Second, "the catalog replayed", func() bool { _, ok := n.State().Catalog("auto_" + made); return ok })
		n.Shutdown()
	}
}

// TestOpenMakesANewDataDir: a node given a data directory that does not
// exist yet makes it (and its parents) and starts.
func TestOpenMakesANewDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "node1")
	n, err := cluster.Open(cluster.Config{NodeID: "node1", DataDir: dir, RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0",
		BootstrapExpect: 1, DisableReadLease: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("open a node on a new data dir: %v", err)
	}
	n.Shutdown()
	if _, err := os.Stat(filepath.Join(dir, "raft")); err != nil {
		t.Fatal(err)
	}
}

package cluster_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestARottenEntryIsNeverServed: a byte flipped on disk inside a log
// entry of raft-boltdb or raft-wal (which check their structure, not
// what entries hold) is found by the entry's checksum. The node refuses
// to start, with ErrLogDamaged, rather than applying or replicating a
// catalog under another name, and reading the log offline says the same.
func TestARottenEntryIsNeverServed(t *testing.T) {
	for _, c := range []struct{ store, files string }{
		{cluster.LogStoreBoltDB, "raft/raft.db"},
		{cluster.LogStoreWAL, "raft/wal/*.wal"},
	} {
		t.Run(c.store, func(t *testing.T) {
			nd := testcluster.Start(t, 1, testcluster.Options{LogStore: c.store})[0]
			// Another entry follows the rotten one: raft-wal takes damage in
			// its last batch for a torn write and drops it (docs/design.md).
			name := "rot_target_catalog_name"
			for _, n := range []string{name, "after_the_rot"} {
				r := testcluster.Do(t, http.MethodPost, nd.URL+"/api/2.1/unity-catalog/catalogs", map[string]any{"name": n})
				if r.Status != http.StatusOK {
					t.Fatalf("create catalog %s: %d %v", n, r.Status, r.Body)
				}
			}
			nd.Stop()
			if n := flipEvery(t, filepath.Join(nd.Dir, c.files), []byte(name)); n == 0 {
				t.Fatalf("the catalog's name is nowhere in %s", c.files)
			}
			n, err := cluster.Open(cluster.Config{NodeID: nd.ID(), DataDir: nd.Dir, RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0",
				BootstrapExpect: 1, LogStore: c.store, DisableReadLease: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err == nil {
				n.Shutdown()
			}
			if !errors.Is(err, cluster.ErrLogDamaged) {
				t.Fatalf("a node whose log entry rotted opened with %v, want ErrLogDamaged", err)
			}
			if !readsDamaged(t, nd.Dir) {
				t.Fatal("raftcat log read every entry back without finding the damage")
			}
		})
	}
}

// flipEvery flips one bit in every copy of want in the files matching
// pattern, and returns how many it flipped.
func flipEvery(t *testing.T, pattern string, want []byte) int {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for at, off := 0, 0; ; off += at + len(want) {
			if at = bytes.Index(raw[off:], want); at < 0 {
				break
			}
			raw[off+at+4] ^= 0x01
			n++
		}
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// readsDamaged reports whether reading dataDir's log offline meets an
// entry that fails its checksum.
func readsDamaged(t *testing.T, dataDir string) bool {
	t.Helper()
	r, err := cluster.OpenLog(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first, last, err := r.Bounds()
	if err != nil {
		t.Fatal(err)
	}
	for i := first; i <= last; i++ {
		if _, err := r.Entry(i); errors.Is(err, cluster.ErrLogDamaged) {
			return true
		}
	}
	return false
}

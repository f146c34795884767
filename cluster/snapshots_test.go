package cluster_test

import (
	"cmp"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// snapshotNames are the complete snapshots in a node's data directory,
// oldest first (raft names them term-index-time, not zero-padded).
func snapshotNames(t *testing.T, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "raft", "snapshots"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		_, err := os.Stat(filepath.Join(dataDir, "raft", "snapshots", e.Name(), "meta.json"))
		if e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") && err == nil {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(snapshotIndex(t, a), snapshotIndex(t, b)) })
	return names
}

// TestARottenSnapshotIsNeverRestored: a byte flipped in the newest
// snapshot on disk fails raft's checksum of it; the node restores the
// snapshot before it and replays the log from there, so the catalog comes
// back under its own name, not the rotten one.
func TestARottenSnapshotIsNeverRestored(t *testing.T) {
	nd := testcluster.Start(t, 1, testcluster.Options{SnapshotThreshold: 16, SnapshotInterval: 100 * time.Millisecond})[0]
	const name = "rot_in_the_snapshot"
	createCatalogs(t, nd.URL, name)
	for i := 0; len(snapshotNames(t, nd.Dir)) < 2; i++ {
		if i == 2000 {
			t.Fatal("the node took fewer than two snapshots")
		}
		createCatalogs(t, nd.URL, fmt.Sprintf("c%04d", i))
	}
	nd.Stop()
	names := snapshotNames(t, nd.Dir)
	if n := flipEvery(t, filepath.Join(nd.Dir, "raft", "snapshots", names[len(names)-1], "state.bin"), []byte(name)); n == 0 {
		t.Fatal("the catalog's name is not in the newest snapshot")
	}
	nd.Restart(t)
	testcluster.WaitReady(t, nd)
	if _, ok := nd.State().Catalog(name); !ok {
		t.Fatalf("catalog %s is gone after the restart: the rotten snapshot was restored", name)
	}
	if got := nd.Status().LastSnapshotIndex; got >= snapshotIndex(t, names[len(names)-1]) {
		t.Fatalf("the node restored snapshot index %d, not one before the rotten %s", got, names[len(names)-1])
	}
}

// snapshotIndex is the index in a snapshot's name (term-index-time).
func snapshotIndex(t *testing.T, name string) uint64 {
	t.Helper()
	var term, index uint64
	if _, err := fmt.Sscanf(strings.ReplaceAll(name, "-", " "), "%d %d", &term, &index); err != nil {
		t.Fatalf("snapshot name %q: %v", name, err)
	}
	return index
}

func createCatalogs(t *testing.T, url string, names ...string) {
	t.Helper()
	for _, n := range names {
		r := testcluster.Do(t, http.MethodPost, url+"/api/2.1/unity-catalog/catalogs", map[string]any{"name": n})
		if r.Status != http.StatusOK {
			t.Fatalf("create catalog %s: %d %v", n, r.Status, r.Body)
		}
	}
}

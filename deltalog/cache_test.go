package deltalog_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/raftcat/raftcat/deltalog"
)

func TestSecondSnapshotIsACacheHit(t *testing.T) {
	rec := record(newStore(t))
	cache := deltalog.NewCache(0)
	l := open(t, rec, cache, deltalog.Source{Location: tableURL(t, "basic-with-inserts-deletes-checkpoint")})
	first := snapshot(t, l, 13)
	_, _, hits0, _ := cache.Stats()
	rec.readNames()
	// A new Log (as each request opens one) shares the cache.
	l2 := open(t, rec, cache, deltalog.Source{Location: tableURL(t, "basic-with-inserts-deletes-checkpoint")})
	second := snapshot(t, l2, 13)
	entries, bytes, hits, _ := cache.Stats()
	if hits <= hits0 || entries == 0 || bytes <= 0 {
		t.Fatalf("stats after the second call: entries %d bytes %d hits %d (before %d)", entries, bytes, hits, hits0)
	}
	if reads := rec.readNames(); len(reads) != 0 {
		t.Errorf("the cached snapshot read %v", reads)
	}
	if !reflect.DeepEqual(first, second) {
		t.Error("cached snapshot differs")
	}
}

func TestCacheEvictsBeyondItsBound(t *testing.T) {
	st := newStore(t)
	probe := deltalog.NewCache(0)
	l := open(t, st, probe, deltalog.Source{Location: tableURL(t, "simple_table")})
	snapshot(t, l, 4)
	_, one, _, _ := probe.Stats() // the size of one snapshot
	bound := one * 5 / 2
	cache := deltalog.NewCache(bound)
	l = open(t, st, cache, deltalog.Source{Location: tableURL(t, "simple_table")})
	for v := int64(0); v <= 4; v++ {
		snapshot(t, l, v)
		if _, b, _, _ := cache.Stats(); b > bound {
			t.Fatalf("cache holds %d bytes, bound %d", b, bound)
		}
	}
	entries, _, _, _ := cache.Stats()
	if entries >= 5 || entries < 1 {
		t.Fatalf("%d entries after 5 snapshots with room for about 2", entries)
	}
	// Evicted versions are rebuilt, correctly.
	if got := rowCount(t, st, l, snapshot(t, l, 0)); got != 5 {
		t.Fatalf("rebuilt v0 has %d rows", got)
	}
}

// A snapshot built on a cached earlier one equals one built from scratch,
// and reads only the commits in between.
func TestIncrementalEqualsFromScratch(t *testing.T) {
	for _, name := range []string{"basic-with-inserts-deletes-checkpoint", "dv-with-columnmapping", "simple_table", "cdf-table", "checkpoint-v2-table"} {
		rec := record(newStore(t))
		cache := deltalog.NewCache(0)
		l := open(t, rec, cache, deltalog.Source{Location: tableURL(t, name)})
		snapshot(t, l, l.Latest()) // timestamps need the latest metadata
		for v := int64(0); v <= l.Latest(); v++ {
			rec.readNames()
			inc := snapshot(t, l, v)
			reads := rec.readNames()
			scratch := snapshot(t, open(t, rec, nil, deltalog.Source{Location: tableURL(t, name)}), v)
			if !reflect.DeepEqual(inc, scratch) {
				t.Fatalf("%s v%d: incremental snapshot differs from a full build", name, v)
			}
			if v > 0 && v != l.Latest() && !reflect.DeepEqual(reads, map[string]int{versionName(v) + ".json": 1}) {
				t.Errorf("%s v%d: incremental build read %v", name, v, reads)
			}
		}
	}
}

func TestConcurrentSnapshotsBuildOnce(t *testing.T) {
	rec := record(newStore(t))
	cache := deltalog.NewCache(0)
	src := deltalog.Source{Location: tableURL(t, "basic-with-inserts-deletes-checkpoint")}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := deltalog.Open(context.Background(), rec, cache, src)
			if err == nil {
				_, err = l.Snapshot(context.Background(), 13)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := rec.readNames()[versionName(10)+".checkpoint.parquet"]; n != 1 {
		t.Fatalf("checkpoint read %d times by 32 concurrent requests", n)
	}
}

// A cancelled request does not fail others waiting on the same build.
func TestCancelledLeaderDoesNotFailWaiters(t *testing.T) {
	cache := deltalog.NewCache(0)
	st := newStore(t)
	src := deltalog.Source{Location: tableURL(t, "basic-with-inserts-deletes-checkpoint")}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := open(t, st, cache, src)
	if _, err := l.Snapshot(ctx, 13); err == nil {
		t.Fatal("snapshot with a cancelled context succeeded")
	}
	if got := rowCount(t, st, l, snapshot(t, l, 13)); got != 41 {
		t.Fatalf("rows %d", got)
	}
}

// Re-creating a table at the same location does not serve the old one's
// cached snapshots.
func TestRecreatedTableMissesTheCache(t *testing.T) {
	dir := copyTable(t, "simple_table")
	st := newStore(t)
	cache := deltalog.NewCache(0)
	l := open(t, st, cache, deltalog.Source{Location: fileURL(dir)})
	if got := rowCount(t, st, l, snapshot(t, l, 0)); got != 5 {
		t.Fatalf("rows %d", got)
	}
	if err := os.RemoveAll(filepath.Join(dir, "_delta_log")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "_delta_log", versionName(0)+".json"), protocolLine+"\n"+metadataLine+"\n"+addLine("x.parquet", 7)+"\n")
	l = open(t, st, cache, deltalog.Source{Location: fileURL(dir)})
	if got := filePaths(snapshot(t, l, 0)); !reflect.DeepEqual(got, []string{"x.parquet"}) {
		t.Fatalf("re-created table files %v", got)
	}
}

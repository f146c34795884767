package deltalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/raftcat/raftcat/deltalog"
	"github.com/raftcat/raftcat/internal/goldentables"
	"github.com/raftcat/raftcat/internal/parquettest"
	"github.com/raftcat/raftcat/storage"
)

// testdataDir holds the twelve third-party Delta tables (see its README).
func testdataDir(t testing.TB) string { return goldentables.Dir(t) }

func fileURL(dir string) string { return "file://" + filepath.ToSlash(dir) }

// tableURL is the file:// URL of a shared test table, read in place.
func tableURL(t testing.TB, name string) string {
	return fileURL(filepath.Join(testdataDir(t), name))
}

func newStore(t testing.TB) *storage.Blobs {
	st := storage.NewBlobs(storage.BlobOptions{})
	t.Cleanup(func() { st.Close() })
	return st
}

// copyTable copies a shared test table into a writable temp dir.
func copyTable(t testing.TB, name string) string { return goldentables.Copy(t, name) }

func open(t testing.TB, st deltalog.Store, cache *deltalog.Cache, src deltalog.Source) *deltalog.Log {
	t.Helper()
	l, err := deltalog.Open(context.Background(), st, cache, src)
	if err != nil {
		t.Fatalf("open %s: %v", src.Location, err)
	}
	return l
}

func snapshot(t testing.TB, l *deltalog.Log, v int64) *deltalog.Snapshot {
	t.Helper()
	s, err := l.Snapshot(context.Background(), v)
	if err != nil {
		t.Fatalf("snapshot %d of %s: %v", v, l.Location(), err)
	}
	return s
}

// rowCount is the README's rule: stats.numRecords (the Parquet footer
// without stats) minus deletion-vector cardinality, over the live files.
func rowCount(t testing.TB, st deltalog.Store, l *deltalog.Log, s *deltalog.Snapshot) int64 {
	t.Helper()
	var n int64
	for i := range s.Files {
		f := &s.Files[i]
		rows, ok := f.NumRecords()
		if !ok {
			rows = footerRows(t, st, l.FileLocation(f.Path))
		}
		if f.DeletionVector != nil {
			rows -= f.DeletionVector.Cardinality
		}
		n += rows
	}
	return n
}

func footerRows(t testing.TB, st deltalog.Store, loc string) int64 {
	t.Helper()
	data, err := st.Read(context.Background(), loc)
	if err != nil {
		t.Fatalf("read data file: %v", err)
	}
	rows, err := parquettest.Rows(data)
	if err != nil {
		t.Fatalf("rows of %s: %v", loc, err)
	}
	return rows
}

// recorder is a Store that counts reads and lists.
type recorder struct {
	deltalog.Store
	mu    sync.Mutex
	reads map[string]int
	lists int
}

func record(st deltalog.Store) *recorder {
	return &recorder{Store: st, reads: map[string]int{}}
}

func (r *recorder) Read(ctx context.Context, loc string) ([]byte, error) {
	r.mu.Lock()
	r.reads[loc]++
	r.mu.Unlock()
	return r.Store.Read(ctx, loc)
}

func (r *recorder) List(ctx context.Context, prefix string) ([]storage.ObjectInfo, error) {
	r.mu.Lock()
	r.lists++
	r.mu.Unlock()
	return r.Store.List(ctx, prefix)
}

// readNames returns the base names of the files read so far, and resets.
func (r *recorder) readNames() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for loc, n := range r.reads {
		out[loc[strings.LastIndex(loc, "/")+1:]] += n
	}
	r.reads = map[string]int{}
	return out
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantErr(t testing.TB, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

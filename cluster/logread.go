package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// LogEntry is one raft log entry as a stopped node's data directory holds it.
type LogEntry struct {
	Index, Term uint64
	Type        raft.LogType
	Data        []byte
}

// LogReader reads a stopped node's raft log. It fails at once while the
// node runs (the log file is locked).
type LogReader struct{ store *raftboltdb.BoltStore }

// OpenLog opens the raft log below dataDir read-only. Logs kept in
// raft-wal (LogStoreWAL) are not read.
func OpenLog(dataDir string) (*LogReader, error) {
	if _, err := os.Stat(walDir(filepath.Join(dataDir, "raft"))); err == nil {
		return nil, fmt.Errorf("%s keeps its raft log in raft-wal (%s), which this command does not read",
			dataDir, walDir(filepath.Join(dataDir, "raft")))
	}
	path := filepath.Join(dataDir, "raft", "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{Path: path,
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: time.Second}})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, fmt.Errorf("open %s: the log is locked: stop the node first", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &LogReader{store: store}, nil
}

// Bounds returns the first and last index the log holds.
func (r *LogReader) Bounds() (first, last uint64, err error) {
	if first, err = r.store.FirstIndex(); err != nil {
		return 0, 0, err
	}
	last, err = r.store.LastIndex()
	return first, last, err
}

// Entry returns the entry at index.
func (r *LogReader) Entry(index uint64) (LogEntry, error) {
	var l raft.Log
	if err := r.store.GetLog(index, &l); err != nil {
		return LogEntry{}, fmt.Errorf("log entry %d: %w", index, err)
	}
	return LogEntry{Index: l.Index, Term: l.Term, Type: l.Type, Data: l.Data}, nil
}

// Close releases the log file.
func (r *LogReader) Close() error { return r.store.Close() }

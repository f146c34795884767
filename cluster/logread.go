package cluster

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/raftcat/raftcat/internal/raftlog"
)

// LogEntry is one raft log entry as a stopped node's data directory holds it.
type LogEntry struct {
	Index, Term uint64
	Type        raft.LogType
	Data        []byte
}

// LogReader reads a stopped node's raft log, kept in segment files, in
// raft-boltdb or in raft-wal. It fails at once while the node runs (raft.db is locked).
type LogReader struct {
	logs    raft.LogStore
	closers []io.Closer // the log store first (if not raft.db), then raft.db
}

// OpenLog opens the raft log below dataDir.
func OpenLog(dataDir string) (*LogReader, error) {
	raftDir := filepath.Join(dataDir, "raft")
	path := filepath.Join(raftDir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{Path: path,
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: time.Second}})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, fmt.Errorf("open %s: the log is locked: stop the node first", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r := &LogReader{logs: checkedLog{LogStore: store}, closers: []io.Closer{store}}
	if err := r.openLogStore(raftDir); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// openLogStore reads the log from raft-wal or segment files when the
// data directory keeps it there.
func (r *LogReader) openLogStore(raftDir string) error {
	existing, err := existingLogStore(raftDir)
	var logs interface {
		raft.LogStore
		io.Closer
	}
	switch {
	case err != nil:
		return err
	case existing == LogStoreWAL:
		var w *walStore
		if w, err = openWAL(raftDir, nil); err == nil {
			logs = checkedWAL{checkedLog{LogStore: w}, w}
		}
	case existing == LogStoreSegments:
		logs, err = raftlog.Open(segmentsDir(raftDir), raftlog.Options{ReadOnly: true})
	default:
		return nil
	}
	if err != nil {
		return err
	}
	r.logs, r.closers = logs, append([]io.Closer{logs}, r.closers...)
	return nil
}

// checkedWAL reads a raft-wal log through checksums and closes it.
type checkedWAL struct {
	checkedLog
	io.Closer
}

// Bounds returns the first and last index the log holds.
func (r *LogReader) Bounds() (first, last uint64, err error) {
	if first, err = r.logs.FirstIndex(); err != nil {
		return 0, 0, err
	}
	last, err = r.logs.LastIndex()
	return first, last, err
}

// Entry returns the entry at index.
func (r *LogReader) Entry(index uint64) (LogEntry, error) {
	var l raft.Log
	if err := r.logs.GetLog(index, &l); err != nil {
		return LogEntry{}, fmt.Errorf("log entry %d: %w", index, err)
	}
	return LogEntry{Index: l.Index, Term: l.Term, Type: l.Type, Data: l.Data}, nil
}

// Close releases the log's files.
func (r *LogReader) Close() error {
	var errs []error
	for _, c := range r.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"

	"github.com/raftcat/raftcat/internal/dirsync"
	"github.com/raftcat/raftcat/internal/raftlog"
)

// The stores a node can keep its raft log in. raft-boltdb's file
// (raft/raft.db) is the stable store (term, vote) in every case.
const (
	LogStoreSegments = "segments" // the log in segment files under raft/segments (internal/raftlog)
	LogStoreBoltDB   = "boltdb"   // the log in raft/raft.db with the stable store
	LogStoreWAL      = "wal"      // the log in raft-wal segment files under raft/wal
)

// LogStoreAuto keeps the store a data directory's log is in and puts a
// new data directory's log in segment files. raft-wal is never chosen
// for a new one: v0.4.0 can fail to reopen a log after the process was
// killed ("sealed segment has no index block").
const LogStoreAuto = "auto"

// LogStores lists the values Config.LogStore accepts.
var LogStores = []string{LogStoreAuto, LogStoreSegments, LogStoreBoltDB, LogStoreWAL}

// resolveLogStore decides where the log is kept: the configured store,
// or for "auto" (and "") the one the data directory has (existing) or,
// for a new one, segment files.
func resolveLogStore(configured, existing string) string {
	switch {
	case configured != "" && configured != LogStoreAuto:
		return configured
	case existing != "":
		return existing
	}
	return LogStoreSegments
}

// walDir is where a node keeps a raft-wal log.
func walDir(raftDir string) string { return filepath.Join(raftDir, "wal") }

// segmentsDir is where a node keeps a segment file log.
func segmentsDir(raftDir string) string { return filepath.Join(raftDir, "segments") }

// logStorePaths is where each store keeps the log, in the order
// existingLogStore looks: raft.db is there with the others too, as the
// stable store.
var logStorePaths = []struct {
	store string
	path  func(raftDir string) string
}{
	{LogStoreWAL, walDir},
	{LogStoreSegments, segmentsDir},
	{LogStoreBoltDB, func(raftDir string) string { return filepath.Join(raftDir, "raft.db") }},
}

// existingLogStore returns the store whose files raftDir holds ("" for
// none: a new data directory).
func existingLogStore(raftDir string) (string, error) {
	for _, c := range logStorePaths {
		_, err := os.Stat(c.path(raftDir))
		if err == nil {
			return c.store, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", nil
}

// openLogStore opens the log store resolved for the data directory. A
// data directory whose log is in another store is refused: starting it
// with an empty log would lose its entries. raft.db without log entries
// is only a stable store.
func (n *Node) openLogStore(raftDir, store, existing string) (raft.LogStore, error) {
	if existing == LogStoreBoltDB {
		last, err := n.store.LastIndex()
		if err != nil {
			return nil, fmt.Errorf("read raft.db: %w", err)
		}
		if last == 0 {
			existing = ""
		}
	}
	if existing != "" && existing != store {
		return nil, fmt.Errorf("%s holds this node's raft log: start it with --raft-log-store %s", logStorePath(raftDir, existing), existing)
	}
	switch store {
	case LogStoreWAL:
		w, err := openWAL(raftDir, n.hlog)
		if err != nil {
			return nil, err
		}
		n.wal = w
		return openChecked(w, walDir(raftDir))
	case LogStoreSegments:
		s, err := raftlog.Open(segmentsDir(raftDir), raftlog.Options{DeferSync: n.deferLogSync, OnFailure: n.logStoreFailed,
			ObserveSync: func(d time.Duration) { n.metrics.logSync.Observe(d.Seconds()); n.latency.observe(d) }})
		if err != nil {
			return nil, fmt.Errorf("open raft log %s: %w", segmentsDir(raftDir), err)
		}
		n.segments = s
		if r := s.Recovered(); r.Reason != "" {
			n.log.Warn("the raft log stopped after a failed write or sync before this start: entries never known to be on disk "+
				"were dropped; the leader sends them again", "failure", r.Reason, "dropped_after_index", r.DroppedAfter, "dropped", r.Dropped)
		}
		return s, nil
	}
	return openChecked(n.store, filepath.Join(raftDir, "raft.db"))
}

// openChecked wraps a raft-boltdb or raft-wal log in checksums and reads
// every entry back once.
func openChecked(logs raft.LogStore, path string) (raft.LogStore, error) {
	c := checkedLog{LogStore: logs}
	if err := verifyLog(c); err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", path, err)
	}
	return c, nil
}

func logStorePath(raftDir, store string) string {
	for _, c := range logStorePaths {
		if c.store == store {
			return c.path(raftDir)
		}
	}
	return raftDir
}

// openWAL opens (or creates) the raft-wal log in raftDir. raft-wal does
// not close a meta store it opened itself: it is given one, which the
// returned store's Close closes.
func openWAL(raftDir string, log hclog.Logger) (*walStore, error) {
	if err := dirsync.MkdirAll(walDir(raftDir), 0o750); err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(walDir(raftDir), wal.WithMetaStore(meta), wal.WithLogger(log))
	if err != nil {
		_ = meta.Close()
		return nil, fmt.Errorf("open raft-wal log %s: %w", walDir(raftDir), err)
	}
	return &walStore{WAL: w, meta: meta}, nil
}

// walStore is a raft-wal log with the meta store it must close.
type walStore struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
}

func (s *walStore) Close() error { return errors.Join(s.WAL.Close(), s.meta.Close()) }

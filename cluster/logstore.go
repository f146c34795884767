package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// The stores a node can keep its raft log in. raft-boltdb's file
// (raft/raft.db) is the stable store (term, vote) either way.
const (
	LogStoreBoltDB = "boltdb" // the log in raft/raft.db with the stable store
	LogStoreWAL    = "wal"    // the log in raft-wal segment files under raft/wal
)

// LogStoreAuto keeps the store a data directory's log is in: raft-wal
// where raft/wal exists, raft-boltdb otherwise (a new data directory
// included). raft-wal stays opt-in: v0.4.0 can fail to reopen a log after
// the process was killed ("sealed segment has no index block").
const LogStoreAuto = "auto"

// LogStores lists the values Config.LogStore accepts.
var LogStores = []string{LogStoreAuto, LogStoreBoltDB, LogStoreWAL}

// resolveLogStore decides where the log is kept: the configured store,
// or for "auto" (and "") the one the data directory has (LogStoreAuto).
func resolveLogStore(configured string, hasWAL bool) string {
	switch {
	case configured != "" && configured != LogStoreAuto:
		return configured
	case hasWAL:
		return LogStoreWAL
	}
	return LogStoreBoltDB
}

// walDir is where a node keeps a raft-wal log.
func walDir(raftDir string) string { return filepath.Join(raftDir, "wal") }

// walExists reports whether raftDir holds a raft-wal log.
func walExists(raftDir string) (bool, error) {
	_, err := os.Stat(walDir(raftDir))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// openLogStore opens the log store resolved for the data directory. A
// data directory whose log is in the other store is refused: starting it
// with an empty log would lose its entries.
func (n *Node) openLogStore(raftDir, store string, hasWAL bool) (raft.LogStore, error) {
	if store != LogStoreWAL {
		if hasWAL {
			return nil, fmt.Errorf("%s holds this node's raft log: start it with --raft-log-store %s", walDir(raftDir), LogStoreWAL)
		}
		return n.store, nil
	}
	last, err := n.store.LastIndex()
	if err != nil {
		return nil, fmt.Errorf("read raft.db: %w", err)
	}
	if last > 0 {
		return nil, fmt.Errorf("%s holds this node's raft log (last index %d): start it with --raft-log-store %s",
			filepath.Join(raftDir, "raft.db"), last, LogStoreBoltDB)
	}
	w, err := openWAL(raftDir, n.hlog)
	if err != nil {
		return nil, err
	}
	n.wal = w
	return w, nil
}

// openWAL opens (or creates) the raft-wal log in raftDir. raft-wal does
// not close a meta store it opened itself: it is given one, which the
// returned store's Close closes.
func openWAL(raftDir string, log hclog.Logger) (*walStore, error) {
	if err := os.MkdirAll(walDir(raftDir), 0o750); err != nil {
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

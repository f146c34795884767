package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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

// LogStores lists the values Config.LogStore accepts.
var LogStores = []string{LogStoreBoltDB, LogStoreWAL}

// walDir is where a node keeps a raft-wal log.
func walDir(raftDir string) string { return filepath.Join(raftDir, "wal") }

// openLogStore opens the log store the configuration names. A data
// directory whose log is in the other store is refused: starting it with
// an empty log would lose its entries.
func (n *Node) openLogStore(raftDir string) (raft.LogStore, error) {
	_, err := os.Stat(walDir(raftDir))
	hasWAL := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if n.cfg.LogStore != LogStoreWAL {
		if hasWAL {
			return nil, fmt.Errorf("%s holds this node's raft log: start it with --raft-log-store %s", walDir(raftDir), LogStoreWAL)
		}
		return n.store, nil
	}
	if last, err := n.store.LastIndex(); err != nil || last > 0 {
		return nil, fmt.Errorf("%s holds this node's raft log (last index %d): start it with --raft-log-store %s (%v)",
			filepath.Join(raftDir, "raft.db"), last, LogStoreBoltDB, err)
	}
	if err := os.MkdirAll(walDir(raftDir), 0o750); err != nil {
		return nil, err
	}
	// The WAL does not close a meta store it opened itself: give it one.
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(walDir(raftDir), wal.WithLogger(n.hlog), wal.WithMetaStore(meta))
	if err != nil {
		_ = meta.Close()
		return nil, fmt.Errorf("open raft-wal log %s: %w", walDir(raftDir), err)
	}
	n.wal = &walStore{WAL: w, meta: meta}
	return w, nil
}

// walStore is a raft-wal log with the meta store it must close.
type walStore struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
}

func (s *walStore) Close() error { return errors.Join(s.WAL.Close(), s.meta.Close()) }

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

// LogStoreAuto keeps the store a data directory's log is in, and puts a
// new data directory's log in raft-wal.
const LogStoreAuto = "auto"

// LogStores lists the values Config.LogStore accepts.
var LogStores = []string{LogStoreAuto, LogStoreBoltDB, LogStoreWAL}

// resolveLogStore decides where the log is kept, as far as it can before
// raft.db is opened. "auto" (or "") keeps the store of a data directory
// that has one: raft/wal means raft-wal. A new data directory (no
// raft.db) gets raft-wal: one fsync per write instead of raft-boltdb's two.
// A raft.db without raft/wal leaves the choice to its content
// (byContent), and LogStoreAuto is returned.
func resolveLogStore(raftDir, configured string, hasWAL bool) (string, error) {
	if configured != "" && configured != LogStoreAuto {
		return configured, nil
	}
	if hasWAL {
		return LogStoreWAL, nil
	}
	_, err := os.Stat(filepath.Join(raftDir, "raft.db"))
	switch {
	case err == nil:
		return LogStoreAuto, nil
	case errors.Is(err, fs.ErrNotExist):
		return LogStoreWAL, nil
	}
	return "", err
}

// byContent decides for a raft.db without raft/wal: a log in it stays
// there, as every node started before raft-wal was the default keeps it;
// an empty one (a first start that failed before its log was made) is
// only the stable store, and the log goes to raft-wal.
func byContent(store raft.LogStore) (string, error) {
	last, err := store.LastIndex()
	if err != nil {
		return "", fmt.Errorf("read raft.db: %w", err)
	}
	if last > 0 {
		return LogStoreBoltDB, nil
	}
	return LogStoreWAL, nil
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

package cluster

import (
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/internal/dirsync"
)

// raft's file snapshot store writes a snapshot's files into a temporary
// directory, syncs them and renames the directory into place, syncing the
// parent, but never syncs the snapshot's own directory: after a power cut
// the snapshot can be there without its files. raft then passes it over,
// but it compacted the log behind it, so the node cannot start ("log not
// found"). syncedSnapshots syncs the snapshot's directory before Close
// returns, that is, before raft compacts anything; a power cut before
// that leaves the previous snapshot and the whole log.
type syncedSnapshots struct {
	*raft.FileSnapshotStore
	dir string // the store's snapshots directory
}

func (s syncedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return syncedSink{SnapshotSink: sink, dir: s.dir}, nil
}

type syncedSink struct {
	raft.SnapshotSink
	dir string
}

func (s syncedSink) Close() error {
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	return dirsync.Sync(filepath.Join(s.dir, s.ID()))
}

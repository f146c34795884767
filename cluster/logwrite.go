package cluster

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// errLogWrite marks a failed write of the raft log by the leader. Raft
// hands the store's error to every proposal of the batch and steps down;
// the entries may be on disk in part and may yet commit under the next
// leader, so the proposals' outcome is unknown, not failed.
var errLogWrite = errors.New("writing the raft log failed")

// logWrites is the log store raft writes through: it marks a failed
// StoreLogs with errLogWrite, which mapRaftError turns into
// ErrUnknownOutcome (raft's log cache wraps errors as text, so the mark is
// put on outside it).
type logWrites struct{ raft.LogStore }

func (s logWrites) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s logWrites) StoreLogs(logs []*raft.Log) error {
	if err := s.LogStore.StoreLogs(logs); err != nil {
		return fmt.Errorf("%w: %w", errLogWrite, err)
	}
	return nil
}

// IsMonotonic is the store's (raft.MonotonicLogStore).
func (s logWrites) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// wrapLogStore, when set by a test, wraps the log store raft writes
// through (a store that fails on demand).
var wrapLogStore func(raft.LogStore) raft.LogStore

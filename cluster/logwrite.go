package cluster

import (
	"errors"
	"fmt"
	"time"

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
// put on outside it), and tells failed of it (a full disk, or a failed
// one: see disk.go).
type logWrites struct {
	raft.LogStore
	failed  func(what string, err error)
	latency *diskLatency // told how long each write took
}

func (s logWrites) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s logWrites) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := s.LogStore.StoreLogs(logs)
	if s.latency != nil {
		s.latency.observe(time.Since(start))
	}
	if err != nil {
		s.failed("raft log", err)
		return fmt.Errorf("%w: %w", errLogWrite, err)
	}
	return nil
}

// GetLog reads an entry; a read that fails with anything but "not found"
// (EIO, a damaged record) is told to failed: the node must not go on
// from a log it cannot read back (raft would panic on it in apply).
func (s logWrites) GetLog(index uint64, l *raft.Log) error {
	err := s.LogStore.GetLog(index, l)
	if err != nil && !errors.Is(err, raft.ErrLogNotFound) {
		s.failed("raft log read", err)
	}
	return err
}

// IsMonotonic is the store's (raft.MonotonicLogStore).
func (s logWrites) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// wrapLogStore, when set by a test, wraps the log store raft writes
// through (a store that fails on demand).
var wrapLogStore func(raft.LogStore) raft.LogStore

package cluster

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/fsm"
)

// failingLog fails every write with err while failing is set.
type failingLog struct {
	raft.LogStore
	failing *atomic.Bool
	err     error
}

func (l failingLog) StoreLogs(logs []*raft.Log) error {
	if l.failing.Load() {
		return l.err
	}
	return l.LogStore.StoreLogs(logs)
}

func (l failingLog) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

// A leader whose log write fails answers its proposals with an unknown
// outcome (503, retry the same request), not an error of the request: the
// entry may be on disk in part and commit later. The node then halts: a
// failed write or sync is never retried.
func TestAFailedLogWriteIsAnUnknownOutcome(t *testing.T) {
	failing := new(atomic.Bool)
	eio := &os.PathError{Op: "write", Path: "segment", Err: syscall.EIO}
	wrapLogStore = func(s raft.LogStore) raft.LogStore { return failingLog{LogStore: s, failing: failing, err: eio} }
	t.Cleanup(func() { wrapLogStore = nil })
	n, err := openSingle(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	waitLeading(t, n)
	mustPropose(t, n, &fsm.CreateCatalog{ID: "c-before", Name: "before"})
	failing.Store(true)
	_, _, err = n.Propose(context.Background(), &fsm.CreateCatalog{ID: "c-during", Name: "during"})
	if !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("a proposal whose log write failed: %v, want an unknown outcome", err)
	}
	select {
	case <-n.DiskFailed():
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not halt after its log write failed")
	}
	if !errors.Is(n.DiskFailure(), syscall.EIO) {
		t.Fatalf("DiskFailure = %v, want the write's EIO", n.DiskFailure())
	}
	failing.Store(false) // the disk "works" again: the node must not carry on regardless
	if _, _, err := n.Propose(context.Background(), &fsm.CreateCatalog{ID: "c-after", Name: "after"}); err == nil {
		t.Fatal("a node halted on a failed log write took a proposal")
	}
}

// A log write that meets a full disk is an unknown outcome too, but the
// node stays up: it refuses writes with ErrInsufficientStorage until a
// check of the free space finds room, and then takes them again.
func TestAFullDiskRefusesWritesUntilSpaceIsFreed(t *testing.T) {
	failing := new(atomic.Bool)
	enospc := &os.PathError{Op: "write", Path: "segment", Err: syscall.ENOSPC}
	wrapLogStore = func(s raft.LogStore) raft.LogStore { return failingLog{LogStore: s, failing: failing, err: enospc} }
	t.Cleanup(func() { wrapLogStore = nil })
	var free atomic.Int64
	free.Store(1 << 40)
	freeBytes = func(string) (int64, error) { return free.Load(), nil }
	t.Cleanup(func() { freeBytes = statfsFree })
	n, err := openSingle(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	waitLeading(t, n)
	free.Store(1 << 20) // below the default minimum
	failing.Store(true)
	_, _, err = n.Propose(context.Background(), &fsm.CreateCatalog{ID: "c-full", Name: "full"})
	if !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("a proposal whose log write met a full disk: %v, want an unknown outcome", err)
	}
	_, _, err = n.Propose(context.Background(), &fsm.CreateCatalog{ID: "c-refused", Name: "refused"})
	if !errors.Is(err, ErrInsufficientStorage) {
		t.Fatalf("a proposal on a full disk: %v, want ErrInsufficientStorage", err)
	}
	failing.Store(false)
	free.Store(1 << 40)
	deadline := time.Now().Add(20 * time.Second)
	for {
		waitLeading(t, n)
		_, _, err := n.Propose(context.Background(), &fsm.CreateCatalog{ID: "c-after", Name: "after"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes did not resume once space was freed: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	select {
	case <-n.DiskFailed():
		t.Fatalf("a full disk halted the node: %v", n.DiskFailure())
	default:
	}
}

// unreadableLog fails every read with err.
type unreadableLog struct {
	raft.LogStore
	err error
}

func (l unreadableLog) GetLog(uint64, *raft.Log) error { return l.err }

// A log read that fails (EIO, a damaged record) fails the disk; one that
// finds no such entry (compacted away) is an answer, not a failure.
func TestAFailedLogReadFailsTheDisk(t *testing.T) {
	var told []error
	failed := func(_ string, err error) { told = append(told, err) }
	eio := &os.PathError{Op: "read", Path: "segment", Err: syscall.EIO}
	if err := (logWrites{LogStore: unreadableLog{err: eio}, failed: failed}).GetLog(7, new(raft.Log)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("GetLog = %v, want the EIO", err)
	}
	if err := (logWrites{LogStore: unreadableLog{err: raft.ErrLogNotFound}, failed: failed}).GetLog(7, new(raft.Log)); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog = %v, want not found", err)
	}
	if len(told) != 1 || !errors.Is(told[0], syscall.EIO) {
		t.Fatalf("failures told: %v, want the EIO alone", told)
	}
}

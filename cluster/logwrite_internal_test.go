package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/fsm"
)

// failingLog fails every write while failing is set.
type failingLog struct {
	raft.LogStore
	failing *atomic.Bool
}

func (l failingLog) StoreLogs(logs []*raft.Log) error {
	if l.failing.Load() {
		return errors.New("input/output error")
	}
	return l.LogStore.StoreLogs(logs)
}

func (l failingLog) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

// A leader whose log write fails answers its proposals with an unknown
// outcome (503, retry the same request), not an error of the request: the
// entry may be on disk in part and commit later.
func TestAFailedLogWriteIsAnUnknownOutcome(t *testing.T) {
	failing := new(atomic.Bool)
	wrapLogStore = func(s raft.LogStore) raft.LogStore { return failingLog{LogStore: s, failing: failing} }
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
}

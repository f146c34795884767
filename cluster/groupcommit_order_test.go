package cluster

import (
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// TestRacingProposalsInOneBatchWinInTurn gives group commit the same two
// racing proposals (two schemas of one name) in the same arrival order,
// many times: each must win some of the races, so a writer that always
// arrives second (through a follower) is not starved.
func TestRacingProposalsInOneBatchWinInTurn(t *testing.T) {
	m := fsm.NewMachine()
	if res := m.ApplyCommand(1, &fsm.Init{MetastoreID: "ms", StorageRoot: "s3://bucket/root",
		CatalogID: "cat", SchemaID: "sch"}); res.Err != nil {
		t.Fatalf("init: %v", res.Err.Message)
	}
	g := &groupCommit{
		view:    func() (*fsm.State, uint64) { return m.State(), 1 },
		leading: func() bool { return true },
	}
	wins := map[string]int{}
	const races = 200
	for range races {
		first := &proposal{cmd: &fsm.CreateSchema{ID: "first", CatalogName: "unity", Name: "raced"}, check: true}
		second := &proposal{cmd: &fsm.CreateSchema{ID: "second", CatalogName: "unity", Name: "raced"}, check: true}
		batch, answered, later := g.sort([]*proposal{first, second})
		if len(batch) != 1 || len(later) != 1 || len(answered) != 0 {
			t.Fatalf("sorted into %d to log, %d answered, %d later; want 1, 0, 1", len(batch), len(answered), len(later))
		}
		wins[batch[0].cmd.(*fsm.CreateSchema).ID]++
	}
	// Both winning at least once fails by chance with probability 2^-199.
	if wins["first"] == 0 || wins["second"] == 0 {
		t.Fatalf("over %d races the first to arrive won %d and the second %d: one writer starves", races, wins["first"], wins["second"])
	}
	t.Logf("first to arrive won %d of %d races", wins["first"], races)
}

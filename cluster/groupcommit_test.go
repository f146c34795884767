package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestConcurrentProposalsShareBatches proposes from many goroutines at
// once: every proposal gets its own result and raft index, replicas
// converge, and the proposals left in fewer batches than there were
// proposals (they shared log writes).
func TestConcurrentProposalsShareBatches(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	before := leader.Status().GroupCommit

	const n = 64
	indexes := make([]uint64, n)
	errs := make([]error, n)
	atOnce(n, func(i int) {
		res, idx, err := leader.Propose(context.Background(), &fsm.CreateSchema{
			ID: fmt.Sprintf("id-%d", i), CatalogName: "unity", Name: fmt.Sprintf("s%d", i)})
		switch {
		case err != nil:
			errs[i] = err
		case res.Err != nil:
			errs[i] = res.Err
		case res.Schema == nil || res.Schema.Name != fmt.Sprintf("s%d", i):
			errs[i] = fmt.Errorf("proposal %d got result %+v", i, res)
		}
		indexes[i] = idx
	})
	seen := map[uint64]int{}
	var last uint64
	for i, err := range errs {
		if err != nil {
			t.Fatalf("proposal %d: %v", i, err)
		}
		if j, dup := seen[indexes[i]]; dup {
			t.Fatalf("proposals %d and %d both report index %d", i, j, indexes[i])
		}
		seen[indexes[i]] = i
		last = max(last, indexes[i])
	}
	after := leader.Status().GroupCommit
	proposals, batches := after.Proposals-before.Proposals, after.Batches-before.Batches
	if proposals != n {
		t.Fatalf("group commit counted %d proposals, want %d", proposals, n)
	}
	if batches >= n/2 {
		t.Fatalf("%d concurrent proposals left in %d batches: not grouped", n, batches)
	}
	t.Logf("%d proposals in %d batches (largest %d)", proposals, batches, after.LargestBatch)
	waitApplied(t, nodes, last)
	requireConverged(t, nodes)
}

// TestRacingCommitsAreDecidedWithoutLosingOrLogging races many writers
// for version 1 of one table: exactly one wins, every other gets the
// version conflict, and the losers cost no log entry (they are answered
// from the applied state). Resending the winner's commit is a replay,
// also answered without a log entry.
func TestRacingCommitsAreDecidedWithoutLosingOrLogging(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	uuid := testcluster.CreateManaged(t, leader.URL, leader.URL, "unity", "default", "raced")
	before := leader.Status()

	const n = 16
	commit := func(i int) *fsm.UpdateTable {
		return &fsm.UpdateTable{CatalogName: "unity", SchemaName: "default", Name: "raced", AssertUUID: uuid,
			AddCommit: &fsm.AddCommit{Commit: fsm.Commit{Version: 1, Timestamp: 1, FileName: fmt.Sprintf("w%d.json", i),
				FileSize: 10, FileModTime: 1}}}
	}
	results := make([]fsm.Result, n)
	errs := make([]error, n)
	atOnce(n, func(i int) { results[i], _, errs[i] = leader.Propose(context.Background(), commit(i)) })
	winner := -1
	for i := range results {
		switch {
		case errs[i] != nil:
			t.Fatalf("writer %d: %v", i, errs[i])
		case results[i].Err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both committed version 1", winner, i)
			}
			winner = i
		case results[i].Err.Code != fsm.CodeCommitVersionConflict:
			t.Fatalf("writer %d: %v %s, want a version conflict", i, results[i].Err.Code, results[i].Err.Message)
		}
	}
	if winner < 0 {
		t.Fatal("no writer committed version 1")
	}
	after := leader.Status()
	if got := after.GroupCommit.AnsweredWithoutLog - before.GroupCommit.AnsweredWithoutLog; got != n-1 {
		t.Fatalf("%d losers answered without a log entry, want %d", got, n-1)
	}
	if got := after.LastIndex - before.LastIndex; got != 1 {
		t.Fatalf("the race added %d log entries, want 1 (the winner's)", got)
	}

	res, _, err := leader.Propose(context.Background(), commit(winner))
	if err != nil || res.Err != nil || !res.NoOp || res.Table == nil || res.Table.LatestVersion() != 1 {
		t.Fatalf("replay of the winning commit: %+v %v", res, err)
	}
	if leader.Status().LastIndex != after.LastIndex {
		t.Fatal("a replay added a log entry")
	}
	waitApplied(t, nodes, after.LastIndex)
	requireConverged(t, nodes)
}

// atOnce runs f(0..n-1) on n goroutines released together, and waits.
func atOnce(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}

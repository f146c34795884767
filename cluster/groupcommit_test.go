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
	start := make(chan struct{})
	indexes := make([]uint64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
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
		}()
	}
	close(start)
	wg.Wait()
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

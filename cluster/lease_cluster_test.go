package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestLinearizableReadsUnderTheLeaseAndWithout reads on a real
// three-node cluster: the leader answers under its lease once followers
// have acknowledged its heartbeats, and with leases off every read takes
// a quorum round. After a leadership transfer the old leader refuses
// linearizable reads and the new one reads under its own lease.
func TestLinearizableReadsUnderTheLeaseAndWithout(t *testing.T) {
	ctx := context.Background()
	t.Run("lease", func(t *testing.T) {
		nodes := testcluster.Start(t, 3, testcluster.Options{})
		leader := testcluster.Leader(t, nodes)
		readsUnderLease(t, leader)

		if err := leader.TransferLeadership(ctx, ""); err != nil {
			t.Fatal(err)
		}
		next := testcluster.Leader(t, nodes)
		if next == leader {
			t.Fatal("leadership did not move")
		}
		if _, _, err := leader.LinearizableState(ctx); !errors.Is(err, cluster.ErrNotLeader) {
			t.Fatalf("old leader read: %v, want ErrNotLeader", err)
		}
		readsUnderLease(t, next)
	})
	t.Run("no lease", func(t *testing.T) {
		nodes := testcluster.Start(t, 3, testcluster.Options{NoReadLease: true})
		leader := testcluster.Leader(t, nodes)
		before := leader.Status().Reads
		for i := 0; i < 10; i++ {
			if _, _, err := leader.LinearizableState(ctx); err != nil {
				t.Fatal(err)
			}
		}
		after := leader.Status().Reads
		if after.Lease != 0 || after.QuorumRounds < before.QuorumRounds+10 {
			t.Fatalf("without leases 10 sequential reads went %+v -> %+v, want 10 quorum rounds", before, after)
		}
	})
}

// TestVoterWithoutLeasePromiseEndsLeases adds a voter running without
// read leases (it neither waits them out on start nor gossips a promise):
// the leader stops reading under its lease and takes quorum rounds.
func TestVoterWithoutLeasePromiseEndsLeases(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	readsUnderLease(t, leader)

	testcluster.Add(t, nodes, "node4", 3, testcluster.Options{NoReadLease: true})
	testcluster.WaitFor(t, 30*time.Second, "node4 to become a voter", func() bool {
		for _, m := range leader.Status().Members {
			if m.ID == "node4" && m.Voter {
				return true
			}
		}
		return false
	})
	before := leader.Status().Reads
	for i := 0; i < 10; i++ {
		if _, _, err := leader.LinearizableState(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	after := leader.Status().Reads
	if after.Lease != before.Lease || after.QuorumRounds < before.QuorumRounds+10 {
		t.Fatalf("with a voter keeping no lease promise, 10 sequential reads went %+v -> %+v, want 10 quorum rounds", before, after)
	}
}

// readsUnderLease waits until the leader holds its lease, then checks
// that reads are answered under it.
func readsUnderLease(t *testing.T, leader *testcluster.Node) {
	t.Helper()
	read := func() cluster.ReadStats {
		if _, _, err := leader.LinearizableState(context.Background()); err != nil {
			t.Fatal(err)
		}
		return leader.Status().Reads
	}
	testcluster.WaitFor(t, 10*time.Second, "a read under the lease", func() bool {
		before := leader.Status().Reads.Lease
		return read().Lease > before
	})
}

// TestRestartedNodeWaitsOutLeases restarts a follower: it stays out of
// raft for the lease duration (half the heartbeat timeout), so a lease it
// helped grant before the restart has run out before it can vote, and it
// rejoins with every write.
func TestRestartedNodeWaitsOutLeases(t *testing.T) {
	const heartbeat = 500 * time.Millisecond
	nodes := testcluster.Start(t, 3, testcluster.Options{Heartbeat: heartbeat})
	leader := testcluster.Leader(t, nodes)
	follower := testcluster.Followers(nodes, leader)[0]
	follower.Stop()
	start := time.Now()
	follower.Restart(t)
	if took := time.Since(start); took < heartbeat/2 {
		t.Fatalf("restart took %v, less than the lease duration %v", took, heartbeat/2)
	}
	testcluster.WaitReady(t, follower)
}

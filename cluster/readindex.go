package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/internal/rounds"
)

// readIndex batches linearizable reads: one leadership check is in
// flight at a time, and every read that arrives meanwhile shares the next
// one. Each round captures the commit index after all its readers arrived
// and then confirms leadership with a quorum, so the index covers every
// write acknowledged before any of them began (raft's ReadIndex).
type readIndex struct {
	raft   *raft.Raft
	lease  *readLease // a held lease answers at once, without a round
	rounds *rounds.Rounds
	leased atomic.Uint64
}

func newReadIndex(r *raft.Raft, lease *readLease) *readIndex {
	b := &readIndex{raft: r, lease: lease}
	b.rounds = rounds.New(b.confirm)
	return b
}

// ReadStats counts linearizable reads answered under the leader's lease
// and the quorum rounds taken for the others.
type ReadStats = clusterapi.ReadStats

func (b *readIndex) stats() ReadStats {
	return ReadStats{Lease: b.leased.Load(), QuorumRounds: b.rounds.Runs()}
}

// wait returns a commit index that is safe to read at, once leadership
// has been confirmed after the call began.
func (b *readIndex) wait(ctx context.Context) (uint64, error) {
	return b.ticket().Wait(ctx)
}

// ticket returns the round that confirms leadership after now, starting
// the rounds if none is running; the caller waits on it when it needs it.
func (b *readIndex) ticket() *rounds.Round {
	if b.lease.held() {
		// No other leader can exist now, so the commit index read after
		// the lease check covers every write acknowledged before it.
		b.leased.Add(1)
		return rounds.Decided(b.raft.CommitIndex())
	}
	return b.rounds.Ticket()
}

// confirm is one quorum round: the commit index, then leadership.
func (b *readIndex) confirm() (uint64, error) {
	index := b.raft.CommitIndex()
	if err := b.raft.VerifyLeader().Error(); err != nil {
		return 0, mapReadError(err)
	}
	return index, nil
}

// mapReadError turns the error of a leadership check into this package's
// sentinels. A read proposes nothing, so leadership lost while it was
// being confirmed is a plain refusal (the read can go to the new leader),
// not an unknown outcome.
func mapReadError(err error) error {
	if errors.Is(err, raft.ErrLeadershipLost) {
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	return mapRaftError(err)
}

package cluster

import (
	"context"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/clusterapi"
)

// readIndex batches linearizable reads: one leadership check is in
// flight at a time, and every read that arrives meanwhile shares the next
// one. Each round captures the commit index after all its readers arrived
// and then confirms leadership with a quorum, so the index covers every
// write acknowledged before any of them began (raft's ReadIndex).
type readIndex struct {
	raft  *raft.Raft
	lease *readLease // a held lease answers at once, without a round

	mu      sync.Mutex
	next    *readRound
	running bool
	counts  ReadStats
}

// ReadStats counts linearizable reads answered under the leader's lease
// and the quorum rounds taken for the others.
type ReadStats = clusterapi.ReadStats

func (b *readIndex) stats() ReadStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counts
}

type readRound struct {
	done  chan struct{}
	index uint64
	err   error
}

// wait returns a commit index that is safe to read at, once leadership
// has been confirmed after the call began.
func (b *readIndex) wait(ctx context.Context) (uint64, error) {
	return b.ticket().wait(ctx)
}

// ticket returns the round that confirms leadership after now, starting
// the rounds if none is running; the caller waits on it when it needs it.
func (b *readIndex) ticket() *readRound {
	if b.lease.held() {
		// No other leader can exist now, so the commit index read after
		// the lease check covers every write acknowledged before it.
		r := &readRound{done: make(chan struct{}), index: b.raft.CommitIndex()}
		close(r.done)
		b.mu.Lock()
		b.counts.Lease++
		b.mu.Unlock()
		return r
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == nil {
		b.next = &readRound{done: make(chan struct{})}
	}
	if !b.running {
		b.running = true
		go b.loop()
	}
	return b.next
}

// wait returns the round's commit index once its leadership check is done.
func (r *readRound) wait(ctx context.Context) (uint64, error) {
	select {
	case <-r.done:
		return r.index, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (b *readIndex) loop() {
	for {
		b.mu.Lock()
		r := b.next
		b.next = nil
		if r == nil {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.counts.QuorumRounds++
		b.mu.Unlock()
		r.index = b.raft.CommitIndex()
		if err := b.raft.VerifyLeader().Error(); err != nil {
			r.err = mapRaftError(err)
		}
		close(r.done)
	}
}

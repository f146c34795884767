package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// groupCommit gathers concurrent proposals into batches so that many
// commands share one log write and one fsync on every node, and one
// AppendEntries per follower. At most maxInFlight batches are in raft at a
// time; proposals arriving meanwhile wait and leave together as the next
// batch. A proposal arriving while nothing is in flight leaves at once, so
// a lone writer pays no extra latency. Each command stays its own log
// entry, so the state machine and its indexes are unchanged.
type groupCommit struct {
	raft        *raft.Raft
	timeout     time.Duration
	maxInFlight int

	mu       sync.Mutex
	pending  []*proposal
	inFlight int
	counts   GroupCommitStats
}

// GroupCommitStats counts proposals and the batches they were sent in.
type GroupCommitStats struct {
	Proposals    uint64 `json:"proposals"`
	Batches      uint64 `json:"batches"`
	LargestBatch int    `json:"largest_batch"`
}

func (g *groupCommit) stats() GroupCommitStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.counts
}

type proposal struct {
	data   []byte
	future raft.ApplyFuture
	done   chan struct{}
}

func newGroupCommit(r *raft.Raft, timeout time.Duration, maxInFlight int) *groupCommit {
	return &groupCommit{raft: r, timeout: timeout, maxInFlight: max(1, maxInFlight)}
}

// apply proposes data and returns its future once it has completed.
func (g *groupCommit) apply(data []byte) raft.ApplyFuture {
	p := &proposal{data: data, done: make(chan struct{})}
	g.mu.Lock()
	g.pending = append(g.pending, p)
	start := g.inFlight < g.maxInFlight
	if start {
		g.inFlight++
	}
	g.mu.Unlock()
	if start {
		go g.drain()
	}
	<-p.done
	return p.future
}

// drain sends batches until none is pending. raft's leader loop takes the
// whole batch from its (buffered) apply channel into one log write.
func (g *groupCommit) drain() {
	for {
		g.mu.Lock()
		batch := g.pending
		g.pending = nil
		if len(batch) == 0 {
			g.inFlight--
			g.mu.Unlock()
			return
		}
		g.counts.Proposals += uint64(len(batch))
		g.counts.Batches++
		g.counts.LargestBatch = max(g.counts.LargestBatch, len(batch))
		g.mu.Unlock()
		for _, p := range batch {
			p.future = g.raft.Apply(p.data, g.timeout)
		}
		for _, p := range batch {
			_ = p.future.Error() // entries commit in order: wait for each
			close(p.done)
		}
	}
}

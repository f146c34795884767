package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/fsm"
)

// groupCommit gathers concurrent proposals into batches so that many
// commands share one log write and one fsync on every node, and one
// AppendEntries per follower. At most maxInFlight batches are in raft at a
// time; proposals arriving meanwhile wait and leave together as the next
// batch. A proposal arriving while nothing is in flight leaves at once, so
// a lone writer pays no extra latency. Each command stays its own log
// entry, so the state machine and its indexes are unchanged.
//
// Before a batch leaves, each command is tried against the leader's
// applied state (and the commands ahead of it in the batch). One that
// would change nothing there, a commit for a version another writer
// already took or a replay, is answered from that state after a
// leadership check, without a log entry: under contention these are half
// of all commits. One that only conflicts with a command ahead of it in
// the same batch waits for the next batch, and is then answered together
// with the command it lost to, so two writers racing for one table take
// turns instead of the one a batch behind losing every round.
type groupCommit struct {
	raft        *raft.Raft
	view        func() (*fsm.State, uint64) // the applied state
	leading     func() bool                 // established leader of the current term
	readIndex   func(context.Context) (uint64, error)
	timeout     time.Duration
	maxInFlight int

	mu       sync.Mutex
	pending  []*proposal
	inFlight int
	counts   GroupCommitStats
}

// GroupCommitStats counts proposals, the batches they left in, and those
// answered without a log entry.
type GroupCommitStats struct {
	Proposals          uint64 `json:"proposals"`
	Batches            uint64 `json:"batches"`
	LargestBatch       int    `json:"largest_batch"`
	AnsweredWithoutLog uint64 `json:"answered_without_log"`
}

type proposal struct {
	cmd    fsm.Command
	data   []byte
	check  bool // may be answered without a log entry
	future raft.ApplyFuture
	res    fsm.Result
	index  uint64
	err    error
	done   chan struct{}
}

func (g *groupCommit) stats() GroupCommitStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.counts
}

// apply proposes cmd (encoded as data) and returns its result once decided.
func (g *groupCommit) apply(cmd fsm.Command, data []byte, check bool) (fsm.Result, uint64, error) {
	p := &proposal{cmd: cmd, data: data, check: check, done: make(chan struct{})}
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
	return p.res, p.index, p.err
}

// drain sends batches until none is pending. raft's leader loop takes the
// whole batch from its (buffered) apply channel into one log write. A
// finished batch is answered only after the proposals it made lose (now
// decided from the applied state) have been answered, so a writer that
// lost a race hears of it before the winner does.
func (g *groupCommit) drain() {
	var decided []*proposal // the last batch, applied, not yet answered
	for {
		g.mu.Lock()
		pending := g.pending
		g.pending = nil
		if len(pending) == 0 {
			g.inFlight--
			g.mu.Unlock()
			release(decided)
			return
		}
		g.mu.Unlock()
		batch, answered, later := g.sort(pending)
		g.mu.Lock()
		g.pending = append(later, g.pending...) // deferred ones keep their place
		g.counts.Proposals += uint64(len(batch) + len(answered))
		g.counts.AnsweredWithoutLog += uint64(len(answered))
		if len(batch) > 0 {
			g.counts.Batches++
			g.counts.LargestBatch = max(g.counts.LargestBatch, len(batch))
		}
		g.mu.Unlock()
		for _, p := range batch {
			p.future = g.raft.Apply(p.data, g.timeout)
		}
		// While the batch replicates, confirm the answers taken from the
		// applied state, then give them before the last batch's.
		answered = g.confirm(answered)
		release(answered)
		release(decided)
		for _, p := range batch {
			p.err = mapRaftError(p.future.Error()) // entries commit in order: wait for each
			if p.err == nil {
				var ok bool
				p.index = p.future.Index()
				if p.res, ok = p.future.Response().(fsm.Result); !ok {
					p.err = fmt.Errorf("unexpected apply response %T", p.future.Response())
				}
			}
		}
		decided = batch
	}
}

func release(ps []*proposal) {
	for _, p := range ps {
		close(p.done)
	}
}

// sort splits pending proposals into the batch to log, those answered
// from the applied state (already decided), and those to try again after
// this batch.
func (g *groupCommit) sort(pending []*proposal) (batch, answered, later []*proposal) {
	if !g.leading() {
		return pending, nil, nil
	}
	applied, idx := g.view()
	spec := applied
	for _, p := range pending {
		if !p.check {
			batch = append(batch, p)
			continue
		}
		res, next := spec.Try(idx+1, p.cmd)
		if res.Err == nil && !res.NoOp {
			batch, spec = append(batch, p), next
			continue
		}
		if spec != applied { // it may only lose to a command ahead of it in this batch
			if res, _ := applied.Try(idx+1, p.cmd); res.Err == nil && !res.NoOp {
				later = append(later, p)
				continue
			}
		}
		p.res, p.index = res, idx
		answered = append(answered, p)
	}
	return batch, answered, later
}

// confirm checks leadership for proposals answered from the applied
// state: that state holds every write acknowledged so far, and a leader
// still leading after the answers were taken makes them linearizable (a
// deposed leader's state could miss a newer leader's writes). Without
// that confirmation they fail with ErrNotLeader: nothing was applied for
// them, and the client retries against the new leader.
func (g *groupCommit) confirm(answered []*proposal) []*proposal {
	if len(answered) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	if _, err := g.readIndex(ctx); err != nil {
		for _, p := range answered {
			p.res, p.index, p.err = fsm.Result{}, 0, ErrNotLeader
		}
	}
	return answered
}

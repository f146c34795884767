package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/rounds"
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
//
// An answer taken from the applied state needs proof that this node still
// led after the proposal arrived (a deposed leader's state may miss a newer
// leader's writes). A batch of this term that was sent after the proposal
// arrived and has since committed is that proof: a quorum accepted it in
// this term, so no later leader had been elected by then. Proposals a
// committed batch covers are answered at once; the others wait for the
// next batch when there is one, and otherwise for a quorum round. Winners
// thus never wait for a leadership check.
type groupCommit struct {
	raft        *raft.Raft
	view        func() (*fsm.State, uint64) // the applied state
	leading     func() bool                 // established leader of the current term
	reads       *readIndex
	timeout     time.Duration
	maxInFlight int
	batchSize   prometheus.Observer // commands per batch
	wait        prometheus.Observer // a proposal's wait for its batch to leave

	mu       sync.Mutex
	pending  []*proposal
	inFlight int
	counts   GroupCommitStats
}

// GroupCommitStats counts proposals, the batches they left in, and those
// answered without a log entry.
type GroupCommitStats = clusterapi.GroupCommitStats

type proposal struct {
	arrived time.Time
	cmd     fsm.Command
	data    []byte
	check   bool // may be answered without a log entry
	future  raft.ApplyFuture
	res     fsm.Result
	index   uint64
	err     error
	done    chan struct{}
	// proof is the quorum round taken when the proposal had to wait.
	proof *rounds.Round
	// cover is the last index of a batch sent after this proposal was
	// pending, once that batch has committed (0 before).
	cover atomic.Uint64
}

func (g *groupCommit) stats() GroupCommitStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.counts
}

// apply proposes cmd (encoded as data) and returns its result once decided.
func (g *groupCommit) apply(cmd fsm.Command, data []byte, check bool) (fsm.Result, uint64, error) {
	p := &proposal{arrived: time.Now(), cmd: cmd, data: data, check: check, done: make(chan struct{})}
	g.mu.Lock()
	start := g.inFlight < g.maxInFlight
	if check && !start {
		// It waits for a batch, and may lose to it: take the quorum round
		// that would confirm an answer from the applied state now, so the
		// answer need not wait for one later.
		p.proof = g.reads.ticket()
	}
	g.pending = append(g.pending, p)
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
		answered, unconfirmed := covered(answered)
		g.mu.Lock()
		g.pending = append(later, g.pending...) // deferred ones keep their place
		g.counts.Proposals += uint64(len(batch) + len(answered) + len(unconfirmed))
		g.counts.AnsweredWithoutLog += uint64(len(answered) + len(unconfirmed))
		if len(batch) > 0 {
			g.counts.Batches++
			g.counts.LargestBatch = max(g.counts.LargestBatch, len(batch))
			if g.batchSize != nil {
				g.batchSize.Observe(float64(len(batch)))
			}
		}
		g.mu.Unlock()
		g.waited(batch, answered, unconfirmed)
		for _, p := range batch {
			p.future = g.raft.Apply(p.data, g.timeout)
		}
		// Answers the last batch covers go first, then those their quorum
		// round confirms, then the last batch's winners.
		release(answered)
		release(g.confirm(unconfirmed))
		release(decided)
		ok := true
		for _, p := range batch {
			p.err = mapRaftError(p.future.Error()) // entries commit in order: wait for each
			if p.err == nil {
				var isResult bool
				p.index = p.future.Index()
				if p.res, isResult = p.future.Response().(fsm.Result); !isResult {
					p.err = responseError(p.future.Response())
				}
			}
			ok = ok && p.err == nil
		}
		if ok && len(batch) > 0 {
			last := batch[len(batch)-1].index
			for _, p := range later {
				p.cover.Store(last)
			}
		}
		decided = batch
	}
}

// waited records how long the proposals of one round waited for it.
func (g *groupCommit) waited(groups ...[]*proposal) {
	if g.wait == nil {
		return
	}
	now := time.Now()
	for _, ps := range groups {
		for _, p := range ps {
			g.wait.Observe(now.Sub(p.arrived).Seconds())
		}
	}
}

// covered splits answers taken from the applied state into those a
// committed batch proves linearizable and those still needing proof.
// Every proposal in one call was answered from the same state, so its
// applied index bounds the covering batch.
func covered(answered []*proposal) (ok, unconfirmed []*proposal) {
	for _, p := range answered {
		if c := p.cover.Load(); c != 0 && c <= p.index {
			ok = append(ok, p)
		} else {
			unconfirmed = append(unconfirmed, p)
		}
	}
	return ok, unconfirmed
}

func release(ps []*proposal) {
	for _, p := range ps {
		close(p.done)
	}
}

// sort splits pending proposals into the batch to log, those answered
// from the applied state (already decided), and those to try again after
// this batch.
//
// Pending proposals are concurrent (none was answered before another
// arrived), so any order between them is linearizable; they are taken in
// a random one. In arrival order, a writer whose requests reach the
// leader through a follower would lose every race for a table to a writer
// talking to the leader directly, and retry without end. The order is
// fixed here, before raft, and every replica applies the log as written.
func (g *groupCommit) sort(pending []*proposal) (batch, answered, later []*proposal) {
	if !g.leading() {
		return pending, nil, nil
	}
	rand.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
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
// state that no committed batch covers: a leader still leading after a
// proposal arrived answers it linearizably (a deposed leader's state
// could miss a newer leader's writes). Proposals that had to wait for a
// batch took their quorum round when they arrived, so it has usually
// finished by now. Without confirmation they fail with ErrNotLeader:
// nothing was applied for them, and the client retries on the new leader.
func (g *groupCommit) confirm(unconfirmed []*proposal) []*proposal {
	if len(unconfirmed) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	var round *rounds.Round // one fresh round for those that took none
	for _, p := range unconfirmed {
		proof := p.proof
		if proof == nil {
			if round == nil {
				round = g.reads.ticket()
			}
			proof = round
		}
		if _, err := proof.Wait(ctx); err != nil {
			p.res, p.index, p.err = fsm.Result{}, 0, ErrNotLeader
		}
	}
	return unconfirmed
}

// responseError is the error for an apply response that is not a result:
// a halted machine's (the entry is in the log, but this node will not
// apply it, so its outcome is unknown here), or a bug's.
func responseError(resp any) error {
	if err, ok := resp.(error); ok && errors.Is(err, ErrHalted) {
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	}
	return fmt.Errorf("unexpected apply response %T", resp)
}

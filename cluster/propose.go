package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/fsm"
)

// Propose replicates a command and returns its result and the raft index
// it was applied at. It fails with ErrNotLeader (nothing proposed) on a
// follower, and ErrUnknownOutcome when leadership was lost after proposing.
func (n *Node) Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, uint64, error) {
	if n.stopped() {
		return fsm.Result{}, 0, ErrShutdown
	}
	if err := ctx.Err(); err != nil {
		return fsm.Result{}, 0, err
	}
	start := time.Now()
	res, index, err := n.propose(cmd)
	n.metrics.proposed(start, res, err)
	return res, index, err
}

func (n *Node) propose(cmd fsm.Command) (fsm.Result, uint64, error) {
	if h, halted := n.fsm.Halted(); halted {
		// Nothing proposed now would be applied here.
		return fsm.Result{}, 0, fmt.Errorf("%w: this node halted on log entry %d, which it cannot apply", ErrShutdown, h.Index)
	}
	if err := n.disk.failed(); err != nil {
		// The node left raft; a proposal now could wait on it forever.
		return fsm.Result{}, 0, fmt.Errorf("%w: this node halted because its disk failed: %v", ErrShutdown, err)
	}
	_, isInit := cmd.(*fsm.Init)
	if err := n.disk.refuseWrite(); err != nil && !isInit {
		return fsm.Result{}, 0, err
	}
	n.stampRules(cmd)
	if need, have := fsm.RulesNeeded(cmd.Type()), n.Rules(); need > have {
		return fsm.Result{}, 0, fmt.Errorf("%w: %v needs every node to run a release with validation rules level %d; the lowest in the cluster is %d",
			ErrUpgradePending, cmd.Type(), need, have)
	}
	data, err := fsm.EncodeChecked(cmd)
	if err != nil {
		return fsm.Result{}, 0, err
	}
	// A term's first entry must reach the log even though it changes
	// nothing: it is how a leader learns it has applied everything.
	res, index, err := n.group.apply(cmd, data, !isInit)
	if errors.Is(err, ErrBusy) && !n.IsLeader() { // a follower's raft loop was busy: it would have refused
		err = fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	return res, index, err
}

// mapRaftError turns raft's errors into this package's sentinels.
func mapRaftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNotLeader
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", ErrBusy, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore):
		return ErrUnknownOutcome
	case errors.Is(err, errLogWrite):
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	}
	return err
}

// IsLeader reports whether this node currently leads.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// LeaderHTTPAddr returns the leader's HTTP address as it gossips it.
func (n *Node) LeaderHTTPAddr() (string, error) {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return "", ErrNoLeader
	}
	m, ok := n.gossip.get(string(id))
	if !ok || m.meta.HTTPAddr == "" {
		return "", fmt.Errorf("%w: leader %s has not been seen through gossip yet", ErrNoLeader, id)
	}
	return m.meta.HTTPAddr, nil
}

// LinearizableState returns a state that reflects every write acknowledged
// before the call began: the leader confirms it still leads (a quorum
// round), then waits until its state has applied the commit index it saw.
// It fails with ErrNotLeader on followers.
func (n *Node) LinearizableState(ctx context.Context) (*fsm.State, uint64, error) {
	readIndex, err := n.ReadIndex(ctx)
	if err != nil {
		return nil, 0, err
	}
	if err := n.fsm.WaitApplied(ctx, readIndex); err != nil {
		return nil, 0, err
	}
	st, idx := n.fsm.View()
	return st, idx, nil
}

// ReadIndex returns, on the leader, a commit index that covers every write
// acknowledged before the call began: leadership is confirmed (under the
// read lease, at once) after the call began. Any node that has applied
// the index can answer a read linearizably; a follower asks the leader for
// it (ErrNotLeader elsewhere).
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	if err := n.waitEstablished(ctx); err != nil {
		return 0, err
	}
	return n.reads.wait(ctx)
}

// WaitApplied waits until this node has applied index, or ctx ends.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	return n.fsm.WaitApplied(ctx, index)
}

// Established waits, on the leader, until it has applied the first entry
// of its term, and with it every entry committed before (ErrNotLeader
// elsewhere). It takes no round trip once the term is established.
func (n *Node) Established(ctx context.Context) error { return n.waitEstablished(ctx) }

// StaleState returns this node's local state without any coordination.
func (n *Node) StaleState() (*fsm.State, uint64) { return n.fsm.View() }

// WaitForLeader blocks until some leader is known or ctx ends.
func (n *Node) WaitForLeader(ctx context.Context) error {
	for {
		if _, id := n.raft.LeaderWithID(); id != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// established reports whether this node leads and has applied its own
// first entry of the current term (so its state holds every write
// acknowledged by earlier leaders).
func (n *Node) established() bool {
	return n.raft.State() == raft.Leader && n.readyTerm.Load() == n.raft.CurrentTerm()
}

// waitEstablished waits (briefly) while this node leads but has not yet
// applied its first entry of the term; a node that does not lead fails
// at once with ErrNotLeader.
func (n *Node) waitEstablished(ctx context.Context) error {
	deadline := time.Now().Add(n.cfg.ElectionTimeout + n.cfg.HeartbeatTimeout)
	for {
		if n.raft.State() != raft.Leader {
			return ErrNotLeader
		}
		if n.established() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: leader has not established its term yet", ErrNotLeader)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

package cluster

import (
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// readLease lets the leader answer linearizable reads without a quorum
// round while it holds a lease: a quorum of the latest configuration
// accepted an AppendEntries (a heartbeat, at least every tenth of the
// heartbeat timeout) from it in this term, sent less than the lease
// duration ago.
//
// Why no other leader can exist meanwhile: a follower that accepted an
// AppendEntries keeps that leader and refuses votes to anyone else until a
// full heartbeat timeout has passed since (raft's leader stickiness), and
// any election needs a vote from that quorum. The lease lasts half the
// heartbeat timeout, counted from when the request was sent, so it ends
// well before any of them can vote. What could break the promise is
// closed:
//   - a follower that restarts forgets its leader: a node waits one lease
//     duration before it starts raft (see Node.openRaft);
//   - a leadership transfer makes followers vote despite their leader: a
//     transfer this node starts ends the lease for the rest of the term;
//   - a node still campaigning after an earlier term's transfer accepts
//     heartbeats without following, and its election timer still runs: a
//     new leader uses no lease until two election timeouts and one lease
//     duration into its term, by when any such campaign has ended;
//   - clocks: durations are measured on monotonic clocks, and the lease is
//     half the timeout, so rates may differ by far more than real clocks do.
//
// Every voter must keep the promise as long as this leader counts on it:
// the same heartbeat timeout (--raft-heartbeat-timeout) and leases on.
// Each node gossips the lease it keeps, and a leader takes no lease while
// any voter's is shorter or unknown. Messages between nodes must not be
// delayed by more than an election timeout.
type readLease struct {
	raft     leaseRaft
	self     raft.ServerID
	duration time.Duration // 0: no lease
	grace    time.Duration // from the start of a term to the first lease
	now      func() time.Time
	// established reports that this node leads and has applied its first
	// entry of the term (its commit index covers earlier leaders' writes).
	established func() bool
	// promise returns the lease duration peer gossips that it keeps
	// (known is false before gossip has heard of it).
	promise func(peer raft.ServerID) (lease time.Duration, known bool)
	log     *slog.Logger

	mu          sync.Mutex
	acks        map[raft.ServerID]leaseAck
	noLeaseTerm uint64                          // a transfer started in this term
	shortPeers  map[raft.ServerID]time.Duration // voters keeping a shorter promise, as last warned
	term        uint64                          // the newest term held() saw this node lead
	termSeen    time.Time                       // when it first did
}

// leaseRaft is the part of raft the lease reads (a fake in unit tests).
type leaseRaft interface {
	State() raft.RaftState
	CurrentTerm() uint64
	GetConfiguration() raft.ConfigurationFuture
}

type leaseAck struct {
	sent time.Time
	term uint64
}

// acked records that peer accepted an AppendEntries of term sent at sent.
func (l *readLease) acked(peer raft.ServerID, sent time.Time, term uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.acks[peer]; !ok || a.term < term || (a.term == term && a.sent.Before(sent)) {
		l.acks[peer] = leaseAck{sent: sent, term: term}
	}
}

// endForTerm ends the lease until the next term: called before this node
// starts a leadership transfer.
func (l *readLease) endForTerm() {
	term := l.raft.CurrentTerm()
	l.mu.Lock()
	l.noLeaseTerm = max(l.noLeaseTerm, term)
	l.mu.Unlock()
}

// held reports whether this node leads under a valid lease right now.
func (l *readLease) held() bool {
	if l == nil || l.duration <= 0 || l.raft.State() != raft.Leader || !l.established() {
		return false
	}
	term := l.raft.CurrentTerm()
	cf := l.raft.GetConfiguration()
	if cf.Error() != nil || !l.votersKeepPromise(cf.Configuration()) {
		return false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if term <= l.noLeaseTerm {
		return false
	}
	if term != l.term {
		l.term, l.termSeen = term, now
	}
	if now.Sub(l.termSeen) < l.grace {
		return false
	}
	voters, fresh := 0, 0
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID == l.self {
			fresh++
			continue
		}
		if a, ok := l.acks[s.ID]; ok && a.term == term && now.Sub(a.sent) < l.duration {
			fresh++
		}
	}
	return voters > 0 && fresh > voters/2
}

// votersKeepPromise reports whether every other voter gossips a lease
// promise at least as long as this node's lease. A voter keeping a shorter
// one (another heartbeat timeout, or leases off) could vote for a new
// leader while this one still counts on the lease; that is logged once.
func (l *readLease) votersKeepPromise(cfg raft.Configuration) bool {
	if l.promise == nil {
		return false
	}
	for _, s := range cfg.Servers {
		if s.Suffrage != raft.Voter || s.ID == l.self {
			continue
		}
		lease, known := l.promise(s.ID)
		if !known {
			return false
		}
		if lease < l.duration {
			l.warnShort(s.ID, lease)
			return false
		}
	}
	return true
}

func (l *readLease) warnShort(peer raft.ServerID, lease time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, warned := l.shortPeers[peer]; warned && last == lease {
		return
	}
	if l.shortPeers == nil {
		l.shortPeers = map[raft.ServerID]time.Duration{}
	}
	l.shortPeers[peer] = lease
	if l.log != nil {
		l.log.Warn("no read lease: a voter keeps a shorter lease promise; linearizable reads take quorum rounds "+
			"(run every node with the same --raft-heartbeat-timeout and --read-lease)",
			"peer", string(peer), "peer_lease", lease, "lease", l.duration)
	}
}

// leaseTransport reports accepted AppendEntries to the lease. Replication
// in pipeline mode does not pass here; heartbeats, sent at least every
// tenth of the heartbeat timeout, do.
type leaseTransport struct {
	*raft.NetworkTransport
	lease *readLease
}

func (t *leaseTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress,
	args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	sent := t.lease.now()
	err := t.NetworkTransport.AppendEntries(id, target, args, resp)
	if err == nil && resp.Success && resp.Term == args.Term {
		t.lease.acked(id, sent, args.Term)
	}
	return err
}

// transferGuard is the raft handle autopilot gets: its leadership
// transfers end the lease first, like this node's own.
type transferGuard struct {
	*raft.Raft
	lease *readLease
}

func (g transferGuard) LeadershipTransferToServer(id raft.ServerID, addr raft.ServerAddress) raft.Future {
	g.lease.endForTerm()
	return g.Raft.LeadershipTransferToServer(id, addr)
}

// leasePromise returns the read lease peer gossips that it keeps.
func (n *Node) leasePromise(peer raft.ServerID) (time.Duration, bool) {
	if n.gossip == nil {
		return 0, false
	}
	m, ok := n.gossip.get(string(peer))
	if !ok {
		return 0, false
	}
	return time.Duration(m.meta.LeaseNs), true
}

package cluster

import (
	"strconv"

	"github.com/hashicorp/raft"

	"github.com/raftcat/raftcat/clusterapi"
)

// The status report's types are clusterapi's, so the HTTP layer can
// show them without depending on this package.
type (
	Member          = clusterapi.Member
	Status          = clusterapi.Status
	AutopilotStatus = clusterapi.AutopilotStatus
	GossipMember    = clusterapi.GossipMember
)

// Status reports this node's raft state and the configured members.
func (n *Node) Status() Status {
	_, leader := n.raft.LeaderWithID()
	s := Status{NodeID: n.cfg.NodeID, State: n.raft.State().String(), LeaderID: string(leader),
		Term: n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex(), AppliedIndex: n.fsm.Applied(),
		LastIndex: n.raft.LastIndex(), SnapshotRestores: n.fsm.restores.Load(), Members: []Member{}, Gossip: []GossipMember{}}
	stats := n.raft.Stats()
	s.LastSnapshotIndex, _ = strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
	s.LastLogTerm, _ = strconv.ParseUint(stats["last_log_term"], 10, 64)
	s.LastContactMs = lastContactMs(stats)
	s.GroupCommit = n.group.stats()
	s.Reads = n.reads.stats()
	s.CommandsApplied = n.fsm.commands.Load()
	s.LeaderChanges = n.leaders.list()
	if h := n.pilot.health(); h != nil && s.State == raft.Leader.String() {
		s.Autopilot = &AutopilotStatus{Healthy: h.Healthy, FailureTolerance: h.FailureTolerance, Servers: map[string]bool{}}
		for id, srv := range h.Servers {
			s.Autopilot.Servers[string(id)] = srv.Health.Healthy
		}
	}
	for _, m := range n.gossip.members() {
		s.Gossip = append(s.Gossip, GossipMember{ID: m.meta.ID, GossipAddr: m.addr, RaftAddr: m.meta.RaftAddr,
			HTTPAddr: m.meta.HTTPAddr, Status: m.status, Version: m.meta.Version})
	}
	s.LeaderHTTP, _ = n.LeaderHTTPAddr()
	if cf := n.raft.GetConfiguration(); cf.Error() == nil {
		for _, srv := range cf.Configuration().Servers {
			m := Member{ID: string(srv.ID), RaftAddr: string(srv.Address), Status: "unknown",
				Voter: srv.Suffrage == raft.Voter, Leader: srv.ID == leader}
			if g, ok := n.gossip.get(string(srv.ID)); ok {
				m.HTTPAddr, m.Status = g.meta.HTTPAddr, g.status
			}
			if string(srv.ID) == n.cfg.NodeID {
				m.Status = StatusAlive
			}
			s.Members = append(s.Members, m)
		}
	}
	return s
}

// CommandsApplied counts the commands this node applied since it started.
func (n *Node) CommandsApplied() uint64 { return n.fsm.commands.Load() }

// ObjectCounts returns the objects of this node's state by kind, and its
// tables by format (see statecount for how fresh).
func (n *Node) ObjectCounts() (objects, tables map[string]int) { return n.counts.Counts(n.State()) }

// Ready reports whether this node knows a leader (and, through gossip,
// where to forward to it) and has applied everything it knows to be
// committed.
func (n *Node) Ready() bool {
	if _, err := n.LeaderHTTPAddr(); err != nil && !n.IsLeader() {
		return false // without the leader's address this node cannot forward
	}
	if _, id := n.raft.LeaderWithID(); id == "" {
		return false
	}
	if !n.machine.State().Initialized() {
		return false
	}
	return n.raft.AppliedIndex() >= n.raft.CommitIndex()
}

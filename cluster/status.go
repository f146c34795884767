package cluster

import (
	"strconv"

	"github.com/hashicorp/raft"
)

// Member is one server of the raft configuration as /v1/cluster shows it.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr"`
	Status   string `json:"status"` // gossip status: alive, suspect, failed, left, unknown
	Voter    bool   `json:"voter"`
	Leader   bool   `json:"leader"`
}

// Status is a node's view of the cluster.
type Status struct {
	NodeID       string `json:"node_id"`
	State        string `json:"state"`
	LeaderID     string `json:"leader_id"`
	LeaderHTTP   string `json:"leader_http_addr,omitempty"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	LastIndex    uint64 `json:"last_index"`
	LastLogTerm  uint64 `json:"last_log_term"`
	// LastContactMs is the time since this node last heard from the leader
	// (0 on the leader, -1 if never).
	LastContactMs int64 `json:"last_contact_ms"`
	// LastSnapshotIndex is the index of this node's newest raft snapshot.
	LastSnapshotIndex uint64 `json:"last_snapshot_index"`
	// SnapshotRestores counts snapshots restored since the process started
	// (installed from the leader, or a backup restore).
	SnapshotRestores uint64         `json:"snapshot_restores"`
	Members          []Member       `json:"members"`
	Gossip           []GossipMember `json:"gossip"`
	// GroupCommit counts the proposals this node sent to raft and the
	// batches they left in: proposals per batch is the group-commit gain.
	GroupCommit GroupCommitStats `json:"group_commit"`
	// Reads counts this node's linearizable reads by how leadership was
	// confirmed: under its lease, or by a quorum round.
	Reads ReadStats `json:"reads"`
	// Autopilot is the leader's view of server health (leader only).
	Autopilot *AutopilotStatus `json:"autopilot,omitempty"`
}

// AutopilotStatus summarises autopilot's health view.
type AutopilotStatus struct {
	Healthy          bool            `json:"healthy"`
	FailureTolerance int             `json:"failure_tolerance"`
	Servers          map[string]bool `json:"servers_healthy"`
}

// GossipMember is a node as gossip sees it, whether or not it is in the
// raft configuration.
type GossipMember struct {
	ID         string `json:"id"`
	GossipAddr string `json:"gossip_addr"`
	RaftAddr   string `json:"raft_addr"`
	HTTPAddr   string `json:"http_addr"`
	Status     string `json:"status"`
	Version    string `json:"version"`
}

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

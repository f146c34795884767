package cluster

import (
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
	NodeID       string   `json:"node_id"`
	State        string   `json:"state"`
	LeaderID     string   `json:"leader_id"`
	LeaderHTTP   string   `json:"leader_http_addr,omitempty"`
	Term         uint64   `json:"term"`
	CommitIndex  uint64   `json:"commit_index"`
	AppliedIndex uint64   `json:"applied_index"`
	LastIndex    uint64   `json:"last_index"`
	Members      []Member `json:"members"`
}

// Status reports this node's raft state and the configured members.
func (n *Node) Status() Status {
	_, leader := n.raft.LeaderWithID()
	s := Status{NodeID: n.cfg.NodeID, State: n.raft.State().String(), LeaderID: string(leader),
		Term: n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex(), AppliedIndex: n.fsm.Applied(),
		LastIndex: n.raft.LastIndex(), Members: []Member{}}
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

// Ready reports whether this node knows a leader and has applied
// everything it knows to be committed.
func (n *Node) Ready() bool {
	if _, id := n.raft.LeaderWithID(); id == "" {
		return false
	}
	if !n.machine.State().Initialized() {
		return false
	}
	return n.raft.AppliedIndex() >= n.raft.CommitIndex()
}

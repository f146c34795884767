package ui

import (
	"context"
	"sync"
	"time"

	"github.com/raftcat/raftcat/clusterapi"
)

// peerTimeout bounds asking one member for its status: a member that
// does not answer in time shows as unreachable.
const peerTimeout = time.Second

// member is one server of the raft configuration: how this node sees it
// (gossip), and what it reports of itself. The figures are null when the
// member could not be asked.
type member struct {
	ID        string `json:"id"`
	HTTPAddr  string `json:"http_addr"`
	Voter     bool   `json:"voter"`
	Self      bool   `json:"self"`
	Gossip    string `json:"gossip"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Role is the member's own raft state; for a member not reached, this
	// node's view of it ("leader" or "unknown").
	Role          string  `json:"role"`
	Term          *uint64 `json:"term"`
	CommitIndex   *uint64 `json:"commit_index"`
	AppliedIndex  *uint64 `json:"applied_index"`
	LastContactMs *int64  `json:"last_contact_ms"`
	// Lag is the leader's commit index minus the member's applied index.
	Lag *uint64 `json:"lag"`

	autopilot *clusterapi.AutopilotStatus
}

// members returns the configured servers as this node sees them, each
// completed with its own status, asked of all at once.
func (s *Server) members(ctx context.Context, local clusterapi.Status) []member {
	out := make([]member, len(local.Members))
	var wg sync.WaitGroup
	for i, m := range local.Members {
		out[i] = member{ID: m.ID, HTTPAddr: m.HTTPAddr, Voter: m.Voter, Gossip: m.Status, Role: "unknown"}
		if m.Leader {
			out[i].Role = "leader"
		}
		switch {
		case m.ID == local.NodeID:
			out[i].Self = true
			out[i].reported(local)
		case m.HTTPAddr == "":
			out[i].Error = "its HTTP address is unknown (not seen through gossip)"
		default:
			wg.Go(func() { out[i].answered(s.fetchStatus(ctx, m)) })
		}
	}
	wg.Wait()
	setLags(out)
	return out
}

// answered fills the member in from the status it answered, or records
// why it could not be had.
func (m *member) answered(st clusterapi.Status, err error) {
	if err != nil {
		m.Error = err.Error()
		return
	}
	m.reported(st)
}

// reported fills the member in from the status it reported.
func (m *member) reported(st clusterapi.Status) {
	m.Reachable, m.Role = true, role(st.State)
	m.Term, m.CommitIndex, m.AppliedIndex = &st.Term, &st.CommitIndex, &st.AppliedIndex
	m.LastContactMs, m.autopilot = &st.LastContactMs, st.Autopilot
}

// setLags sets every reached member's lag behind the commit index of the
// leader, if the leader was reached.
func setLags(ms []member) {
	leader := reachedLeader(ms)
	if leader == nil {
		return
	}
	commit := *leader.CommitIndex
	for i := range ms {
		if ms[i].Reachable {
			lag := commit - min(commit, *ms[i].AppliedIndex)
			ms[i].Lag = &lag
		}
	}
}

// reachedLeader returns the member that reported itself leader (in the
// latest term, should an old leader not know yet), or nil.
func reachedLeader(ms []member) *member {
	var leader *member
	for i, m := range ms {
		if m.Reachable && m.Role == "leader" && (leader == nil || *m.Term > *leader.Term) {
			leader = &ms[i]
		}
	}
	return leader
}

// leaderAutopilot is the health view of the leader, if it was reached.
func leaderAutopilot(ms []member) *clusterapi.AutopilotStatus {
	if leader := reachedLeader(ms); leader != nil {
		return leader.autopilot
	}
	return nil
}

// fetchStatus asks member m for its status (GET /v1/cluster), within
// peerTimeout.
func (s *Server) fetchStatus(ctx context.Context, m clusterapi.Member) (clusterapi.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	return s.core.PeerStatus(ctx, m)
}

package cluster

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// What raft answers a proposal or a leadership check with maps to the
// sentinel that says whether anything was proposed: a refusal (the request
// may go elsewhere or again), or an unknown outcome (only an identical
// retry is safe). A read proposes nothing, so leadership lost during its
// check is a refusal; a full queue is the leader being busy, not leadership
// moving.
func TestRaftErrorsMapToWhetherAnythingWasProposed(t *testing.T) {
	cases := []struct {
		name string
		got  error
		want error
	}{
		{"proposal, not the leader", mapRaftError(raft.ErrNotLeader), ErrNotLeader},
		{"proposal, transfer under way", mapRaftError(raft.ErrLeadershipTransferInProgress), ErrNotLeader},
		{"proposal, queue full", mapRaftError(raft.ErrEnqueueTimeout), ErrBusy},
		{"proposal, leadership lost", mapRaftError(raft.ErrLeadershipLost), ErrUnknownOutcome},
		{"read, leadership lost", mapReadError(raft.ErrLeadershipLost), ErrNotLeader},
		{"read, not the leader", mapReadError(raft.ErrNotLeader), ErrNotLeader},
		{"read, shut down", mapReadError(raft.ErrRaftShutdown), ErrShutdown},
	}
	for _, c := range cases {
		if !errors.Is(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if errors.Is(mapRaftError(raft.ErrEnqueueTimeout), ErrNotLeader) {
		t.Errorf("a full queue reads as leadership moving")
	}
}

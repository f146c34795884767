package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

type fakeLeaseRaft struct {
	state raft.RaftState
	term  uint64
	cfg   raft.Configuration
}

func (f *fakeLeaseRaft) State() raft.RaftState                      { return f.state }
func (f *fakeLeaseRaft) CurrentTerm() uint64                        { return f.term }
func (f *fakeLeaseRaft) GetConfiguration() raft.ConfigurationFuture { return fakeConfig{f.cfg} }

type fakeConfig struct{ cfg raft.Configuration }

func (c fakeConfig) Error() error                      { return nil }
func (c fakeConfig) Index() uint64                     { return 1 }
func (c fakeConfig) Configuration() raft.Configuration { return c.cfg }

func servers(voters []string, nonvoters ...string) raft.Configuration {
	var c raft.Configuration
	for _, id := range voters {
		c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(id), Suffrage: raft.Voter})
	}
	for _, id := range nonvoters {
		c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(id), Suffrage: raft.Nonvoter})
	}
	return c
}

// TestReadLease walks the lease through what grants and what ends it: a
// quorum of fresh acknowledgements in the current term grants it; age,
// another term, non-voters, a larger configuration, losing leadership, a
// leadership transfer, an unestablished term and a new term's grace
// period, and a voter that does not gossip a promise as long as the lease
// each withhold it.
func TestReadLease(t *testing.T) {
	now := time.Unix(1000, 0)
	r := &fakeLeaseRaft{state: raft.Leader, term: 5, cfg: servers([]string{"a", "b", "c"}, "d")}
	established := true
	promises := map[raft.ServerID]time.Duration{"b": 500 * time.Millisecond, "c": 500 * time.Millisecond,
		"d": 0, "e": 500 * time.Millisecond, "f": 500 * time.Millisecond}
	promise := func(peer raft.ServerID) (time.Duration, bool) { d, ok := promises[peer]; return d, ok }
	l := &readLease{raft: r, self: "a", duration: 500 * time.Millisecond, now: func() time.Time { return now },
		acks: map[raft.ServerID]leaseAck{}, established: func() bool { return established }, promise: promise}
	step := func(what string, want bool) {
		t.Helper()
		if got := l.held(); got != want {
			t.Fatalf("%s: lease held = %v, want %v", what, got, want)
		}
	}
	step("no acknowledgements", false)
	l.acked("d", now, 5)
	step("only a non-voter acknowledged", false)
	l.acked("b", now.Add(-100*time.Millisecond), 4)
	step("acknowledged in an earlier term", false)
	l.acked("b", now.Add(-100*time.Millisecond), 5)
	step("self and one of three voters, fresh", true)
	l.acked("b", now.Add(-300*time.Millisecond), 5)
	step("an older acknowledgement does not replace a newer one", true)

	now = now.Add(399 * time.Millisecond)
	step("499 ms after the request was sent", true)
	now = now.Add(time.Millisecond)
	step("500 ms after the request was sent", false)
	l.acked("c", now.Add(-10*time.Millisecond), 5)
	step("renewed by another voter", true)

	r.cfg = servers([]string{"a", "b", "c", "e", "f"})
	step("five voters need two fresh followers", false)
	l.acked("e", now, 5)
	step("five voters, two fresh followers", true)

	r.state = raft.Follower
	step("not the leader", false)
	r.state = raft.Leader
	l.endForTerm()
	step("a transfer started in this term", false)
	r.term = 6
	l.acked("c", now, 6)
	l.acked("e", now, 6)
	step("a new term after the transfer", true)

	established = false
	step("the term's first entry not applied yet", false)
	established = true

	l.grace = 2 * time.Second
	r.term = 7
	l.acked("c", now, 7)
	step("a new term, within its grace period", false)
	now = now.Add(2 * time.Second)
	l.acked("c", now, 7)
	l.acked("e", now, 7)
	step("a new term, after its grace period", true)

	promises["c"] = 250 * time.Millisecond
	step("a voter keeps a shorter promise (a shorter heartbeat timeout)", false)
	promises["c"] = 0
	step("a voter runs without leases", false)
	delete(promises, "c")
	step("a voter gossip has not heard of yet", false)
	promises["c"] = time.Second
	step("every voter keeps at least the lease's promise", true)

	l.duration = 0
	step("lease disabled", false)
}

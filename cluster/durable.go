package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// The leader's log write overlaps replication.
//
// hashicorp/raft writes a batch to the leader's log, counts the leader
// towards the batch's commit, and only then sends it to the followers,
// so every commit waits for two syncs one after the other: the leader's,
// then a follower's. The Raft paper (section 10.2.1) lets the leader send
// first and sync in parallel, as long as it counts itself only once its
// own write is on disk.
//
// raftcat does that without changing raft. The leader's log write may
// return before its sync (raftlog's deferred sync, allowed by
// deferLogSync), and the transport hands raft a follower's acceptance of
// entries only once the leader's own log holds them on disk
// (durableTransport). A commit needs a quorum, and while the cluster has
// more than one voter every quorum includes a follower, whose acceptance
// raft now sees only after the leader's sync: an entry commits only once
// the leader and a quorum of followers' syncs are done, as before.
// Followers sync before they answer, as before. With one voter, the
// leader's count alone commits, so its writes sync before they return.

// durableLog is the log store's side of it: a wait for the log to be on
// disk up to an index.
type durableLog interface {
	WaitDurable(index uint64, stop <-chan struct{}) error
}

// deferLogSync reports whether the leader's log write in progress may
// return before its sync: this node leads, and every quorum of the latest
// configuration includes another server. raft asks for log writes on its
// main goroutine, which also sets its state and, on the leader, the latest
// configuration before writing it, so both are current here.
func (n *Node) deferLogSync() bool {
	r := n.raftRef.Load()
	if r == nil || r.State() != raft.Leader {
		return false
	}
	voters, self := 0, false
	for _, s := range r.GetConfiguration().Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
			self = self || s.ID == raft.ServerID(n.cfg.NodeID)
		}
	}
	return voters > 1 || (voters == 1 && !self)
}

// durableTransport holds back a follower's acceptance of entries until
// the leader's own log holds them on disk.
type durableTransport struct {
	*leaseTransport
	log  durableLog
	wait prometheus.Observer // how long an acceptance was held
}

// AppendEntries is the one-at-a-time replication path (and heartbeats,
// which carry no entries and are never held).
func (t *durableTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress,
	args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if err := t.leaseTransport.AppendEntries(id, target, args, resp); err != nil {
		return err
	}
	return t.hold(args, resp, nil)
}

// hold waits for the leader's log to be on disk up to the last entry a
// follower accepted.
func (t *durableTransport) hold(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, stop <-chan struct{}) error {
	if !resp.Success || len(args.Entries) == 0 {
		return nil
	}
	start := time.Now()
	err := t.log.WaitDurable(args.Entries[len(args.Entries)-1].Index, stop)
	if t.wait != nil {
		t.wait.Observe(time.Since(start).Seconds())
	}
	return err
}

// AppendEntriesPipeline wraps the pipelined replication path, which
// carries nearly all entries under load.
func (t *durableTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.leaseTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	d := &durablePipeline{AppendPipeline: p, t: t, out: make(chan raft.AppendFuture, 128), stop: make(chan struct{})}
	go d.pass()
	return d, nil
}

// durablePipeline passes raft the pipeline's answers in order, each once
// the entries it accepts are on the leader's disk.
type durablePipeline struct {
	raft.AppendPipeline
	t    *durableTransport
	out  chan raft.AppendFuture
	stop chan struct{}
	once sync.Once
}

func (d *durablePipeline) Consumer() <-chan raft.AppendFuture { return d.out }

func (d *durablePipeline) Close() error {
	d.once.Do(func() { close(d.stop) })
	return d.AppendPipeline.Close()
}

func (d *durablePipeline) pass() {
	in := d.AppendPipeline.Consumer()
	for {
		var f raft.AppendFuture
		select {
		case f = <-in:
		case <-d.stop:
			return
		}
		// An answer the wait gave up on is dropped: raft never counts it.
		if f.Error() == nil && d.t.hold(f.Request(), f.Response(), d.stop) != nil {
			return
		}
		select {
		case d.out <- f:
		case <-d.stop:
			return
		}
	}
}

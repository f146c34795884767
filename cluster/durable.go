package cluster

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/internal/raftlog"
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

// deferLogSync reports whether the leader's log write of logs may return
// before its sync: this node leads, every quorum of the latest
// configuration includes another server, and the write holds no
// configuration entry. raft asks for log writes on its main goroutine,
// which also sets its state, so that is current here. A configuration
// entry is written before raft makes it the latest configuration and
// recounts the commit under it: one that leaves this node the only voter
// would commit every entry not yet on disk. Its write is not deferred,
// so it flushes the whole log before raft recounts.
func (n *Node) deferLogSync(logs []*raft.Log) bool {
	r := n.raftRef.Load()
	if r == nil || r.State() != raft.Leader || !deferrable(logs) {
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

// deferrable reports whether logs hold no configuration change.
func deferrable(logs []*raft.Log) bool {
	for _, l := range logs {
		switch l.Type {
		case raft.LogConfiguration, raft.LogAddPeerDeprecated, raft.LogRemovePeerDeprecated:
			return false
		}
	}
	return true
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
	stop := make(chan struct{})
	limit := time.AfterFunc(holdLimit, func() { close(stop) })
	defer limit.Stop()
	return t.hold(args, resp, stop)
}

// holdLimit bounds a one-at-a-time acceptance's wait, which raft cannot
// interrupt: past it the call fails and raft sends again. A wait that long
// means the leader stepped down and truncated its log, or its disk hangs.
const holdLimit = 10 * time.Second

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
		if f.Error() == nil {
			switch err := d.t.hold(f.Request(), f.Response(), d.stop); {
			case errors.Is(err, raftlog.ErrStopped):
				return
			case err != nil:
				// The leader's sync failed: raft gets a refusal, never
				// counts the acceptance, and leaves the pipeline.
				f = refused(f)
			}
		}
		select {
		case d.out <- f:
		case <-d.stop:
			return
		}
	}
}

// refusedAnswer is an acceptance turned into a refusal.
type refusedAnswer struct {
	raft.AppendFuture
	resp *raft.AppendEntriesResponse
}

func (r refusedAnswer) Response() *raft.AppendEntriesResponse { return r.resp }

func refused(f raft.AppendFuture) raft.AppendFuture {
	resp := *f.Response()
	resp.Success = false
	return refusedAnswer{AppendFuture: f, resp: &resp}
}

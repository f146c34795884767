package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
)

// pilot wires hashicorp/raft-autopilot to this node: it tracks server
// health and removes servers that gossip has reported failed for longer
// than DeadServerThreshold, never taking the cluster below MinQuorum
// voters nor removing a majority.
type pilot struct {
	n     *Node
	ap    *autopilot.Autopilot
	fetch atomic.Pointer[StatusFetcher] // see FetchStatusWith

	mu        sync.Mutex
	state     *autopilot.State
	failedAt  map[string]time.Time // when gossip first reported a node failed
	running   bool
	runCancel context.CancelFunc
}

func newPilot(n *Node) *pilot {
	p := &pilot{n: n, failedAt: map[string]time.Time{}}
	p.ap = autopilot.New(transferGuard{Raft: n.raft, lease: n.lease}, p, autopilot.WithLogger(n.hlog.Named("autopilot")),
		autopilot.WithUpdateInterval(time.Second), autopilot.WithReconcileInterval(time.Second))
	return p
}

// follow starts autopilot while this node leads and stops it otherwise.
// It is called from one goroutine at a time (the leader loop, then
// Shutdown after that loop ended).
func (p *pilot) follow(leader bool) {
	p.mu.Lock()
	running := p.running
	p.mu.Unlock()
	switch {
	case leader && !running:
		ctx, cancel := context.WithCancel(context.Background())
		p.ap.Start(ctx)
		p.mu.Lock()
		p.running, p.runCancel = true, cancel
		p.mu.Unlock()
	case !leader && running:
		p.mu.Lock()
		cancel := p.runCancel
		p.running, p.state = false, nil
		p.mu.Unlock()
		cancel()
		<-p.ap.Stop() // autopilot may be calling NotifyState: never wait holding mu
	}
}

// AutopilotConfig is autopilot's view of our configuration.
func (p *pilot) AutopilotConfig() *autopilot.Config {
	return &autopilot.Config{
		CleanupDeadServers:      p.n.cfg.DeadServerThreshold > 0,
		LastContactThreshold:    2 * p.n.cfg.HeartbeatTimeout,
		MaxTrailingLogs:         250,
		MinQuorum:               uint(p.n.cfg.MinQuorum),
		ServerStabilizationTime: 10 * time.Second,
	}
}

// NotifyState keeps autopilot's latest view for the status endpoint.
func (p *pilot) NotifyState(s *autopilot.State) {
	p.mu.Lock()
	p.state = s
	p.mu.Unlock()
}

// KnownServers reports every server of the raft configuration, all of
// them voters. A server counts as failed only after gossip has reported it
// failed for longer than the threshold; a server gossip does not know (yet)
// counts as alive, since autopilot removes anything that is not.
func (p *pilot) KnownServers() map[raft.ServerID]*autopilot.Server {
	out := map[raft.ServerID]*autopilot.Server{}
	cf := p.n.raft.GetConfiguration()
	if cf.Error() != nil {
		return out
	}
	_, leader := p.n.raft.LeaderWithID()
	for _, s := range cf.Configuration().Servers {
		srv := &autopilot.Server{ID: s.ID, Name: string(s.ID), Address: s.Address, NodeStatus: autopilot.NodeAlive,
			NodeType: autopilot.NodeVoter, RaftVersion: raft.ProtocolVersionMax, IsLeader: s.ID == leader}
		if m, ok := p.n.gossip.get(string(s.ID)); ok {
			srv.Version, srv.NodeStatus = m.meta.Version, p.nodeStatus(m)
		}
		if string(s.ID) == p.n.cfg.NodeID {
			srv.NodeStatus = autopilot.NodeAlive
		}
		out[s.ID] = srv
	}
	return out
}

func (p *pilot) nodeStatus(m member) autopilot.NodeStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch m.status {
	case StatusAlive, StatusSuspect:
		delete(p.failedAt, m.meta.ID)
		return autopilot.NodeAlive
	case StatusLeft:
		return autopilot.NodeLeft
	}
	since, ok := p.failedAt[m.meta.ID]
	if !ok {
		p.failedAt[m.meta.ID] = time.Now()
		return autopilot.NodeAlive // failed just now: maybe only paused
	}
	if time.Since(since) < p.n.cfg.DeadServerThreshold {
		return autopilot.NodeAlive
	}
	return autopilot.NodeFailed
}

// FetchServerStats asks every server for its raft position (see
// FetchStatusWith).
func (p *pilot) FetchServerStats(ctx context.Context, servers map[raft.ServerID]*autopilot.Server) map[raft.ServerID]*autopilot.ServerStats {
	out := map[raft.ServerID]*autopilot.ServerStats{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id := range servers {
		if string(id) == p.n.cfg.NodeID {
			mu.Lock()
			out[id] = statsFrom(p.n.Status())
			mu.Unlock()
			continue
		}
		// A server that cannot be asked is unhealthy: autopilot would
		// otherwise keep its last (healthy) stats forever.
		unreachable := &autopilot.ServerStats{LastContact: -1}
		m, ok := p.n.gossip.get(string(id))
		if !ok {
			mu.Lock()
			out[id] = unreachable
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats := unreachable
			if st, err := p.remoteStatus(ctx, Member{ID: m.meta.ID, RaftAddr: m.meta.RaftAddr, HTTPAddr: m.meta.HTTPAddr}); err == nil {
				stats = statsFrom(st)
			}
			mu.Lock()
			out[id] = stats
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// StatusFetcher asks member m for its status (its GET /v1/cluster) the
// way the HTTP layer reaches peers: over the connections between nodes,
// with their TLS and signatures.
type StatusFetcher = func(ctx context.Context, m Member) (Status, error)

// FetchStatusWith is how autopilot asks the other servers for their raft
// position; until it is called they count as unreachable.
func (n *Node) FetchStatusWith(f StatusFetcher) { n.pilot.fetch.Store(&f) }

var errNoStatusFetcher = errors.New("no way to ask peers for their status yet")

func (p *pilot) remoteStatus(ctx context.Context, m Member) (Status, error) {
	f := p.fetch.Load()
	if f == nil {
		return Status{}, errNoStatusFetcher
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return (*f)(ctx, m)
}

func statsFrom(st Status) *autopilot.ServerStats {
	return &autopilot.ServerStats{LastContact: time.Duration(st.LastContactMs) * time.Millisecond,
		LastTerm: st.LastLogTerm, LastIndex: st.LastIndex}
}

// RemoveFailedServer removes a server autopilot judged dead.
func (p *pilot) RemoveFailedServer(srv *autopilot.Server) {
	go func() {
		p.n.log.Warn("autopilot: removing a server that has been failed longer than the threshold",
			"node", srv.ID, "threshold", p.n.cfg.DeadServerThreshold)
		if err := p.n.RemoveServer(context.Background(), string(srv.ID)); err != nil {
			p.n.log.Warn("autopilot: could not remove failed server", "node", srv.ID, "err", err)
		}
	}()
}

// health returns autopilot's latest view (nil when this node does not lead).
func (p *pilot) health() *autopilot.State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// lastContactMs reads raft's time since the last leader contact, in ms
// (0 on the leader, -1 when there never was one).
func lastContactMs(stats map[string]string) int64 {
	v := stats["last_contact"]
	if v == "0" || v == "" {
		return 0
	}
	if v == "never" {
		return -1
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return -1
	}
	return d.Milliseconds()
}

package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// With Config.LeaderFollowsClients, leadership moves to the node where
// nearly all requests that need the leader enter the cluster. A follower
// relays such requests to the leader, one more round trip each; a client
// that talks to one node (a lone writer, a load balancer that keeps a
// client on one node) pays it on every load and every commit, unless that
// node leads. Every window the leader looks at where the requests it
// served came in: when at least minRequests did and one follower brought
// share of them, the leader hands leadership to it (a raft leadership
// transfer: no election timeout, and requests refused meanwhile go on to
// the new leader). A leader that took over from another moves nothing
// until it has led for cooldown (see placementGate), so clients that move
// around cannot make leadership flap. Requests spread over the nodes move
// nothing.

// Defaults of the placement policy.
const (
	defaultPlacementWindow      = 10 * time.Second
	defaultPlacementCooldown    = 5 * time.Minute
	defaultPlacementMinRequests = 1000
	placementShare              = 0.9
)

// placement counts, on the leader, the node each request it served entered
// the cluster at.
type placement struct {
	mu     sync.Mutex
	counts map[string]int
}

// placementKeys bounds the nodes counted in one window; the header naming
// a request's follower comes from the network, so more names than a
// cluster has are counted together under "" (never a target).
const placementKeys = 16

func (p *placement) note(node string) {
	p.mu.Lock()
	if p.counts == nil {
		p.counts = map[string]int{}
	}
	if _, ok := p.counts[node]; !ok && len(p.counts) >= placementKeys {
		node = ""
	}
	p.counts[node]++
	p.mu.Unlock()
}

// take returns the counts so far and starts a new window.
func (p *placement) take() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	p.counts = nil
	return c
}

// placementTarget is the node one window's counts ask leadership to move
// to, or "": the node that brought at least share of at least minRequests
// requests, when it is not self.
func placementTarget(self string, counts map[string]int, minRequests int, share float64) string {
	total, top, most := 0, "", 0
	for node, n := range counts {
		total += n
		if n > most || (n == most && node < top) {
			top, most = node, n
		}
	}
	if total < minRequests || top == self || top == "" || float64(most) < share*float64(total) {
		return ""
	}
	return top
}

// NoteEntry records that a request this node serves as the leader entered
// the cluster at node (this node's own id for its own clients).
func (n *Node) NoteEntry(node string) {
	if n.cfg.LeaderFollowsClients {
		n.placement.note(node)
	}
}

// placementLoop runs the policy once per window.
func (n *Node) placementLoop() {
	var gate placementGate
	for n.sleep(n.cfg.PlacementWindow) {
		counts := n.placement.take()
		now := time.Now()
		if !gate.counts(now, n.leadingTerm(), n.sawOtherLeader.Load(), n.cfg.PlacementCooldown) {
			continue
		}
		target := placementTarget(n.cfg.NodeID, counts, n.cfg.PlacementMinRequests, placementShare)
		if target == "" {
			continue
		}
		if left := gate.waitLeft(now, n.cfg.PlacementCooldown); left > 0 {
			n.holdLeadership(&gate, target, left)
			continue
		}
		gate.moved(now)
		n.moveLeadership(target, counts)
	}
}

// placementGate decides, at the end of each window, whether its counts may
// move leadership. A window counts only if this node led, in one term,
// all through it. A leader waits cooldown from when it began to lead
// (unless it has seen no other leader since its process started: a new
// cluster's first), so that leadership handed to it (by this policy, by
// an operator, after a failure) stays put for that long: moves are at most
// one per cooldown across the cluster, and an operator's transfer is not
// undone at once. After a move of its own that failed, it waits cooldown
// again.
type placementGate struct {
	term     uint64    // the term this node led in at the last window's end (0: it did not lead)
	since    time.Time // when it was first seen leading in term
	wait     time.Duration
	lastMove time.Time
	told     bool // the wait was logged in this term
}

// counts reports whether the window that ends at now counts; term is the
// term this node leads in (0: it does not lead).
func (g *placementGate) counts(now time.Time, term uint64, sawOtherLeader bool, cooldown time.Duration) bool {
	if term != g.term { // the window began before this node led in term
		g.term, g.since, g.wait, g.told = term, now, 0, false
		if sawOtherLeader {
			g.wait = cooldown
		}
		return false
	}
	return term != 0
}

// waitLeft is how long this leader must still wait before it may move
// leadership.
func (g *placementGate) waitLeft(now time.Time, cooldown time.Duration) time.Duration {
	left := g.since.Add(g.wait).Sub(now)
	if !g.lastMove.IsZero() {
		left = max(left, g.lastMove.Add(cooldown).Sub(now))
	}
	return max(left, 0)
}

func (g *placementGate) moved(now time.Time) { g.lastMove = now }

// holdLeadership counts and (once per term) logs a move the requests
// asked for that waits out the cooldown.
func (n *Node) holdLeadership(g *placementGate, target string, left time.Duration) {
	n.metrics.placementHeld.Inc()
	if !g.told {
		g.told = true
		n.log.Info("requests come in at another node, but leadership stays until the cooldown has passed",
			"to", target, "wait", left.Round(time.Second), "cooldown", n.cfg.PlacementCooldown)
	}
}

// leadingTerm is the term this node leads in, once it applied the term's
// first entry, or 0.
func (n *Node) leadingTerm() uint64 {
	if !n.established() {
		return 0
	}
	return n.raft.CurrentTerm()
}

// moveLeadership hands leadership to target, where the window's requests
// came in.
func (n *Node) moveLeadership(target string, counts map[string]int) {
	total := 0
	for _, c := range counts {
		total += c
	}
	n.log.Info("moving leadership to the node where the requests come in", "to", target,
		"requests_entered_there", counts[target], "requests", total, "window", n.cfg.PlacementWindow)
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.ElectionTimeout+n.cfg.HeartbeatTimeout)
	defer cancel()
	go func() { // shutting down ends the wait for the new leader
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := n.TransferLeadership(ctx, target); err != nil {
		n.log.Warn("could not move leadership to where the requests come in", "to", target, "err", err)
		return
	}
	n.metrics.placementMoves.Inc()
}

// newPlacementMetrics are the counts of leadership moves the policy made
// and of windows that asked for one during the cooldown.
func newPlacementMetrics() (moves, held prometheus.Counter) {
	moves = prometheus.NewCounter(prometheus.CounterOpts{Name: "raftcat_leadership_moves_total",
		Help: "Leadership transfers this node made, as the leader, to the node where nearly all requests came in (--leader-follows-clients)."})
	held = prometheus.NewCounter(prometheus.CounterOpts{Name: "raftcat_leadership_moves_held_total",
		Help: "Windows in which this node, as the leader, would have moved leadership to where the requests came in, but waited out the cooldown."})
	return moves, held
}

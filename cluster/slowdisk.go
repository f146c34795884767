package cluster

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A leader whose disk turns slow holds every commit up by its log writes:
// each batch is written (and synced) by the leader before the next one
// leaves. The leader therefore times its own log writes and syncs, and
// when over one window (SlowDiskWindow) their median exceeds
// SlowDiskThreshold, it hands leadership to another voter (a raft
// leadership transfer; a follower's slow disk only slows that follower).
// It moves at most once per PlacementCooldown, so a cluster whose disks
// are all slow does not pass leadership around for nothing.

// Defaults of the slow-disk policy.
const (
	defaultSlowDiskThreshold = 100 * time.Millisecond
	defaultSlowDiskWindow    = 10 * time.Second
	slowDiskMinSamples       = 5
)

// diskLatency collects the durations of the log's writes and syncs.
type diskLatency struct {
	mu      sync.Mutex
	samples []time.Duration
}

func (d *diskLatency) observe(x time.Duration) {
	d.mu.Lock()
	if len(d.samples) < 1<<16 {
		d.samples = append(d.samples, x)
	}
	d.mu.Unlock()
}

// take returns the window's samples and starts a new window.
func (d *diskLatency) take() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.samples
	d.samples = nil
	return s
}

// median of samples (which it sorts).
func median(samples []time.Duration) time.Duration {
	slices.Sort(samples)
	return samples[len(samples)/2]
}

// slowDiskLoop runs the policy once per window.
func (n *Node) slowDiskLoop() {
	var lastMove time.Time
	for n.sleep(n.cfg.SlowDiskWindow) {
		samples := n.latency.take()
		if n.leadingTerm() == 0 || len(samples) < slowDiskMinSamples {
			continue
		}
		med := median(samples)
		if med < n.cfg.SlowDiskThreshold || (!lastMove.IsZero() && time.Since(lastMove) < n.cfg.PlacementCooldown) {
			continue
		}
		lastMove = time.Now()
		n.moveOffSlowDisk(med, len(samples))
	}
}

// moveOffSlowDisk hands leadership to another voter.
func (n *Node) moveOffSlowDisk(med time.Duration, samples int) {
	n.log.Warn("this leader's disk is slow: handing leadership to another node", "median_log_write", med.Round(time.Millisecond),
		"writes", samples, "threshold", n.cfg.SlowDiskThreshold, "window", n.cfg.SlowDiskWindow)
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.ElectionTimeout+n.cfg.HeartbeatTimeout)
	defer cancel()
	if err := n.TransferLeadership(ctx, ""); err != nil {
		n.log.Warn("could not hand leadership away from the slow disk", "err", err)
		return
	}
	n.metrics.slowDiskMoves.Inc()
}

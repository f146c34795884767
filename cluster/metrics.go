package cluster

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/fsm"
)

// nodeMetrics are the node's metrics besides raft's own (which raft
// reports through go-metrics): histograms observed as things happen, and
// a collector that reads the rest off the node when scraped.
type nodeMetrics struct {
	batchSize      prometheus.Observer
	snapDuration   *prometheus.HistogramVec // by op: persist, restore
	snapSize       *prometheus.HistogramVec
	snapFailures   *prometheus.CounterVec
	leaderChange   prometheus.Counter
	propose        *prometheus.HistogramVec // by outcome: applied, refused, failed
	batchWait      prometheus.Observer      // a proposal's wait for its batch to leave
	placementMoves prometheus.Counter
	placementHeld  prometheus.Counter
	slowDiskMoves  prometheus.Counter
	logSync        prometheus.Observer // a sync of the segment log files
	durableWait    prometheus.Observer // a follower's acceptance held for the leader's sync
	// connRefused counts the cluster port's refused connections by reason.
	connRefused *prometheus.CounterVec
}

// newNodeMetrics registers the metrics observed as things happen; the
// node registers its statusCollector once it is open.
func newNodeMetrics(reg prometheus.Registerer) *nodeMetrics {
	batch := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "raftcat_group_commit_batch_size",
		Help: "Commands per group-commit batch: one log write and one AppendEntries per follower (its count is the batches sent).", Buckets: prometheus.ExponentialBuckets(1, 2, 9)})
	m := &nodeMetrics{batchSize: batch,
		snapDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raftcat_snapshot_duration_seconds",
			Help: "Time to persist a raft snapshot of the state, or to restore one.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"op"}),
		snapSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raftcat_snapshot_size_bytes",
			Help: "Size of the snapshots persisted or restored.", Buckets: prometheus.ExponentialBuckets(1024, 4, 12)}, []string{"op"}),
		snapFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftcat_snapshot_failures_total",
			Help: "Snapshots that could not be persisted or restored."}, []string{"op"}),
		leaderChange: prometheus.NewCounter(prometheus.CounterOpts{Name: "raftcat_raft_leader_changes_total",
			Help: "Changes of leader this node observed (including to no leader)."}),
	}
	m.propose = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raftcat_propose_duration_seconds",
		Help:    "Time from proposing a command on the leader to its result (group-commit wait, log write, replication, apply), by outcome: applied, refused (the state machine said no) or failed (no result).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"outcome"})
	wait := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "raftcat_group_commit_wait_seconds",
		Help:    "Time a proposal waited on the leader for its group-commit batch to leave (or to be answered without a log entry).",
		Buckets: prometheus.ExponentialBuckets(0.00001, 2.5, 14)})
	m.batchWait = wait
	m.placementMoves, m.placementHeld = newPlacementMetrics()
	m.slowDiskMoves = prometheus.NewCounter(prometheus.CounterOpts{Name: "raftcat_slow_disk_moves_total",
		Help: "Leadership transfers this node made, as the leader, because its own log writes and syncs were slow (median over a window above the threshold)."})
	logSync := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "raftcat_raft_log_sync_seconds",
		Help:    "Time of one sync of the raft log's segment files (--raft-log-store segments). A leader's sync runs while its AppendEntries are out; a follower's is part of its answer.",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 14)})
	durableWait := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "raftcat_raft_leader_sync_wait_seconds",
		Help:    "Time a follower's acceptance of entries waited on the leader for the leader's own sync of them, before raft counted it towards a commit.",
		Buckets: prometheus.ExponentialBuckets(0.00001, 2.5, 14)})
	m.logSync, m.durableWait = logSync, durableWait
	m.connRefused = newRefusedCounter()
	for _, op := range []string{snapPersist, snapRestore} { // shown at zero from the start
		m.snapFailures.WithLabelValues(op)
		m.snapDuration.WithLabelValues(op)
		m.snapSize.WithLabelValues(op)
	}
	reg.MustRegister(batch, m.snapDuration, m.snapSize, m.snapFailures, m.leaderChange, m.propose, wait, m.placementMoves, m.placementHeld, m.slowDiskMoves, logSync, durableWait, m.connRefused)
	return m
}

// Snapshot operations, the op label.
const (
	snapPersist = "persist"
	snapRestore = "restore"
)

// proposed records one proposal that began at start.
func (m *nodeMetrics) proposed(start time.Time, res fsm.Result, err error) {
	outcome := "applied"
	switch {
	case err != nil:
		outcome = "failed"
	case res.Err != nil:
		outcome = "refused"
	}
	m.propose.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
}

// snapshotDone records one persisted or restored snapshot.
func (m *nodeMetrics) snapshotDone(op string, start time.Time, size int64, err error) {
	if err != nil {
		m.snapFailures.WithLabelValues(op).Inc()
		return
	}
	m.snapDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	m.snapSize.WithLabelValues(op).Observe(float64(size))
}

// statusCollector reads the node's raft, membership, group-commit, read
// and state-machine figures when scraped.
type statusCollector struct{ n *Node }

var (
	descTerm         = desc("raftcat_raft_term", "The raft term this node is in.")
	descCommitIndex  = desc("raftcat_raft_commit_index", "The highest log index this node knows to be committed.")
	descAppliedIndex = desc("raftcat_raft_applied_index", "The highest log index this node's state reflects.")
	descLastIndex    = desc("raftcat_raft_last_log_index", "The last index in this node's raft log.")
	descSnapIndex    = desc("raftcat_raft_last_snapshot_index", "The index of this node's newest raft snapshot.")
	descApplyLag     = desc("raftcat_raft_apply_lag_entries", "Committed entries this node has not applied yet.")
	descState        = desc("raftcat_raft_state", "1 for the raft state this node is in.", "state")
	descHasLeader    = desc("raftcat_raft_has_leader", "1 if this node knows a leader.")
	descLastContact  = desc("raftcat_raft_last_contact_seconds", "Time since this follower last heard from the leader (0 on the leader; absent before the first contact).")
	descVoters       = desc("raftcat_cluster_voters", "Voters in the raft configuration.")
	descGossip       = desc("raftcat_cluster_gossip_members", "Nodes gossip knows, by status.", "status")
	descHealthy      = desc("raftcat_autopilot_healthy", "1 if autopilot finds every voter healthy (reported by the leader only).")
	descTolerance    = desc("raftcat_autopilot_failure_tolerance", "Voters that may fail without losing the quorum (reported by the leader only).")
	descFollowerLag  = desc("raftcat_raft_follower_lag_entries", "Entries of the leader's log a server has not stored yet (reported by the leader only).", "server")
	descProposals    = desc("raftcat_group_commit_proposals_total", "Commands proposed through this node's group commit.")
	descNoLog        = desc("raftcat_group_commit_answered_without_log_total", "Proposals answered from the applied state without a log entry (a version already taken, a replay).")
	descReads        = desc("raftcat_linearizable_reads_total", "Linearizable reads, by how leadership was confirmed: under the read lease, or by a quorum round.", "via")
	descCommands     = desc("raftcat_fsm_commands_applied_total", "Commands this node's state machine applied.")
	descRestores     = desc("raftcat_snapshot_restores_total", "Snapshots this node restored (installed from the leader, or a backup).")
	descDeferred     = desc("raftcat_raft_log_deferred_writes_total", "Writes of this node's raft log that returned before their sync: the leader's, whose sync runs while its AppendEntries are out (--raft-log-store segments).")
	descHalted       = desc("raftcat_fsm_halted", "1 if this node halted on a log entry it cannot apply.")
	descDiskFailed   = desc("raftcat_disk_failed", "1 if this node halted because its disk failed a write or a sync of the raft log or stable store (the process then exits).")
	descDiskFull     = desc("raftcat_disk_full", "1 while this node refuses writes because its data directory's disk is (nearly) full.")
	descDiskFree     = desc("raftcat_disk_free_bytes", "Free space of the data directory's filesystem at the last check (every second).")
	descObjects      = desc("raftcat_fsm_objects", "Objects in the catalog's state, by kind.", "kind")
	descTables       = desc("raftcat_fsm_tables", "Tables in the catalog's state, by format.", "format")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// Describe sends nothing: the collector is unchecked, as the series it
// reports depend on the node's role.
func (c *statusCollector) Describe(chan<- *prometheus.Desc) {}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.n.Status()
	m := constMetrics{ch}
	c.collectRaft(m, s)
	c.collectMembers(m, s)
	c.collectLeader(m, s.LastIndex)
	m.counter(descProposals, s.GroupCommit.Proposals)
	m.counter(descNoLog, s.GroupCommit.AnsweredWithoutLog)
	m.counter(descReads, s.Reads.Lease, "lease")
	m.counter(descReads, s.Reads.QuorumRounds, "quorum")
	m.counter(descCommands, s.CommandsApplied)
	m.counter(descRestores, s.SnapshotRestores)
	if c.n.segments != nil {
		m.counter(descDeferred, c.n.segments.Stats().DeferredWrites)
	}
	_, halted := c.n.fsm.Halted()
	m.gauge(descHalted, boolValue(halted))
	m.gauge(descDiskFailed, boolValue(c.n.disk.failed() != nil))
	m.gauge(descDiskFull, boolValue(c.n.disk.full.Load()))
	if free := c.n.disk.free.Load(); free >= 0 {
		m.gauge(descDiskFree, float64(free))
	}
	c.collectCounts(m)
}

// constMetrics sends metrics made at collection time.
type constMetrics struct{ ch chan<- prometheus.Metric }

func (m constMetrics) gauge(d *prometheus.Desc, v float64, labels ...string) {
	m.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (m constMetrics) counter(d *prometheus.Desc, v uint64, labels ...string) {
	m.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

// collectRaft reports the node's raft state and position.
func (c *statusCollector) collectRaft(m constMetrics, s Status) {
	m.gauge(descTerm, float64(s.Term))
	m.gauge(descCommitIndex, float64(s.CommitIndex))
	m.gauge(descAppliedIndex, float64(s.AppliedIndex))
	m.gauge(descLastIndex, float64(s.LastIndex))
	m.gauge(descSnapIndex, float64(s.LastSnapshotIndex))
	m.gauge(descApplyLag, float64(s.CommitIndex-min(s.CommitIndex, s.AppliedIndex)))
	for _, st := range []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown} {
		m.gauge(descState, boolValue(s.State == st.String()), st.String())
	}
	m.gauge(descHasLeader, boolValue(s.LeaderID != ""))
	if s.LastContactMs >= 0 { // -1: never heard from a leader
		m.gauge(descLastContact, float64(s.LastContactMs)/1000)
	}
}

// collectMembers reports the raft configuration's voters and gossip's
// members by status.
func (c *statusCollector) collectMembers(m constMetrics, s Status) {
	voters := 0
	for _, mb := range s.Members {
		voters += int(boolValue(mb.Voter))
	}
	m.gauge(descVoters, float64(voters))
	gossip := map[string]int{StatusAlive: 0, StatusSuspect: 0, StatusFailed: 0, StatusLeft: 0}
	for _, g := range s.Gossip {
		gossip[g.Status]++
	}
	for st, k := range gossip {
		m.gauge(descGossip, float64(k), st)
	}
}

// collectLeader reports autopilot's view, which only the leader has.
func (c *statusCollector) collectLeader(m constMetrics, lastIndex uint64) {
	h := c.n.pilot.health()
	if h == nil || !c.n.IsLeader() {
		return
	}
	m.gauge(descHealthy, boolValue(h.Healthy))
	m.gauge(descTolerance, float64(h.FailureTolerance))
	for id, srv := range h.Servers {
		m.gauge(descFollowerLag, float64(lastIndex-min(lastIndex, srv.Stats.LastIndex)), string(id))
	}
}

// collectCounts reports the state's objects by kind and tables by
// format; the formats raftcat serves are reported at 0 while they have no
// table, other formats (UC REST's CSV, PARQUET...) once they have one.
func (c *statusCollector) collectCounts(m constMetrics) {
	objects, tables := c.n.ObjectCounts()
	for _, f := range []string{fsm.FormatDelta, fsm.FormatIceberg, fsm.FormatLance} {
		if _, ok := tables[f]; !ok {
			m.gauge(descTables, 0, f)
		}
	}
	for kind, n := range objects {
		m.gauge(descObjects, float64(n), kind)
	}
	for format, n := range tables {
		m.gauge(descTables, float64(n), format)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/bbolt"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/dirsync"
	"github.com/raftcat/raftcat/internal/raftlog"
	"github.com/raftcat/raftcat/internal/statecount"
)

// Node is one member of a raftcat cluster.
type Node struct {
	cfg     Config
	lock    *dirLock // the data directory, held while the node runs
	log     *slog.Logger
	machine *fsm.Machine
	fsm     *machineFSM
	raft    *raft.Raft
	raftRef atomic.Pointer[raft.Raft] // raft, for its own goroutines (the log store's deferLogSync)
	group   *groupCommit
	reads   *readIndex
	// placement counts where the requests the leader serves come in.
	placement placement
	// sawOtherLeader is set once this node has seen another node lead.
	sawOtherLeader atomic.Bool

	digestMu  sync.Mutex // StateDigest's cache: the digest of one state
	digestOf  *fsm.State
	digest    string
	store     *raftboltdb.BoltStore // the stable store, and the log store with LogStoreBoltDB
	stable    stableWrites          // the stable store as raft uses it: checksummed
	wal       *walStore             // the log store with LogStoreWAL
	segments  *raftlog.Store        // the log store with LogStoreSegments
	disk      *disk                 // the data directory's free space and failures
	latency   diskLatency           // the log's writes and syncs, timed (slowdisk.go)
	logs      raft.LogStore         // the log store in use
	snaps     raft.SnapshotStore
	trans     *raft.NetworkTransport
	port      *streamLayer // the cluster port: raft's stream layer and peer HTTP
	lease     *readLease
	leaders   leaderLog
	leaderCh  chan raft.Observation
	leaderObs *raft.Observer
	counts    statecount.Counter // objects by kind and tables by format
	metrics   *nodeMetrics
	ml        *memberlist.Memberlist
	gossip    *gossip
	pilot     *pilot
	hlog      hclog.Logger
	// gossipAddr is read once: memberlist mutates its local node in place.
	gossipAddr string

	// removed holds the boot ids of nodes this leader removed, so that
	// reconcile does not add them back while that process still runs.
	removedMu sync.Mutex
	removed   map[string]bool
	// notAdmitted holds, by node id, until when a member whose cluster
	// port failed admission is left alone (leader loop only).
	notAdmitted map[string]time.Time
	// done is closed when the node has stopped for good: shut down, or
	// removed from the cluster (it then leaves gossip by itself).
	done     chan struct{}
	doneOnce sync.Once

	// readyTerm is the term in which this node, as leader, has applied its
	// own first entry; linearizable reads are served only from then on.
	readyTerm atomic.Uint64

	stop     chan struct{}
	wg       sync.WaitGroup
	shutOnce sync.Once
}

// Open starts a node: raft with its on-disk stores, then gossip, then the
// background loops that bootstrap, join and reconcile membership.
func Open(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("component", "cluster"), machine: fsm.NewMachine(), stop: make(chan struct{}),
		removed: map[string]bool{}, done: make(chan struct{})}
	reg := cfg.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	n.metrics = newNodeMetrics(reg)
	n.fsm = newMachineFSM(n.machine, cfg.Logger.With("component", "fsm"), cfg.DataDir)
	n.fsm.metrics = n.metrics
	if err := n.loadSkips(); err != nil {
		return nil, err
	}
	// The free space is read from the data directory, so it must exist
	// first; it is made durably, as the directories under it are.
	if err := dirsync.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	n.lock = lock
	n.disk = newDisk(cfg.DataDir, cfg.MinFreeDisk)
	if _, _, err := n.disk.check(); err != nil {
		n.closeStores()
		return nil, fmt.Errorf("read the free space of %s: %w", cfg.DataDir, err)
	}
	if err := n.openRaft(); err != nil {
		n.closeStores()
		return nil, err
	}
	if err := n.openGossip(); err != nil {
		n.raft.Shutdown().Error()
		n.closeStores()
		return nil, err
	}
	n.pilot = newPilot(n)
	reg.MustRegister(&statusCollector{n: n})
	n.start(n.bootstrapLoop)
	n.start(n.joinLoop)
	n.start(n.leaderLoop)
	n.start(n.removalWatch)
	n.start(n.recordLeaders)
	n.start(n.diskLoop)
	if cfg.SlowDiskThreshold > 0 {
		n.start(n.slowDiskLoop)
	}
	if cfg.LeaderFollowsClients {
		n.start(n.placementLoop)
	}
	n.log.Info("node started", "node_id", cfg.NodeID, "raft_addr", n.RaftAddr(), "gossip_addr", n.GossipAddr(),
		"bootstrap_expect", cfg.BootstrapExpect, "data_dir", cfg.DataDir)
	return n, nil
}

func (n *Node) start(f func()) {
	n.wg.Add(1)
	go func() { defer n.wg.Done(); f() }()
}

// openLogs opens raft.db (the stable store) and the log store decided
// for the data directory (see resolveLogStore).
func (n *Node) openLogs(dir string) error {
	existing, err := existingLogStore(dir)
	if err != nil {
		return err
	}
	logStore := resolveLogStore(n.cfg.LogStore, existing)
	prealloc := n.cfg.LogPreallocBytes
	if logStore != LogStoreBoltDB || (existing != "" && existing != LogStoreBoltDB) {
		prealloc = 0 // raft.db holds only the stable store (or is refused below)
	}
	if err := preallocateLog(filepath.Join(dir, "raft.db"), prealloc); err != nil {
		return err
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true}})
	if err != nil {
		return fmt.Errorf("open raft log %s: %w", dir, err)
	}
	n.store = store
	n.stable = stableWrites{StableStore: store, failed: n.diskWriteFailed}
	if err := checkStable(n.stable); err != nil {
		return fmt.Errorf("%w. This node cannot know its term or vote: remove it from the cluster "+
			"(raftcat remove-node on a healthy node), clear its data directory and start it again to rejoin "+
			"(docs/operations.md#damaged-data)", err)
	}
	if err := dirsync.Sync(dir); err != nil { // raft.db's name, if bbolt just made it
		return err
	}
	if n.logs, err = n.openLogStore(dir, logStore, existing); err != nil {
		return err
	}
	return nil
}

func (n *Node) openRaft() error {
	dir := filepath.Join(n.cfg.DataDir, "raft")
	// The directories are made durably: a power cut must not take the
	// raft directory, the snapshots or raft.db away with its name.
	if err := dirsync.MkdirAll(filepath.Join(dir, "snapshots"), 0o750); err != nil {
		return fmt.Errorf("create raft dir: %w", err)
	}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Info, DisableTime: true,
		Output: &levelFilter{l: n.cfg.Logger.With("component", "raft")}})
	n.hlog = hlog
	if err := n.openLogs(dir); err != nil {
		return err
	}
	files, err := raft.NewFileSnapshotStoreWithLogger(dir, 3, hlog)
	if err != nil {
		return fmt.Errorf("open snapshot store: %w", err)
	}
	snaps := syncedSnapshots{FileSnapshotStore: files, dir: filepath.Join(dir, "snapshots")}
	stream, err := newStreamLayer(n.cfg.RaftBind, n.cfg.RaftAdvertise, portConfig{tls: n.cfg.TLS, log: n.log,
		refused: n.metrics.connRefused, handshake: handshakeTimeout, logEvery: refusalLogWindow})
	if err != nil {
		return fmt.Errorf("raft transport on %s: %w", n.cfg.RaftBind, err)
	}
	n.port = stream
	n.trans = raft.NewNetworkTransportWithLogger(stream, 3, 10*time.Second, hlog)
	n.log.Info("cluster port open", "addr", stream.Addr().String(), "mutual_tls", n.cfg.TLS != nil)
	n.lease = &readLease{self: raft.ServerID(n.cfg.NodeID), now: time.Now, acks: map[raft.ServerID]leaseAck{},
		established: n.established, promise: n.leasePromise, log: n.log}
	if !n.cfg.DisableReadLease {
		n.lease.duration = n.cfg.HeartbeatTimeout / 2
		n.lease.grace = 2*n.cfg.ElectionTimeout + n.lease.duration
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.NodeID)
	rc.Logger = hlog
	rc.HeartbeatTimeout, rc.ElectionTimeout = n.cfg.HeartbeatTimeout, n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = min(rc.LeaderLeaseTimeout, n.cfg.HeartbeatTimeout)
	if n.cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = n.cfg.SnapshotThreshold
	}
	if n.cfg.TrailingLogs > 0 {
		rc.TrailingLogs = n.cfg.TrailingLogs
	}
	if n.cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = n.cfg.SnapshotInterval
	}
	n.snaps = snaps
	// Group commit: proposals queue without a rendezvous with the leader
	// loop, which takes up to MaxAppendEntries of them into one log write
	// (one fsync) and one AppendEntries per follower.
	// raft's legacy telemetry names metrics after peers (unbounded names).
	rc.NoLegacyTelemetry = true
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = n.cfg.MaxAppendEntries
	// Replication reads recent entries from memory, not from bbolt.
	cache, err := raft.NewLogCache(4096, n.logs)
	if err != nil {
		return err
	}
	var inner raft.LogStore = cache
	if wrapLogStore != nil {
		inner = wrapLogStore(cache)
	}
	logs := logWrites{LogStore: inner, failed: n.diskWriteFailed, latency: &n.latency}
	if n.lease.duration > 0 {
		// Before a restart this node may have promised a leader not to
		// vote for anyone else for a while (the leader's read lease);
		// having forgotten that leader, it keeps the promise by staying
		// out of raft until any such lease has run out. A node without
		// raft state waits too: its data may have been wiped.
		n.log.Info("waiting out read leases this node may have granted before it started", "wait", n.lease.duration)
		time.Sleep(n.lease.duration)
	}
	n.raft, err = raft.NewRaft(rc, n.fsm, logs, n.stable, snaps, n.transport())
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	n.raftRef.Store(n.raft)
	n.lease.raft = n.raft
	n.watchLeaders()
	n.reads = newReadIndex(n.raft, n.lease)
	n.group = &groupCommit{raft: n.raft, view: n.fsm.View, reads: n.reads,
		leading: n.established, batchSize: n.metrics.batchSize, wait: n.metrics.batchWait,
		timeout: n.cfg.ApplyTimeout, maxInFlight: max(1, n.cfg.GroupCommitBatches)}
	return nil
}

// transport is raft's transport: the lease's view of AppendEntries, and
// with the segments log store, the leader's deferred log sync.
func (n *Node) transport() raft.Transport {
	lt := &leaseTransport{NetworkTransport: n.trans, lease: n.lease}
	if n.segments == nil {
		return lt
	}
	return &durableTransport{leaseTransport: lt, log: n.segments, wait: n.metrics.durableWait}
}

func (n *Node) openGossip() error {
	mc := memberlist.DefaultLANConfig()
	mc.Name = n.cfg.NodeID
	host, port, err := splitHostPort(n.cfg.GossipBind)
	if err != nil {
		return fmt.Errorf("gossip address %q: %w", n.cfg.GossipBind, err)
	}
	mc.BindAddr, mc.BindPort, mc.AdvertisePort = host, port, port
	if n.cfg.GossipAdvertise != "" {
		ahost, aport, err := splitHostPort(n.cfg.GossipAdvertise)
		if err != nil {
			return fmt.Errorf("gossip advertise address %q: %w", n.cfg.GossipAdvertise, err)
		}
		mc.AdvertiseAddr, mc.AdvertisePort = ahost, aport
	}
	mc.PushPullInterval = 10 * time.Second // small clusters: converge faster after a restart
	mc.Logger = memberlistLogger(n.cfg.Logger.With("component", "gossip"))
	keyring, err := openKeyring(n.cfg.DataDir, n.cfg.GossipKeyFile)
	if err != nil {
		return err
	}
	mc.Keyring, mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = keyring, true, true
	n.gossip = newGossip(nodeMeta{ID: n.cfg.NodeID, RaftAddr: string(n.trans.LocalAddr()),
		HTTPAddr: n.cfg.HTTPAdvertise, BootstrapExpect: n.cfg.BootstrapExpect, Version: Version, Boot: uuid.NewString(),
		LeaseNs: int64(n.lease.duration), Rules: fsm.CurrentRules, DataDir: absDir(n.cfg.DataDir)}, keyring)
	mc.Delegate, mc.Events = n.gossip, n.gossip
	n.ml, err = memberlist.Create(mc)
	if err != nil {
		return fmt.Errorf("start gossip on %s: %w", n.cfg.GossipBind, err)
	}
	ln := n.ml.LocalNode()
	n.gossipAddr = net.JoinHostPort(ln.Addr.String(), fmt.Sprint(ln.Port))
	if fps := keyFingerprints(keyring); len(fps) > 0 {
		n.log.Info("gossip is encrypted", "primary", fps[0], "keys", fps)
	}
	n.start(n.keyringLoop)
	return nil
}

// RaftAddr is the address peers reach this node's raft transport at.
func (n *Node) RaftAddr() string { return string(n.trans.LocalAddr()) }

// GossipAddr is the address peers join this node's gossip at.
func (n *Node) GossipAddr() string { return n.gossipAddr }

// ID is this node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// State returns the current (local, possibly stale) catalog state.
func (n *Node) State() *fsm.State { st, _ := n.fsm.View(); return st }

// Shutdown leaves gossip and stops raft, closing its stores.
func (n *Node) Shutdown() error {
	var err error
	n.shutOnce.Do(func() {
		n.handOverLeadership()
		close(n.stop)
		n.wg.Wait()
		n.pilot.follow(false)
		if lerr := n.ml.Leave(time.Second); lerr != nil {
			n.log.Warn("gossip leave", "err", lerr)
		}
		_ = n.ml.Shutdown()
		err = n.raft.Shutdown().Error()
		n.closeStores()
		n.log.Info("node stopped")
		n.doneOnce.Do(func() { close(n.done) })
	})
	return err
}

// handOverLeadership transfers leadership before a leader stops, so the
// cluster does not wait out an election timeout (a restart then costs
// clients one leader change instead of a failure detection).
func (n *Node) handOverLeadership() {
	if n.raft.State() != raft.Leader {
		return
	}
	n.lease.endForTerm()
	if err := n.raft.LeadershipTransfer().Error(); err != nil {
		n.log.Info("no leadership hand-over before stopping", "reason", err)
		return
	}
	n.log.Info("handed leadership over before stopping")
}

func (n *Node) closeStores() {
	if n.trans != nil {
		_ = n.trans.Close()
	}
	if n.wal != nil {
		_ = n.wal.Close()
	}
	if n.segments != nil {
		_ = n.segments.Close()
	}
	if n.store != nil {
		_ = n.store.Close()
	}
	n.lock.release()
}

// stopped reports whether Shutdown has begun.
func (n *Node) stopped() bool {
	select {
	case <-n.stop:
		return true
	default:
		return false
	}
}

// sleep waits d or until shutdown; it returns false on shutdown.
func (n *Node) sleep(d time.Duration) bool { return waitOrStop(d, n.stop) }

// waitOrStop waits d or until stop closes; it returns false if stop did.
func waitOrStop(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// absDir is a directory's absolute path ("" if it has none).
func absDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	return abs
}

// DataDirs lists the data directories of the nodes gossip knows, this
// node's first: no table location may lie in any of them.
func (n *Node) DataDirs() []string { return n.gossip.dataDirs() }

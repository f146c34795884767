package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/internal/tlsutil"
)

// Config is what a node needs to join the replication layer.
type Config struct {
	NodeID          string
	DataDir         string // raft log, stable store and snapshots live below it
	RaftBind        string // host:port the raft transport listens on (port 0: any)
	RaftAdvertise   string // host:port peers dial; empty: RaftBind
	GossipBind      string // host:port memberlist listens on (port 0: any)
	GossipAdvertise string // empty: GossipBind
	HTTPAdvertise   string // host:port (or URL) peers forward client requests to
	Join            []string
	// TLS, if set, is mutual TLS on the cluster (raft) port: peers must
	// present a node certificate of the cluster CA. Nil: plaintext, the
	// wire format of releases before TLS, which rolling upgrades rely on.
	TLS             *tlsutil.Cluster
	BootstrapExpect int
	// GossipKeyFile holds the base64 of a 16, 24 or 32-byte key: gossip
	// is then encrypted, and only nodes holding a key of the cluster's
	// keyring join it (empty: gossip in plain text). See openKeyring.
	GossipKeyFile string
	// StorageRoot becomes the metastore's managed storage root when this
	// node bootstraps a new cluster.
	StorageRoot string

	HeartbeatTimeout  time.Duration // 0: 1s
	ElectionTimeout   time.Duration // 0: 1s
	ApplyTimeout      time.Duration // 0: 10s
	SnapshotThreshold uint64        // 0: raft default
	TrailingLogs      uint64        // 0: raft default
	SnapshotInterval  time.Duration // 0: raft default
	// MaxAppendEntries caps the entries one log write and one
	// AppendEntries RPC carry: the group-commit batch (0: 128).
	MaxAppendEntries int
	// DisableReadLease makes every linearizable read take a quorum round,
	// and restarts skip the wait that keeps leases safe (see readLease).
	DisableReadLease bool
	// LogPreallocBytes is the size the raft log file is given, as written
	// zeros, before bbolt opens it, so log writes do not allocate
	// filesystem blocks (0: none).
	LogPreallocBytes int64
	// LogStore is where the raft log is kept: LogStoreAuto ("" too: the
	// store the data directory has, segment files for a new one),
	// LogStoreSegments, LogStoreBoltDB or LogStoreWAL.
	LogStore string
	// GroupCommitBatches is how many batches of proposals may be in raft
	// at once; proposals arriving meanwhile wait to leave together (0: 1).
	GroupCommitBatches int

	// LeaderFollowsClients moves leadership to the node where nearly all
	// requests that need the leader come in (see placement). Every
	// PlacementWindow (0: 10s), the leader moves when at least
	// PlacementMinRequests (0: 1000) requests came in and 90% of them at
	// one follower; a leader that took over from another, or whose own
	// move failed, waits PlacementCooldown (0: 5m) first.
	LeaderFollowsClients bool
	PlacementWindow      time.Duration
	PlacementCooldown    time.Duration
	PlacementMinRequests int

	// DeadServerThreshold is how long gossip must report a server failed
	// before autopilot removes it (0: never remove automatically).
	DeadServerThreshold time.Duration
	// MinQuorum is the fewest voters autopilot leaves (0: BootstrapExpect).
	MinQuorum int

	// MinFreeDisk is the free space in DataDir below which the node, as
	// leader, refuses writes (0: DefaultMinFreeDisk; negative: never).
	// DiskCheckInterval is how often it is read (0: 1s).
	MinFreeDisk       int64
	DiskCheckInterval time.Duration
	// SlowDiskThreshold is the median duration of the leader's log writes
	// and syncs over SlowDiskWindow beyond which it hands leadership to
	// another voter (0: 100ms; negative: never). SlowDiskWindow 0: 10s.
	SlowDiskThreshold time.Duration
	SlowDiskWindow    time.Duration

	Logger *slog.Logger
	// Metrics is where the node registers its metrics (nil: nowhere); one
	// registry per node opened, as nothing is unregistered on Shutdown.
	Metrics prometheus.Registerer
}

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("node id is required"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data dir is required"))
	}
	if c.LogStore != "" && !slices.Contains(LogStores, c.LogStore) {
		errs = append(errs, fmt.Errorf("log store %q: want %s", c.LogStore, strings.Join(LogStores, " or ")))
	}
	if c.BootstrapExpect < 1 {
		errs = append(errs, fmt.Errorf("bootstrap-expect must be at least 1, got %d", c.BootstrapExpect))
	}
	for name, addr := range map[string]string{"raft address": c.RaftBind, "gossip address": c.GossipBind} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", name, addr, err))
		}
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = time.Second
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = time.Second
	}
	if c.MaxAppendEntries == 0 {
		c.MaxAppendEntries = 128
	}
	if c.ApplyTimeout == 0 {
		c.ApplyTimeout = 10 * time.Second
	}
	if c.MinFreeDisk == 0 {
		c.MinFreeDisk = DefaultMinFreeDisk
	}
	if c.DiskCheckInterval <= 0 {
		c.DiskCheckInterval = time.Second
	}
	if c.SlowDiskThreshold == 0 {
		c.SlowDiskThreshold = defaultSlowDiskThreshold
	}
	if c.SlowDiskWindow <= 0 {
		c.SlowDiskWindow = defaultSlowDiskWindow
	}
	if c.MinQuorum == 0 {
		c.MinQuorum = c.BootstrapExpect
	}
	c.placementDefaults()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return errors.Join(errs...)
}

// placementDefaults fills the placement policy's zero settings.
func (c *Config) placementDefaults() {
	if c.PlacementWindow <= 0 {
		c.PlacementWindow = defaultPlacementWindow
	}
	if c.PlacementCooldown <= 0 {
		c.PlacementCooldown = defaultPlacementCooldown
	}
	if c.PlacementMinRequests <= 0 {
		c.PlacementMinRequests = defaultPlacementMinRequests
	}
}

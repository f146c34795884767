package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/logging"
	"github.com/raftcat/raftcat/internal/relay"
	"github.com/raftcat/raftcat/storage"
)

// Config is everything `raftcat serve` is configured with.
type Config struct {
	NodeID           string
	DataDir          string
	HTTPAddr         string
	HTTPAdvertise    string
	RaftAddr         string
	RaftAdvertise    string
	GossipAddr       string
	GossipAdvertise  string
	Join             string
	BootstrapExpect  int
	GossipKeyFile    string
	StorageRoot      string
	LogLevel         string
	LogFormat        string
	MetricsAddr      string
	MaxBodyBytes     int64
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration

	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	MaxAppendEntries  int
	LogPreallocMiB    int64
	MinFreeDiskMiB    int64
	SlowDisk          time.Duration
	RaftLogStore      string
	ReadLease         bool
	FollowClients     bool
	FollowerReads     bool
	GroupCommit       int
	LeaveOnTerminate  bool
	DeadServerAfter   time.Duration
	MinQuorum         int
	Pprof             bool
	HTTPReadTimeout   time.Duration
	HTTPIdleTimeout   time.Duration
	RelayFrameTimeout time.Duration

	Credentials storage.StaticCredentials
	ReadOnly    storage.StaticCredentials // keys vended for reading only
	Objects     storage.BlobOptions

	SharingEndpoint      string
	SharingURLTTL        time.Duration
	SharingTokenLifetime time.Duration
	SharingCacheMiB      int64

	Auth AuthConfig
	TLS  TLSConfig
}

// bindFlags registers every serve flag; each can also be set through the
// RAFTCAT_<NAME> environment variable (dashes become underscores).
func (c *Config) bindFlags(fs *flag.FlagSet) {
	host, _ := os.Hostname()
	fs.StringVar(&c.NodeID, "node-id", host, "unique, stable id of this node (default: the hostname)")
	fs.StringVar(&c.DataDir, "data-dir", "./raftcat-data", "directory for the raft log, snapshots and local state")
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:8080", "address the HTTP API listens on")
	fs.StringVar(&c.HTTPAdvertise, "http-advertise", "", "HTTP address other nodes forward requests to (default: --http-addr)")
	fs.StringVar(&c.RaftAddr, "raft-addr", "127.0.0.1:8300", "address the raft transport listens on")
	fs.StringVar(&c.RaftAdvertise, "raft-advertise", "", "raft address peers dial (default: --raft-addr)")
	fs.StringVar(&c.GossipAddr, "gossip-addr", "127.0.0.1:8301", "address gossip (memberlist, TCP and UDP) listens on")
	fs.StringVar(&c.GossipAdvertise, "gossip-advertise", "", "gossip address peers reach (default: --gossip-addr)")
	fs.StringVar(&c.Join, "join", "", "comma-separated gossip addresses of peers to join")
	fs.StringVar(&c.GossipKeyFile, "gossip-key-file", "", "file holding the base64 of a 16, 24 or 32-byte key ('raftcat gossip keygen' prints one): gossip is encrypted, and only nodes holding a key of the cluster's keyring join it; rotate keys with 'raftcat gossip keys' (default: gossip in plain text)")
	fs.IntVar(&c.BootstrapExpect, "bootstrap-expect", 1, "number of nodes that form a new cluster; every node gets the same value")
	fs.StringVar(&c.StorageRoot, "storage-root", "", "managed storage root of a new cluster (default: file://<absolute data dir>/warehouse)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log line format: text (key=value) or json (one object per line); lines about a request carry its request_id")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics (GET /metrics) on this address only, e.g. 127.0.0.1:9090, instead of on the HTTP listener (default: on --http-addr)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", 8<<20, "largest request body accepted; larger ones get 413")
	fs.DurationVar(&c.HeartbeatTimeout, "raft-heartbeat-timeout", time.Second, "time without leader contact before a follower starts an election")
	fs.DurationVar(&c.ElectionTimeout, "raft-election-timeout", time.Second, "time a candidate waits for votes")
	fs.Uint64Var(&c.SnapshotThreshold, "snapshot-threshold", 8192, "take a raft snapshot once this many log entries were written since the last one")
	fs.DurationVar(&c.SnapshotInterval, "snapshot-interval", 2*time.Minute, "how often to check whether a snapshot is due")
	fs.IntVar(&c.MaxAppendEntries, "raft-max-append-entries", 128, "group commit: most log entries written with one fsync and sent in one AppendEntries (1..1024)")
	fs.BoolVar(&c.FollowerReads, "follower-reads", false, "a follower answers linearizable reads (GET, HEAD) itself once it has applied the leader's read index, which it asks for once per round of reads: reads spread over the nodes, but each waits for the follower to learn that the index is committed (about one replication round); off: followers forward reads to the leader")
	fs.BoolVar(&c.FollowClients, "leader-follows-clients", true, "move leadership to a follower at which at least 90% of the leader's requests came in over 10 s (at least 1,000 of them), so that clients talking to that node skip the relay hop; a leader that took over from another, or whose own move failed, moves nothing for 5 minutes")
	fs.BoolVar(&c.ReadLease, "read-lease", true, "the leader answers linearizable reads without a quorum round while a quorum acknowledged it within half the heartbeat timeout (a node waits that long before joining raft; no lease while a voter gossips a shorter heartbeat timeout or leases off)")
	fs.StringVar(&c.RaftLogStore, "raft-log-store", cluster.LogStoreAuto, "where the raft log is kept: segments (segment files in raft/segments, one write and one data flush per batch of entries; the leader flushes while its AppendEntries are out), boltdb (in raft/raft.db with the stable store, two fsyncs per write), wal (raft-wal segment files in raft/wal; raft-wal v0.4.0 can fail to reopen a log after the process was killed, see docs/configuration.md) or auto (the store the data directory already has; segments for a new one); fixed for a data directory once it holds a log")
	fs.Int64Var(&c.LogPreallocMiB, "raft-log-prealloc-mib", 64, "with the raft log in raft.db (--raft-log-store boltdb): size in MiB the file is given up front, as written zeros, so log writes fsync data only, not filesystem allocations (0: none)")
	fs.Int64Var(&c.MinFreeDiskMiB, "min-free-disk-mib", cluster.DefaultMinFreeDisk>>20, "as leader, refuse writes (507 Insufficient Storage, nothing changed) while the data directory's filesystem has less than this many MiB free; writes resume by themselves once space is freed (0: refuse only after a write met a full disk)")
	fs.DurationVar(&c.SlowDisk, "slow-disk-threshold", 100*time.Millisecond, "a leader whose raft log writes and syncs take longer than this (their median over 10 s) hands leadership to another voter, at most once per 5 minutes (0: never)")
	fs.IntVar(&c.GroupCommit, "group-commit-batches", 1, "batches of proposals in raft at once; proposals arriving meanwhile wait and share the next batch's log write and fsync (1..64)")
	fs.Uint64Var(&c.TrailingLogs, "trailing-logs", 10240, "log entries kept after a snapshot, so lagging followers catch up without a full snapshot")
	fs.StringVar(&c.Credentials.S3AccessKeyID, "s3-access-key-id", "", "S3 access key vended for s3:// table locations (prefer the environment variable)")
	fs.StringVar(&c.Credentials.S3SecretAccessKey, "s3-secret-access-key", "", "S3 secret key vended with --s3-access-key-id (prefer the environment variable)")
	fs.StringVar(&c.Credentials.S3SessionToken, "s3-session-token", "", "S3 session token vended with the S3 keys, if any")
	fs.StringVar(&c.ReadOnly.S3AccessKeyID, "s3-read-access-key-id", "", "S3 access key vended for reading only (to callers with SELECT but not MODIFY, with --auth=token); without it they get --s3-access-key-id")
	fs.StringVar(&c.ReadOnly.S3SecretAccessKey, "s3-read-secret-access-key", "", "S3 secret key vended with --s3-read-access-key-id")
	fs.StringVar(&c.ReadOnly.S3SessionToken, "s3-read-session-token", "", "S3 session token vended with the read-only S3 keys, if any")
	fs.StringVar(&c.Credentials.GCSOAuthToken, "gcs-oauth-token", "", "OAuth token vended for gs:// table locations")
	fs.StringVar(&c.Credentials.AzureSASToken, "azure-sas-token", "", "SAS token vended for abfs(s):// table locations")
	fs.DurationVar(&c.Credentials.TTL, "credential-ttl", time.Hour, "validity declared on vended credentials")
	fs.StringVar(&c.Objects.S3Endpoint, "s3-endpoint", "", "endpoint of the S3 API the catalog itself reads s3:// table files through, for an S3-compatible server (e.g. http://127.0.0.1:7070; default: AWS's endpoint for the region). Its keys come from the AWS SDK's standard chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web identity, instance role), not from the vended --s3-* keys")
	fs.BoolVar(&c.Objects.S3PathStyle, "s3-path-style", false, "address S3 buckets path-style (<endpoint>/<bucket>/<key>) rather than virtual-hosted (<bucket>.<endpoint>/<key>); most S3-compatible servers need it")
	fs.StringVar(&c.Objects.S3Region, "s3-region", "", "region the catalog's own S3 requests are signed for (default: AWS_REGION or the AWS profile's, else us-east-1)")
	fs.DurationVar(&c.DeadServerAfter, "dead-server-threshold", 24*time.Hour, "remove a server once gossip has reported it failed this long (0: never remove automatically)")
	fs.IntVar(&c.MinQuorum, "min-quorum", 0, "automatic removal never leaves fewer voters than this (default: --bootstrap-expect)")
	fs.BoolVar(&c.Pprof, "pprof", false, "serve Go's profiler (net/http/pprof) under /debug/pprof/ on the HTTP listener; unauthenticated, so only where that listener is private")
	fs.DurationVar(&c.HTTPReadTimeout, "http-read-timeout", httpapi.DefaultReadTimeout, "longest time to read one request, headers and body; a client that sends less than it announced is cut off then (backup uploads are exempt)")
	fs.DurationVar(&c.HTTPIdleTimeout, "http-idle-timeout", httpapi.DefaultIdleTimeout, "how long a kept-alive connection may wait for its next request")
	fs.DurationVar(&c.RelayFrameTimeout, "relay-frame-timeout", relay.DefaultFrameTimeout, "longest time one request relayed from a follower may take to arrive once it started; a peer that stalls mid-request loses the relay connection")
	fs.StringVar(&c.SharingEndpoint, "sharing-endpoint", "", "public URL of the Delta Sharing endpoint that recipients' profiles name and self-served file URLs start with, e.g. https://catalog.example.com/delta-sharing (default: the scheme and host each request arrived with, plus /delta-sharing)")
	fs.DurationVar(&c.SharingURLTTL, "sharing-url-ttl", time.Hour, "how long the file URLs a Delta Sharing query hands out stay valid")
	fs.DurationVar(&c.SharingTokenLifetime, "sharing-token-lifetime", 0, "default lifetime of a recipient's bearer token when the request sets no expiration_time (0: tokens do not expire)")
	fs.Int64Var(&c.SharingCacheMiB, "sharing-cache-mib", 256, "memory bound of the Delta Sharing snapshot cache, in MiB")
	c.Auth.bindFlags(fs)
	c.TLS.bindFlags(fs)
	fs.BoolVar(&c.LeaveOnTerminate, "leave-on-terminate", false, "on SIGTERM, leave the cluster (hand leadership over, get removed) before stopping")
}

// envName is the environment variable for a flag.
func envName(flagName string) string {
	return "RAFTCAT_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// environment variable, if present.
func applyEnv(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// Validate checks the configuration and fills derived defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("--node-id is required (the hostname could not be read)"))
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		errs = append(errs, fmt.Errorf("--data-dir: %w", err))
	}
	c.DataDir = abs
	if c.StorageRoot == "" {
		c.StorageRoot = "file://" + filepath.ToSlash(filepath.Join(abs, "warehouse"))
	}
	if root, err := storage.Normalize(c.StorageRoot); err != nil {
		errs = append(errs, fmt.Errorf("--storage-root: %w", err))
	} else {
		c.StorageRoot = root
	}
	if c.HTTPAdvertise == "" {
		c.HTTPAdvertise = c.HTTPAddr
	}
	for flagName, addr := range map[string]string{"http-addr": c.HTTPAddr, "raft-addr": c.RaftAddr, "gossip-addr": c.GossipAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("--%s %q: %w", flagName, addr, err))
		}
	}
	if host, _, err := net.SplitHostPort(c.HTTPAdvertise); err == nil && (host == "" || net.ParseIP(host).IsUnspecified()) {
		errs = append(errs, fmt.Errorf("--http-advertise %q is not reachable by peers: set it when --http-addr binds all interfaces", c.HTTPAdvertise))
	}
	if c.SlowDisk < 0 {
		errs = append(errs, fmt.Errorf("--slow-disk-threshold must not be negative, got %v", c.SlowDisk))
	}
	if c.MinFreeDiskMiB < 0 || c.MinFreeDiskMiB > 1<<30 {
		errs = append(errs, fmt.Errorf("--min-free-disk-mib must be within 0..%d, got %d", 1<<30, c.MinFreeDiskMiB))
	}
	if c.LogPreallocMiB < 0 || c.LogPreallocMiB > 1<<16 {
		errs = append(errs, fmt.Errorf("--raft-log-prealloc-mib must be within 0..65536, got %d", c.LogPreallocMiB))
	}
	if c.MaxAppendEntries < 1 || c.MaxAppendEntries > 1024 {
		errs = append(errs, fmt.Errorf("--raft-max-append-entries must be within 1..1024, got %d", c.MaxAppendEntries))
	}
	if c.GroupCommit < 1 || c.GroupCommit > 64 {
		errs = append(errs, fmt.Errorf("--group-commit-batches must be within 1..64, got %d", c.GroupCommit))
	}
	if c.BootstrapExpect < 1 {
		errs = append(errs, fmt.Errorf("--bootstrap-expect must be at least 1, got %d", c.BootstrapExpect))
	}
	if (c.Credentials.S3AccessKeyID == "") != (c.Credentials.S3SecretAccessKey == "") {
		errs = append(errs, errors.New("--s3-access-key-id and --s3-secret-access-key go together"))
	}
	if (c.ReadOnly.S3AccessKeyID == "") != (c.ReadOnly.S3SecretAccessKey == "") {
		errs = append(errs, errors.New("--s3-read-access-key-id and --s3-read-secret-access-key go together"))
	}
	if c.ReadOnly.S3AccessKeyID != "" {
		ro := c.ReadOnly
		c.Credentials.ReadOnly = &ro
	}
	if err := checkEndpoint(c.Objects.S3Endpoint); err != nil {
		errs = append(errs, err)
	}
	if c.MinQuorum < 0 || c.DeadServerAfter < 0 {
		errs = append(errs, errors.New("--min-quorum and --dead-server-threshold must not be negative"))
	}
	if c.SnapshotThreshold == 0 {
		errs = append(errs, errors.New("--snapshot-threshold must be at least 1"))
	}
	if c.SnapshotInterval <= 0 {
		errs = append(errs, errors.New("--snapshot-interval must be positive"))
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(cluster.LogStores, c.RaftLogStore) {
		errs = append(errs, fmt.Errorf("--raft-log-store %q: want %s", c.RaftLogStore, strings.Join(cluster.LogStores, " or ")))
	}
	if !slices.Contains(logging.Formats, c.LogFormat) {
		errs = append(errs, fmt.Errorf("--log-format %q: want %s", c.LogFormat, strings.Join(logging.Formats, " or ")))
	}
	if err := c.Auth.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.TLS.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-addr %q: want host:port: %v", c.MetricsAddr, err))
		}
	}
	return errors.Join(errs...)
}

// checkEndpoint accepts an empty --s3-endpoint or an http(s) URL.
func checkEndpoint(ep string) error {
	if ep == "" {
		return nil
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--s3-endpoint %q: want an http:// or https:// URL such as http://127.0.0.1:7070", ep)
	}
	return nil
}

func (c *Config) joinAddrs() []string {
	var out []string
	for _, a := range strings.Split(c.Join, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func (c *Config) clusterConfig(log *slog.Logger, reg prometheus.Registerer) cluster.Config {
	return cluster.Config{NodeID: c.NodeID, DataDir: c.DataDir, RaftBind: c.RaftAddr, RaftAdvertise: c.RaftAdvertise,
		GossipBind: c.GossipAddr, GossipAdvertise: c.GossipAdvertise, HTTPAdvertise: c.HTTPAdvertise,
		Join: c.joinAddrs(), BootstrapExpect: c.BootstrapExpect, GossipKeyFile: c.GossipKeyFile, StorageRoot: c.StorageRoot,
		HeartbeatTimeout: c.HeartbeatTimeout, ElectionTimeout: c.ElectionTimeout, SnapshotThreshold: c.SnapshotThreshold,
		SnapshotInterval: c.SnapshotInterval, TrailingLogs: c.TrailingLogs, MaxAppendEntries: c.MaxAppendEntries, LogStore: c.RaftLogStore, LogPreallocBytes: c.LogPreallocMiB << 20, DisableReadLease: !c.ReadLease, LeaderFollowsClients: c.FollowClients, GroupCommitBatches: c.GroupCommit, DeadServerThreshold: c.DeadServerAfter,
		MinQuorum: c.MinQuorum, MinFreeDisk: minFreeDisk(c.MinFreeDiskMiB), SlowDiskThreshold: orNever(c.SlowDisk), Logger: log, Metrics: reg}
}

// orNever is a duration flag for the cluster package, which reads 0 as
// its default: 0 becomes -1, never.
func orNever(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// minFreeDisk is --min-free-disk-mib in bytes; 0 becomes -1, the cluster
// package's "never", as it reads 0 as its default.
func minFreeDisk(mib int64) int64 {
	if mib == 0 {
		return -1
	}
	return mib << 20
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

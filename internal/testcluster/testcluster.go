// Package testcluster starts real raftcat nodes inside a test process:
// raft over loopback TCP, raft-boltdb files in temp dirs, memberlist
// gossip, and the HTTP API on a real listener. Tests wait on conditions
// (a leader, an applied index), never on fixed sleeps.
package testcluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/admin"
	"github.com/raftcat/raftcat/httpapi/deltaapi"
	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/httpapi/protocols"
	"github.com/raftcat/raftcat/httpapi/sharing"
	"github.com/raftcat/raftcat/httpapi/ui"
	"github.com/raftcat/raftcat/internal/auth"
	"github.com/raftcat/raftcat/internal/logging"
	"github.com/raftcat/raftcat/internal/metrics"
	"github.com/raftcat/raftcat/storage"
)

// Node is one running in-process node.
type Node struct {
	*cluster.Node
	URL  string // http://host:port
	Dir  string
	cfg  cluster.Config
	http string // HTTP listen address
	srv  *http.Server
	api  *httpapi.Server
	up   bool

	leaderWait time.Duration
	creds      storage.StaticCredentials
	objects    *storage.Blobs

	recent         *logging.Recent // the warnings and errors the status page shows
	icebergObjects func(storage.ObjectStore) iceberg.ObjectStore
	sharingURLTTL  time.Duration
	blobOptions    storage.BlobOptions
	followerReads  bool
	adminToken     string
	oidc           *auth.OIDC
	audit          io.Writer
	stopBootstrap  func()
	peers          func(*Node) httpapi.Peers
	wrapHTTP       func(id string, ln net.Listener) net.Listener
}

// Options tune a test cluster.
type Options struct {
	Heartbeat time.Duration // 0: 500ms
	Verbose   bool          // log to stderr (RAFTCAT_TEST_LOG=1 also turns it on)
	// LeaderWait is how long a request waits for a leader before 503 (0: 1s).
	LeaderWait time.Duration
	// Credentials are vended for cloud table locations.
	Credentials storage.StaticCredentials
	// Raft snapshot tuning (0: raft defaults).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// Autopilot dead-server cleanup (0: off) and minimum voters.
	DeadServerThreshold time.Duration
	MinQuorum           int
	// NoReadLease makes every linearizable read take a quorum round.
	NoReadLease bool
	// FollowerReads lets followers answer reads at the leader's read index.
	FollowerReads bool
	// Placement, if set, moves leadership to where the requests come in
	// (cluster.Config.LeaderFollowsClients) with these window and minimum.
	Placement *Placement
	// IcebergObjects wraps the object store the Iceberg catalog writes its
	// metadata files through (nil: the node's own).
	IcebergObjects func(storage.ObjectStore) iceberg.ObjectStore
	// SharingURLTTL is how long Delta Sharing file URLs live (0: an hour).
	SharingURLTTL time.Duration
	// Objects configures the nodes' own access to table storage (an S3
	// endpoint, say).
	Objects storage.BlobOptions
	// LogStore is where the nodes keep their raft log ("": auto, so
	// segment files in the new data directories tests start).
	LogStore string
	// Logger, if set, gives each node its logger (by node id).
	Logger func(id string) *slog.Logger
	// AdminToken, if set, runs the nodes with --auth=token and this
	// admin token (the cluster key derived from it); the admin principal
	// exists once Start returns.
	AdminToken string
	// OIDC, if set, is an external identity provider the nodes accept.
	OIDC *auth.OIDC
	// Audit, if set, receives the nodes' audit logs (by node id).
	Audit func(id string) io.Writer
	// Peers, if set, gives each node, opened but not serving yet, the
	// network its requests to peers go over (httpapi.Config.Peers); it is
	// called again at every restart.
	Peers func(nd *Node) httpapi.Peers
	// HTTPListener, if set, wraps each node's HTTP listener (by node id),
	// to watch what reaches it.
	HTTPListener func(id string, ln net.Listener) net.Listener
	// GossipKey, if set, encrypts the nodes' gossip: each node is started
	// with a key file holding it (see GossipKeyFile).
	GossipKey string
}

// Placement tunes the leadership placement policy for a test.
type Placement struct {
	Window      time.Duration
	MinRequests int
	Cooldown    time.Duration // 0: the default
}

// Start starts n nodes that form one cluster (bootstrap-expect n, every
// node joining the first one's gossip) and waits until every node is ready.
func Start(t testing.TB, n int, opts Options) []*Node {
	t.Helper()
	if opts.Heartbeat == 0 {
		opts.Heartbeat = 500 * time.Millisecond
	}
	if opts.LeaderWait == 0 {
		opts.LeaderWait = time.Second
	}
	nodes := make([]*Node, n)
	var join []string
	for i := range nodes {
		nodes[i] = newNode(t, fmt.Sprintf("node%d", i+1), n, join, opts)
		if i == 0 {
			join = []string{nodes[0].GossipAddr()}
		}
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.Stop()
		}
	})
	WaitReady(t, nodes...)
	if opts.AdminToken != "" {
		for _, nd := range nodes {
			WaitFor(t, 30*time.Second, nd.ID()+" knows the admin", func() bool {
				st, _ := nd.StaleState()
				return st.HasAdmin() && len(st.AuthSigningKeys()) > 0
			})
		}
	}
	return nodes
}

// Add starts one more node, with a new id, that joins the given cluster
// through gossip; bootstrapExpect is what the cluster was started with.
func Add(t testing.TB, nodes []*Node, id string, bootstrapExpect int, opts Options) *Node {
	t.Helper()
	if opts.Heartbeat == 0 {
		opts.Heartbeat = 500 * time.Millisecond
	}
	if opts.LeaderWait == 0 {
		opts.LeaderWait = time.Second
	}
	nd := newNode(t, id, bootstrapExpect, []string{nodes[0].GossipAddr()}, opts)
	t.Cleanup(nd.Stop)
	return nd
}

func newNode(t testing.TB, id string, expect int, join []string, opts Options) *Node {
	t.Helper()
	nd := &Node{Dir: t.TempDir(), http: "127.0.0.1:0", leaderWait: opts.LeaderWait, creds: opts.Credentials,
		icebergObjects: opts.IcebergObjects, sharingURLTTL: opts.SharingURLTTL, blobOptions: opts.Objects, followerReads: opts.FollowerReads,
		recent: logging.NewRecent(0), adminToken: opts.AdminToken, oidc: opts.OIDC, peers: opts.Peers, wrapHTTP: opts.HTTPListener}
	if opts.Audit != nil {
		nd.audit = opts.Audit(id)
	}
	nd.cfg = cluster.Config{NodeID: id, DataDir: nd.Dir,
		RaftBind: "127.0.0.1:0", GossipBind: "127.0.0.1:0", Join: join, BootstrapExpect: expect,
		StorageRoot: "file://" + nd.Dir + "/warehouse", HeartbeatTimeout: opts.Heartbeat,
		ElectionTimeout: opts.Heartbeat, SnapshotThreshold: opts.SnapshotThreshold, SnapshotInterval: opts.SnapshotInterval,
		TrailingLogs: opts.TrailingLogs, DeadServerThreshold: opts.DeadServerThreshold, MinQuorum: opts.MinQuorum,
		DisableReadLease: opts.NoReadLease, Logger: logger(opts.Verbose, nd.recent), LogStore: opts.LogStore}
	if opts.Logger != nil {
		nd.cfg.Logger = opts.Logger(id)
	}
	if opts.GossipKey != "" {
		nd.cfg.GossipKeyFile = filepath.Join(t.TempDir(), "gossip.key")
		if err := os.WriteFile(nd.cfg.GossipKeyFile, []byte(opts.GossipKey+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if p := opts.Placement; p != nil {
		nd.cfg.LeaderFollowsClients, nd.cfg.PlacementWindow, nd.cfg.PlacementMinRequests = true, p.Window, p.MinRequests
		nd.cfg.PlacementCooldown = p.Cooldown
	}
	if err := nd.start(); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	return nd
}

// logger writes to stderr when verbose, and keeps the warnings and
// errors in recent either way.
func logger(verbose bool, recent *logging.Recent) *slog.Logger {
	w, level := io.Discard, slog.LevelError
	if verbose || os.Getenv("RAFTCAT_TEST_LOG") != "" {
		w, level = os.Stderr, slog.LevelInfo
	}
	log, _ := logging.New(w, "text", level, recent)
	return log
}

func (nd *Node) start() error {
	ln, err := net.Listen("tcp", nd.http)
	if err != nil {
		return err
	}
	nd.http = ln.Addr().String()
	nd.URL = "http://" + nd.http
	nd.cfg.HTTPAdvertise = nd.http
	reg := prometheus.NewRegistry()
	nd.cfg.Metrics = reg
	node, err := cluster.Open(nd.cfg)
	if err != nil {
		ln.Close()
		return err
	}
	nd.Node = node
	// Restarts must come back on the same addresses: raft's configuration
	// and peers' gossip state name them.
	nd.cfg.RaftBind, nd.cfg.GossipBind = node.RaftAddr(), node.GossipAddr()
	nd.objects = storage.NewBlobs(nd.blobOptions)
	objects := storage.Instrumented(nd.objects, reg, nd.cfg.StorageRoot)
	hc := httpapi.Config{Logger: nd.cfg.Logger, LeaderWait: nd.leaderWait, DataDir: nd.cfg.DataDir, Metrics: reg,
		FollowerReads: nd.followerReads, Audit: nd.audit}
	if nd.peers != nil {
		hc.Peers, hc.PeersOnly = nd.peers(nd), true
	}
	if err := nd.authConfig(&hc); err != nil {
		ln.Close()
		_ = node.Shutdown()
		return err
	}
	nd.api = httpapi.New(node, hc)
	protocols.Mount(nd.api, node, protocols.Config{Admin: admin.Config{Metrics: metrics.Handler(reg, cluster.Version, nd.cfg.Logger)},
		Delta:   deltaapi.Config{Credentials: nd.creds, Objects: objects},
		Iceberg: iceberg.Config{Objects: nd.icebergStore(objects), Credentials: nd.creds},
		Sharing: sharing.Config{Objects: objects, URLTTL: nd.sharingURLTTL},
		Lance:   lance.Config{Objects: objects, Credentials: nd.creds}, UI: ui.Config{Recent: nd.recent}})
	nd.srv = nd.api.HTTPServer()
	if nd.wrapHTTP != nil {
		ln = nd.wrapHTTP(nd.cfg.NodeID, ln)
	}
	go nd.srv.Serve(nd.api.Listener(ln))
	nd.up = true
	if nd.adminToken != "" {
		nd.stopBootstrap = nd.api.StartBootstrap(nd.adminToken)
	}
	return nil
}

// authConfig sets the authentication of a node started with an admin
// token.
func (nd *Node) authConfig(hc *httpapi.Config) error {
	if nd.adminToken == "" {
		return nil
	}
	a, err := auth.New(auth.Config{Mode: auth.ModeToken, AdminToken: nd.adminToken, OIDC: nd.oidc})
	if err != nil {
		return err
	}
	hc.Auth, hc.Peer = a, auth.NewPeer(auth.DeriveClusterKey(nd.adminToken))
	return nil
}

// icebergStore is the object store the node's Iceberg catalog uses.
func (nd *Node) icebergStore(objects storage.ObjectStore) iceberg.ObjectStore {
	if nd.icebergObjects != nil {
		return nd.icebergObjects(objects)
	}
	return objects
}

// Stop shuts the node down (HTTP, then raft and gossip). Idempotent.
func (nd *Node) Stop() {
	if !nd.up {
		return
	}
	nd.up = false
	if nd.stopBootstrap != nil {
		nd.stopBootstrap()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = nd.api.Shutdown(ctx, nd.srv)
	_ = nd.Node.Shutdown()
	_ = nd.objects.Close()
}

// Restart starts a stopped node again with its data dir and addresses.
func (nd *Node) Restart(t testing.TB, join ...string) {
	t.Helper()
	if len(join) > 0 {
		nd.cfg.Join = join
	}
	if err := nd.start(); err != nil {
		t.Fatalf("restart %s: %v", nd.cfg.NodeID, err)
	}
}

// Handler is the node's HTTP handler, to serve it elsewhere too (over
// TLS, say).
func (nd *Node) Handler() http.Handler { return nd.api.Handler() }

// GossipKeyFile is the gossip key file the node starts with ("": none).
func (nd *Node) GossipKeyFile() string { return nd.cfg.GossipKeyFile }

// Up reports whether the node is running.
func (nd *Node) Up() bool { return nd.up }

// Routes lists every route the node serves.
func (nd *Node) Routes() []*echo.Route { return nd.api.Routes() }

// RuleKind names the access rule a route was registered with ("": none).
func (nd *Node) RuleKind(method, path string) string { return nd.api.RuleKind(method, path) }

// MarkStopped records that the node stopped by itself (it left the
// cluster): Stop and Restart then treat it as down.
func (nd *Node) MarkStopped() {
	<-nd.Done()
	if nd.up {
		nd.up = false
		_ = nd.api.Close(nd.srv)
	}
}

// WaitFor polls cond until it holds or the deadline passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitReady waits until every given node is ready.
func WaitReady(t testing.TB, nodes ...*Node) {
	t.Helper()
	for _, nd := range nodes {
		WaitFor(t, 30*time.Second, nd.ID()+" ready", nd.Ready)
	}
}

// Leader waits for a leader among the running nodes and returns it.
func Leader(t testing.TB, nodes []*Node) *Node {
	t.Helper()
	var leader *Node
	WaitFor(t, 30*time.Second, "a leader", func() bool {
		for _, nd := range nodes {
			if nd.up && nd.IsLeader() && nd.Ready() {
				leader = nd
				return true
			}
		}
		return false
	})
	return leader
}

// Followers returns the running nodes that are not the given leader.
func Followers(nodes []*Node, leader *Node) []*Node {
	var out []*Node
	for _, nd := range nodes {
		if nd != leader && nd.up {
			out = append(out, nd)
		}
	}
	return out
}

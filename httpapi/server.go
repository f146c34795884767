// Package httpapi is the core every HTTP protocol of raftcat plugs into:
// the Echo server, routing requests to the leader and relaying them there,
// binding and stamping, the read and write flows every protocol shares
// (State, Write), and the one error renderer that each protocol gives its
// own mapping. Each protocol (ucrest, deltaapi, admin, ...) lives in its
// own package under this one and registers a route group with Mount; it
// only translates between its wire format and fsm commands and state.
//
// A new protocol is a package here whose Register mounts a Group (its
// prefix, an ErrorMapping covering every fsm.Code, whether its requests
// go to the leader and may be relayed) and adds routes built on State and
// Write, plus one line in package protocols. No other protocol changes.
//
// The core reaches the replicated state through DataPath, which it
// declares; it does not depend on package cluster, only on the leaf
// package clusterapi for the errors the replication layer fails with.
package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/auth"
	"github.com/raftcat/raftcat/internal/logging"
	"github.com/raftcat/raftcat/internal/relay"
)

// DataPath is what serving requests needs from the replication layer:
// proposing commands, reading state at either consistency, knowing the
// leader, and readiness. Cluster operations (status, backups, membership)
// are not part of it; package admin declares those.
type DataPath interface {
	ID() string
	Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, uint64, error)
	LinearizableState(ctx context.Context) (*fsm.State, uint64, error)
	StaleState() (*fsm.State, uint64)
	// ReadIndex is the leader's confirmed commit index (see followerReads);
	// WaitApplied waits until this node has applied an index.
	ReadIndex(ctx context.Context) (uint64, error)
	WaitApplied(ctx context.Context, index uint64) error
	IsLeader() bool
	LeaderHTTPAddr() (string, error)
	Ready() bool
	// NoteEntry tells the leader that a request it serves entered the
	// cluster at node (its own id, or the follower that relayed it).
	NoteEntry(node string)
}

// Config tunes the HTTP layer.
type Config struct {
	MaxBodyBytes int64         // requests above this are refused with 413 (0: 8 MiB)
	LeaderWait   time.Duration // how long a request waits for a leader before 503 (0: 5s)
	Logger       *slog.Logger
	// Metrics is where the server registers its metrics (nil: nowhere);
	// one registry per server.
	Metrics prometheus.Registerer

	// ReadTimeout bounds reading one request, headers and body (0: 60s):
	// a client that announces more than it sends is cut off then. Backup
	// uploads (restore) are exempt. IdleTimeout bounds a kept-alive
	// connection between requests (0: 120s). FrameTimeout bounds one
	// relayed request's arrival on a relay connection (0: 30s).
	ReadTimeout, IdleTimeout, FrameTimeout time.Duration

	// FollowerReads lets followers answer linearizable reads themselves
	// at the leader's read index (see followerReads) instead of
	// forwarding them to the leader.
	FollowerReads bool

	// DataDir is the node's data directory: no table location or storage
	// root may lie inside it.
	DataDir string

	// Auth authenticates callers (nil: every caller is anonymous and may
	// do anything). Peer signs and verifies requests between nodes with
	// the cluster key (nil: forwarded requests carry no identity).
	Auth *auth.Authenticator
	Peer *auth.Peer
	// Audit, if set, receives one JSON line per write and per refused
	// request this node was the entry point of (see audit.go).
	Audit io.Writer
	// AuthFailures limits failed authentications per client address
	// (nil: 20 at once, then one a second).
	AuthFailures *auth.FailureLimiter

	// Peers, if set, is the network between nodes, on whose listener this
	// node serves its peers. With PeersOnly every request to a peer goes
	// over it too, and the client port refuses what only peers send (set
	// it when the client port or the cluster port has TLS: peers then
	// cannot, or must not, use the client port). Otherwise peers send to
	// each other's HTTP ports, in plain HTTP, as releases before it did.
	Peers     Peers
	PeersOnly bool
}

// HTTP server defaults.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
)

// HTTPServer returns the http.Server that serves this API, with its
// timeouts. There is no write timeout: backups stream for as long as they
// take. With Config.Peers, the first call also starts serving peers on
// the cluster port (see servePeers); Shutdown and Close stop that too.
func (s *Server) HTTPServer() *http.Server {
	s.servePeers()
	return s.httpServer(s.Handler())
}

func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout: orDefault(s.cfg.ReadTimeout, DefaultReadTimeout), IdleTimeout: orDefault(s.cfg.IdleTimeout, DefaultIdleTimeout)}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Headers raftcat adds to or reads from requests.
const (
	HeaderIndex       = "X-Raftcat-Index"       // raft index a write was applied at, or a read reflects
	HeaderServedBy    = "X-Raftcat-Served-By"   // node that executed the request
	HeaderForwarded   = "X-Raftcat-Forwarded"   // set on requests a follower forwarded to the leader
	HeaderConsistency = "X-Raftcat-Consistency" // "stale" opts a read into this node's local state
)

// Server is the HTTP front of one node.
type Server struct {
	e       *echo.Echo
	cluster DataPath
	cfg     Config
	log     *slog.Logger
	failLog *slog.Logger // server errors clients provoke at will, throttled
	proxy   *leaderProxy
	reads   *followerReads
	relay   *relay.Server // serves requests followers relay to this node
	peerSrv *http.Server  // serves peers on the cluster port (Config.Peers)
	groups  []Group       // registered with Mount, longest prefix first

	txPlanners map[string]TxPlanner // by operation kind (AddTxPlanner)

	columnSources map[string]ColumnSource // by table format (AddColumnSource)

	rules   map[string]Rule // by "METHOD route", see Routes
	limiter *auth.FailureLimiter
	audit   *auditLog

	metrics    *httpMetrics
	observers  []func(RequestInfo) // see ObserveRequests
	routesOnce sync.Once
	routeSet   map[string]bool // route templates, for the route label
	peersOnce  sync.Once       // see servePeers
}

// New builds the Echo application; it serves no route until protocols
// are mounted on it (see Mount).
func New(c DataPath, cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 8 << 20
	}
	if cfg.LeaderWait <= 0 {
		cfg.LeaderWait = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	log := slog.New(logging.WithRequestIDs(cfg.Logger.Handler()))
	if cfg.AuthFailures == nil {
		cfg.AuthFailures = auth.NewFailureLimiter(1, 20)
	}
	s := &Server{e: echo.New(), cluster: c, cfg: cfg, log: log.With("component", "http"), rules: map[string]Rule{},
		limiter: cfg.AuthFailures, audit: newAuditLog(cfg.Audit)}
	s.failLog = Throttled(s.log, FailureLogInterval, "code", "path")
	s.proxy = newLeaderProxy(s)
	s.relay = &relay.Server{Handler: s.e, MaxFrame: int(cfg.MaxBodyBytes) + 1<<20, FrameTimeout: cfg.FrameTimeout}
	s.peerSrv = s.newPeerServer()
	s.metrics = newHTTPMetrics(cfg.Metrics, s.relay.Stats)
	s.e.HideBanner, s.e.HidePort = true, true
	s.e.HTTPErrorHandler = s.handleError
	s.e.JSONSerializer = plainJSON{}
	s.reads = newFollowerReads(s, cfg.Metrics)
	s.e.Use(requestID, s.requestLog(), s.observe, s.auditRequests, s.recoverPanics(), s.bodyLimit, recordBody, unescapeParams,
		s.authenticate, s.groupToLeader)
	s.rules[http.MethodGet+" "+ReadIndexPath] = PeersOnly()
	s.e.GET(ReadIndexPath, s.serveReadIndex, s.authorize(PeersOnly()))
	return s
}

// Node is the data path this server serves from.
func (s *Server) Node() DataPath { return s.cluster }

// Logger is the server's logger, for protocols to log with.
func (s *Server) Logger() *slog.Logger { return s.log }

// Routes lists every route the mounted protocols serve.
func (s *Server) Routes() []*echo.Route { return s.e.Routes() }

// RelayStats counts the requests followers relayed to this node.
func (s *Server) RelayStats() relay.Stats { return s.relay.Stats() }

// Handler returns the HTTP handler. Relay connections from followers are
// taken over before Echo sees them; the requests they carry then go
// through Echo like any other.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if relay.IsUpgrade(r) {
			s.serveRelay(w, r)
			return
		}
		s.e.ServeHTTP(w, r)
	})
}

// serveRelay takes a relay connection over, if it comes from a peer: on
// the cluster port with Config.Peers, and signed with the cluster key
// when there is one.
func (s *Server) serveRelay(w http.ResponseWriter, r *http.Request) {
	if s.peersOnly() && !viaPeer(r) {
		s.refuseRelay(w, r, "refused a relay connection on the client port: relay connections come over the cluster port", errClientPort)
		return
	}
	if err := s.relayUpgradeAllowed(r); err != nil {
		s.refuseRelay(w, r, "refused a relay connection from a node that cannot prove it is a cluster peer", err)
		return
	}
	s.relay.ServeHTTP(w, r)
}

func (s *Server) refuseRelay(w http.ResponseWriter, r *http.Request, msg string, err error) {
	s.metrics.peerRefusals.Inc()
	s.log.Warn(msg, "remote", r.RemoteAddr, "claimed_node", r.Header.Get(HeaderForwarded), "err", err)
	http.Error(w, "relay: not a cluster peer: "+err.Error(), http.StatusForbidden)
}

// Shutdown stops srv (the server this handler runs in) gracefully. The
// relay connections followers opened to this node drain alongside it:
// requests relayed here finish and are answered (or until ctx ends), and
// followers send the ones not served yet again; srv's own Shutdown does
// not see them (they are taken over). So do peers' other connections on
// the cluster port (Config.Peers). Once no request is served here any
// more, this node's own relay connections to the leader close.
func (s *Server) Shutdown(ctx context.Context, srv *http.Server) error {
	relayDrained, peersDrained := make(chan error, 1), make(chan error, 1)
	go func() { relayDrained <- s.relay.Shutdown(ctx) }()
	go func() { peersDrained <- s.shutdownPeers(ctx) }()
	err := srv.Shutdown(ctx)
	if perr := <-peersDrained; err == nil && perr != nil {
		err = fmt.Errorf("draining peer connections: %w", perr)
	}
	if rerr := <-relayDrained; err == nil && rerr != nil {
		err = fmt.Errorf("draining relay connections: %w", rerr)
	}
	s.proxy.relay.Close()
	return err
}

func (s *Server) shutdownPeers(ctx context.Context) error {
	if s.peerSrv == nil {
		return nil
	}
	return s.peerSrv.Shutdown(ctx)
}

// Close closes srv, and the cluster port's server with Config.Peers, at
// once; requests relayed here still get up to 5 s to be answered before
// the relay connections close.
func (s *Server) Close(srv *http.Server) error {
	err := srv.Close()
	if s.peerSrv != nil {
		_ = s.peerSrv.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.relay.Shutdown(ctx)
	s.proxy.relay.Close()
	return err
}

// bodyLimit refuses oversized bodies with 413 before anything reads them.
func (s *Server) bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if s.streams(c) { // e.g. snapshots stream to disk, whatever their size
			return next(c)
		}
		if r.ContentLength > s.cfg.MaxBodyBytes {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "request body too large")
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, s.cfg.MaxBodyBytes)
		return next(c)
	}
}

// recoverPanics turns a handler's panic into a 500, logged with the
// request's id and the goroutine's stack.
func (s *Server) recoverPanics() echo.MiddlewareFunc {
	return middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.ErrorContext(c.Request().Context(), "request handler panicked", "method", c.Request().Method,
				"path", c.Request().URL.Path, "err", err, "stack", string(stack))
			return err
		}})
}

func (s *Server) requestLog() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURI: true, LogMethod: true, LogLatency: true, LogError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelDebug
			if v.Status >= 500 && v.Status != http.StatusServiceUnavailable {
				level = slog.LevelWarn
			}
			s.log.Log(c.Request().Context(), level, "request", "method", v.Method, "uri", v.URI,
				"status", v.Status, "latency", v.Latency, "forwarded", c.Request().Header.Get(HeaderForwarded) != "")
			return nil
		},
	})
}

// plainJSON writes JSON without HTML escaping ('<' stays '<', as in
// "array<string>"), which is what catalog clients expect.
type plainJSON struct{ echo.DefaultJSONSerializer }

func (plainJSON) Serialize(c echo.Context, i any, indent string) error {
	enc := gojson.NewEncoder(c.Response())
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	return enc.Encode(i)
}

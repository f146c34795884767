// Package httpapi serves raftcat's HTTP protocols through Echo: the Unity
// Catalog REST hierarchy, the UC Delta API, and the admin endpoints. It
// only translates: it binds and validates requests, builds fsm commands,
// and renders results and errors in each protocol's own shape. It reaches
// the replicated state through the Cluster interface it declares.
package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/relay"
	"github.com/raftcat/raftcat/snapshot"
)

// Cluster is what the HTTP layer needs from the replication layer.
type Cluster interface {
	ID() string
	Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, uint64, error)
	LinearizableState(ctx context.Context) (*fsm.State, uint64, error)
	StaleState() (*fsm.State, uint64)
	IsLeader() bool
	LeaderHTTPAddr() (string, error)
	Status() cluster.Status
	Ready() bool

	StateDigest() (uint64, string)
	WriteSnapshot(ctx context.Context, w io.Writer) error
	Restore(ctx context.Context, r io.Reader) (snapshot.Header, error)
	TransferLeadership(ctx context.Context, id string) error
	RemoveServer(ctx context.Context, id string) error
	PrepareLeave(ctx context.Context) error
	Shutdown() error
}

// Config tunes the HTTP layer.
type Config struct {
	MaxBodyBytes int64         // requests above this are refused with 413 (0: 8 MiB)
	LeaderWait   time.Duration // how long a request waits for a leader before 503 (0: 5s)
	Credentials  CredentialVendor
	Logger       *slog.Logger
	Pprof        bool // serve net/http/pprof under /debug/pprof/

	// Objects reads table files for the purged-version replay check (nil:
	// such replays answer "unknown, retry"). Credentials vend what clients
	// get for a location (nil: nothing; they use their ambient ones).
	Objects ObjectReader
}

// ObjectReader reads the table files the catalog itself compares (the
// published and staged commit of a purged-version replay), named by full
// location URL; storage.Blobs is one.
type ObjectReader interface {
	Read(ctx context.Context, location string) ([]byte, error)
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
	cluster Cluster
	cfg     Config
	log     *slog.Logger
	proxy   *leaderProxy
	relay   *relay.Server // serves requests followers relay to this node
}

// New builds the Echo application with every route.
func New(c Cluster, cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 8 << 20
	}
	if cfg.LeaderWait <= 0 {
		cfg.LeaderWait = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{e: echo.New(), cluster: c, cfg: cfg, log: cfg.Logger.With("component", "http")}
	s.proxy = newLeaderProxy(s)
	s.relay = &relay.Server{Handler: s.e, MaxFrame: int(cfg.MaxBodyBytes) + 1<<20}
	s.e.HideBanner, s.e.HidePort = true, true
	s.e.HTTPErrorHandler = s.handleError
	s.e.JSONSerializer = plainJSON{}
	s.e.Use(middleware.Recover(), s.requestLog(), s.bodyLimit)

	s.registerAdmin(s.e)
	if cfg.Pprof {
		registerPprof(s.e)
	}
	api := s.e.Group("/api/2.1/unity-catalog", s.routeToLeader, unescapeParams)
	s.registerUC(api)
	s.registerDelta(api.Group("/delta/v1"))
	return s
}

// Handler returns the HTTP handler. Relay connections from followers are
// taken over before Echo sees them; the requests they carry then go
// through Echo like any other.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if relay.IsUpgrade(r) {
			s.relay.ServeHTTP(w, r)
			return
		}
		s.e.ServeHTTP(w, r)
	})
}

// Shutdown stops srv (the server this handler runs in) gracefully. The
// relay connections followers opened to this node drain alongside it:
// requests relayed here finish and are answered (or until ctx ends), and
// followers send the ones not served yet again; srv's own Shutdown does
// not see them (they are taken over). Once no request is served here any
// more, this node's own relay connections to the leader close.
func (s *Server) Shutdown(ctx context.Context, srv *http.Server) error {
	relayDrained := make(chan error, 1)
	go func() { relayDrained <- s.relay.Shutdown(ctx) }()
	err := srv.Shutdown(ctx)
	if rerr := <-relayDrained; err == nil && rerr != nil {
		err = fmt.Errorf("draining relay connections: %w", rerr)
	}
	s.proxy.relay.Close()
	return err
}

// Close closes srv at once; requests relayed here still get up to 5 s to
// be answered before the relay connections close.
func (s *Server) Close(srv *http.Server) error {
	err := srv.Close()
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
		if r.URL.Path == restorePath { // snapshots stream to disk, whatever their size
			return next(c)
		}
		if r.ContentLength > s.cfg.MaxBodyBytes {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "request body too large")
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, s.cfg.MaxBodyBytes)
		return next(c)
	}
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

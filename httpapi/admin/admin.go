// Package admin serves a node's operational endpoints: liveness and
// readiness (with the load balancers' leader check), the cluster status,
// state digests, backups and their restore, leadership transfer and
// membership changes, gossip key rotation, and optionally Go's profiles.
// Errors are answered {"error": message, "code": status}.
package admin

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/relay"
	"github.com/raftcat/raftcat/snapshot"
)

// Operations are the cluster operations the admin endpoints run, beyond
// the data path the core serves from.
type Operations interface {
	Status() clusterapi.Status
	StateDigest() (uint64, string)
	WriteSnapshot(ctx context.Context, w io.Writer) error
	Restore(ctx context.Context, r io.Reader) (snapshot.Header, error)
	TransferLeadership(ctx context.Context, id string) error
	RemoveServer(ctx context.Context, id string) error
	PrepareLeave(ctx context.Context) error
	Shutdown() error
	// GossipKeys lists the gossip keys by fingerprint, with st's
	// replicated keyring; GossipKeyring is this node's keyring, base64,
	// the primary first (none: gossip is not encrypted).
	GossipKeys(st *fsm.State) clusterapi.GossipKeys
	GossipKeyring() []string
	// FetchStatusWith gives the replication layer the way to ask a peer
	// for its status (autopilot's health checks): this server's.
	FetchStatusWith(f func(ctx context.Context, m clusterapi.Member) (clusterapi.Status, error))
}

// Config configures the admin endpoints.
type Config struct {
	Pprof bool // serve net/http/pprof under /debug/pprof/
	// Metrics, if set, serves GET /metrics (Prometheus text format) on
	// the node's HTTP listener.
	Metrics http.Handler
}

const restorePath = "/v1/cluster/restore"

// Server serves the admin endpoints on a core.
type Server struct {
	core    *httpapi.Server
	cluster httpapi.DataPath
	ops     Operations
	log     *slog.Logger
}

// Register mounts the admin endpoints on the core. They own every path no
// other protocol claims. Requests that need the leader are forwarded to
// it one by one, in plain HTTP exchanges (a snapshot download streams).
func Register(core *httpapi.Server, ops Operations, cfg Config) *Server {
	s := &Server{core: core, cluster: core.Node(), ops: ops, log: core.Logger()}
	ops.FetchStatusWith(core.PeerStatus)
	e := core.Mount(httpapi.Group{Name: "admin", Prefix: "", Errors: errorMapping{}, Streaming: []string{restorePath}})
	s.routes(e)
	if cfg.Pprof {
		registerPprof(e)
	}
	if cfg.Metrics != nil {
		e.GET("/metrics", httpapi.AnyCaller(), echo.WrapHandler(cfg.Metrics))
	}
	return s
}

func (s *Server) routes(e *httpapi.Routes) {
	e.GET("/", httpapi.Public(), index)
	e.GET("/healthz", httpapi.Public(), func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok", "node_id": s.cluster.ID()})
	})
	e.GET("/readyz", httpapi.Public(), func(c echo.Context) error {
		if leader, err := httpapi.BoolParam(c, "leader", true); err != nil {
			return err
		} else if leader {
			return s.leaderCheck(c)
		}
		if !s.cluster.Ready() {
			c.Response().Header().Set("Retry-After", "1")
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready", "node_id": s.cluster.ID()})
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready", "node_id": s.cluster.ID()})
	})
	g := e.Group("/v1/cluster")
	admin := httpapi.AdminOnly()
	g.GET("", admin, s.clusterStatus)
	g.GET("/state-digest", admin, s.stateDigest)
	g.GET("/snapshot", admin, s.saveSnapshot, s.core.ToLeader)
	g.POST("/restore", admin, s.restoreSnapshot)
	g.POST("/transfer-leadership", admin, s.transferLeadership, s.core.ToLeader)
	g.POST("/remove-node", admin, s.removeNode, s.core.ToLeader)
	g.POST("/leave", admin, s.leave)
	g.GET("/gossip-keys", admin, s.listGossipKeys, s.core.ToLeader)
	g.POST("/gossip-keys", admin, httpapi.Write(s.core, s.buildGossipKey, nil, s.gossipKeysAnswer), s.core.ToLeader)
}

// entryPoints are the base paths a node serves, as GET / lists them.
var entryPoints = map[string]string{
	"status_page":         "/ui/",
	"unity_catalog_rest":  "/api/2.1/unity-catalog",
	"unity_catalog_delta": "/api/2.1/unity-catalog/delta/v1",
	"iceberg_rest":        "/api/2.1/unity-catalog/iceberg/v1/config",
	"delta_sharing":       "/delta-sharing",
	"lance_namespace":     "/lance/v1",
	"cluster":             "/v1/cluster",
	"health":              "/healthz",
	"readiness":           "/readyz",
}

// index (GET /) sends a browser to the status page and tells any other
// client where the APIs are.
func index(c echo.Context) error {
	if strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/html") {
		return c.Redirect(http.StatusFound, "/ui/")
	}
	return c.JSON(http.StatusOK, map[string]any{"service": "raftcat", "endpoints": entryPoints})
}

// leaderCheck (GET /readyz?leader) answers 200 only on the leader, once
// it is ready: a load balancer with this check sends every request
// straight to the leader and saves the hop to it that a follower adds.
// Other nodes answer 503 and name the leader; a request they get anyway,
// from a balancer that has not noticed a new leader yet, is still relayed.
func (s *Server) leaderCheck(c echo.Context) error {
	body := map[string]string{"node_id": s.cluster.ID(), "status": "leader"}
	leads := s.cluster.IsLeader()
	if leads && s.cluster.Ready() {
		return c.JSON(http.StatusOK, body)
	}
	body["status"] = "not the leader"
	if leads {
		body["status"] = "leader, not ready yet"
	} else if addr, err := s.cluster.LeaderHTTPAddr(); err == nil {
		body["leader_http_addr"] = addr
	}
	c.Response().Header().Set("Retry-After", "1")
	return c.JSON(http.StatusServiceUnavailable, body)
}

func (s *Server) stateDigest(c echo.Context) error {
	idx, digest := s.ops.StateDigest()
	return c.JSON(http.StatusOK, map[string]any{"node_id": s.cluster.ID(), "applied_index": idx, "digest": digest})
}

// saveSnapshot streams a consistent backup of the whole state.
func (s *Server) saveSnapshot(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderContentType, "application/octet-stream")
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="raftcat.snap"`)
	return s.ops.WriteSnapshot(c.Request().Context(), c.Response())
}

// restoreSnapshot replaces the cluster state with an uploaded backup. The
// body is streamed (to the leader, and there to disk), never held whole.
func (s *Server) restoreSnapshot(c echo.Context) error {
	// A backup uploads for as long as it takes; the read timeout is for
	// requests of bounded size.
	_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Time{})
	if !s.cluster.IsLeader() {
		if c.Request().Header.Get(httpapi.HeaderForwarded) != "" {
			return clusterapi.ErrNotLeader
		}
		return s.core.StreamToLeader(c)
	}
	hdr, err := s.ops.Restore(c.Request().Context(), c.Request().Body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"restored": true, "snapshot_index": hdr.Index, "snapshot_term": hdr.Term})
}

type nodeRequest struct {
	ID string `json:"id"`
}

func (s *Server) transferLeadership(c echo.Context) error {
	var req nodeRequest
	if _, err := httpapi.BindJSON(c, &req); err != nil {
		return err
	}
	if err := s.ops.TransferLeadership(c.Request().Context(), req.ID); err != nil {
		return err
	}
	st := s.ops.Status()
	return c.JSON(http.StatusOK, map[string]any{"leader_id": st.LeaderID})
}

func (s *Server) removeNode(c echo.Context) error {
	var req nodeRequest
	if _, err := httpapi.BindJSON(c, &req); err != nil {
		return err
	}
	if req.ID == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "id is required")
	}
	if err := s.ops.RemoveServer(c.Request().Context(), req.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"removed": req.ID})
}

// leave takes this node out of the cluster gracefully, then stops it.
func (s *Server) leave(c echo.Context) error {
	if err := s.Leave(c.Request().Context()); err != nil {
		return err
	}
	go func() { _ = s.ops.Shutdown() }()
	return c.JSON(http.StatusOK, map[string]any{"left": s.cluster.ID()})
}

// Leave takes this node out of the cluster: leadership is handed over
// first if it leads, then the leader removes it from the configuration.
// The caller stops the node afterwards.
func (s *Server) Leave(ctx context.Context) error {
	if err := s.ops.PrepareLeave(ctx); err != nil {
		return err
	}
	body, _ := json.Marshal(nodeRequest{ID: s.cluster.ID()})
	status, answer, err := s.core.CallLeader(ctx, http.MethodPost, "/v1/cluster/remove-node", body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return echo.NewHTTPError(status, "the leader refused to remove this node: "+string(answer))
	}
	s.log.Info("left the cluster")
	return nil
}

// clusterStatus reports the node's view of the cluster, and the requests
// followers relayed to it.
func (s *Server) clusterStatus(c echo.Context) error {
	return c.JSON(http.StatusOK, struct {
		clusterapi.Status
		Relay relay.Stats `json:"relay"`
	}{s.ops.Status(), s.core.RelayStats()})
}

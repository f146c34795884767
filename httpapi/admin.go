package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/cluster"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/relay"
)

const restorePath = "/v1/cluster/restore"

func (s *Server) registerAdmin(e *echo.Echo) {
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok", "node_id": s.cluster.ID()})
	})
	e.GET("/readyz", func(c echo.Context) error {
		if leader, err := boolParam(c, "leader", true); err != nil {
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
	g.GET("", s.clusterStatus)
	g.GET("/state-digest", s.stateDigest)
	g.GET("/snapshot", s.saveSnapshot, s.routeToLeader)
	g.POST("/restore", s.restoreSnapshot)
	g.POST("/transfer-leadership", s.transferLeadership, s.routeToLeader)
	g.POST("/remove-node", s.removeNode, s.routeToLeader)
	g.POST("/leave", s.leave)
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
	idx, digest := s.cluster.StateDigest()
	return c.JSON(http.StatusOK, map[string]any{"node_id": s.cluster.ID(), "applied_index": idx, "digest": digest})
}

// saveSnapshot streams a consistent backup of the whole state.
func (s *Server) saveSnapshot(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderContentType, "application/octet-stream")
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="raftcat.snap"`)
	return s.cluster.WriteSnapshot(c.Request().Context(), c.Response())
}

// restoreSnapshot replaces the cluster state with an uploaded backup. The
// body is streamed (to the leader, and there to disk), never held whole.
func (s *Server) restoreSnapshot(c echo.Context) error {
	// A backup uploads for as long as it takes; the read timeout is for
	// requests of bounded size.
	_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Time{})
	if !s.cluster.IsLeader() {
		if c.Request().Header.Get(HeaderForwarded) != "" {
			return cluster.ErrNotLeader
		}
		return s.proxy.stream(c)
	}
	hdr, err := s.cluster.Restore(c.Request().Context(), c.Request().Body)
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
	if _, err := bindJSON(c, &req); err != nil {
		return err
	}
	if err := s.cluster.TransferLeadership(c.Request().Context(), req.ID); err != nil {
		return err
	}
	st := s.cluster.Status()
	return c.JSON(http.StatusOK, map[string]any{"leader_id": st.LeaderID})
}

func (s *Server) removeNode(c echo.Context) error {
	var req nodeRequest
	if _, err := bindJSON(c, &req); err != nil {
		return err
	}
	if req.ID == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "id is required")
	}
	if err := s.cluster.RemoveServer(c.Request().Context(), req.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"removed": req.ID})
}

// leave takes this node out of the cluster gracefully, then stops it.
func (s *Server) leave(c echo.Context) error {
	if err := s.Leave(c.Request().Context()); err != nil {
		return err
	}
	go func() { _ = s.cluster.Shutdown() }()
	return c.JSON(http.StatusOK, map[string]any{"left": s.cluster.ID()})
}

// Leave takes this node out of the cluster: leadership is handed over
// first if it leads, then the leader removes it from the configuration.
// The caller stops the node afterwards.
func (s *Server) Leave(ctx context.Context) error {
	if err := s.cluster.PrepareLeave(ctx); err != nil {
		return err
	}
	body, _ := json.Marshal(nodeRequest{ID: s.cluster.ID()})
	status, answer, err := s.proxy.callLeader(ctx, http.MethodPost, "/v1/cluster/remove-node", body)
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
		cluster.Status
		Relay relay.Stats `json:"relay"`
	}{s.cluster.Status(), s.relay.Stats()})
}

// readState returns the state a read handler answers from: linearizable
// by default (this node is the leader, see routeToLeader), or this node's
// local state when the client asked for a stale read.
func (s *Server) readState(c echo.Context) (*fsm.State, error) {
	var st *fsm.State
	var idx uint64
	if isStaleRead(c.Request()) {
		st, idx = s.cluster.StaleState()
	} else {
		var err error
		if st, idx, err = s.cluster.LinearizableState(c.Request().Context()); err != nil {
			return nil, err
		}
	}
	c.Response().Header().Set(HeaderIndex, strconv.FormatUint(idx, 10))
	return st, nil
}

// propose replicates a command and returns its result, or its domain error.
func (s *Server) propose(c echo.Context, cmd fsm.Command) (fsm.Result, error) {
	res, idx, err := s.cluster.Propose(c.Request().Context(), cmd)
	if err != nil {
		return res, err
	}
	c.Response().Header().Set(HeaderIndex, strconv.FormatUint(idx, 10))
	if res.Err != nil {
		return res, res.Err
	}
	return res, nil
}

package httpapi

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
)

func (s *Server) registerAdmin(e *echo.Echo) {
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok", "node_id": s.cluster.ID()})
	})
	e.GET("/readyz", func(c echo.Context) error {
		if !s.cluster.Ready() {
			c.Response().Header().Set("Retry-After", "1")
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready", "node_id": s.cluster.ID()})
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready", "node_id": s.cluster.ID()})
	})
	e.GET("/v1/cluster", func(c echo.Context) error {
		return c.JSON(http.StatusOK, s.cluster.Status())
	})
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

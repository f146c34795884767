package ui

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/internal/logging"
)

// overview is everything the page shows, as /ui/api/overview answers it.
type overview struct {
	NodeID        string `json:"node_id"`
	Role          string `json:"role"`
	LeaderID      string `json:"leader_id"`
	Term          uint64 `json:"term"`
	GeneratedAtMs int64  `json:"generated_at_ms"`

	Members []member `json:"members"`
	// LeaderChanges are the changes of leader this node saw, newest first.
	LeaderChanges []clusterapi.LeaderChange `json:"leader_changes"`
	// Autopilot is the leader's view of the servers' health (null when the
	// leader was not reached).
	Autopilot *clusterapi.AutopilotStatus `json:"autopilot"`

	Metrics metricsView `json:"metrics"`

	// TablesByFormat and ObjectCounts are this node's state, as of
	// StateIndex.
	TablesByFormat map[string]int `json:"tables_by_format"`
	ObjectCounts   map[string]int `json:"object_counts"`
	StateIndex     uint64         `json:"state_index"`

	Errors errorsView `json:"recent_errors"`
}

// metricsView is this node's rolling metrics: the charts' points and the
// figures over the last minute.
type metricsView struct {
	SpanS        int     `json:"span_s"`
	StepS        int     `json:"step_s"`
	Series       []point `json:"series"`
	CommandsPerS float64 `json:"commands_per_s"`
	WritesPerS   float64 `json:"writes_per_s"`
	// P99Ms is the p99 latency of the writes answered in the last minute
	// (null if there were none).
	P99Ms *float64 `json:"p99_ms"`
}

// errorsView is the recent warnings and errors, newest first; Kept is
// false when the node keeps none.
type errorsView struct {
	Kept    bool             `json:"kept"`
	Records []logging.Record `json:"records"`
}

// serveOverview answers GET /ui/api/overview from this node's view,
// completed with what the other members report of themselves.
func (s *Server) serveOverview(c echo.Context) error {
	st := s.src.Status()
	members := s.members(c.Request().Context(), st)
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, s.overview(time.Now(), st, members))
}

func (s *Server) overview(now time.Time, st clusterapi.Status, members []member) overview {
	_, index := s.core.Node().StaleState()
	out := overview{NodeID: st.NodeID, Role: role(st.State), LeaderID: st.LeaderID, Term: st.Term,
		GeneratedAtMs: now.UnixMilli(), Members: members, LeaderChanges: newestFirst(st.LeaderChanges),
		Metrics: s.metricsView(now), StateIndex: index, Errors: s.recentErrors()}
	out.Autopilot = leaderAutopilot(members)
	out.ObjectCounts, out.TablesByFormat = s.src.ObjectCounts()
	return out
}

func (s *Server) metricsView(now time.Time) metricsView {
	m := s.metrics
	p99, n := m.writes.Quantile(now, figureSpan, 0.99)
	return metricsView{SpanS: int(span / time.Second), StepS: int(step / time.Second), Series: m.series(now),
		CommandsPerS: m.commands.Rate(now, figureSpan), WritesPerS: m.writes.Rate(now, figureSpan), P99Ms: p99Ms(p99, n)}
}

// recentErrors returns the kept warnings and errors, newest first.
func (s *Server) recentErrors() errorsView {
	if s.recent == nil {
		return errorsView{Records: []logging.Record{}}
	}
	recs := s.recent.Records()
	slices.Reverse(recs)
	return errorsView{Kept: true, Records: recs}
}

// role is a raft state as the page names it: leader, follower,
// candidate, shutdown.
func role(state string) string { return strings.ToLower(state) }

func newestFirst(changes []clusterapi.LeaderChange) []clusterapi.LeaderChange {
	out := slices.Clone(changes)
	slices.Reverse(out)
	if out == nil {
		out = []clusterapi.LeaderChange{}
	}
	return out
}

package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/fakecluster"
)

// toyErrors renders {"toy": name, "status": s, "msg": m}; domain errors
// are 418 so that the test sees the group's own mapping decide.
type toyErrors struct{ name string }

func (e toyErrors) Render(p httpapi.Problem) (int, any) {
	status := p.Status
	if p.Code != 0 {
		status = http.StatusTeapot
	}
	return status, map[string]any{"toy": e.name, "status": status, "msg": p.Message}
}

// mountToys mounts two nested toy protocols: /toy (relayed) and
// /toy/plain (forwarded in plain HTTP exchanges). Each answers
// GET and HEAD /fail with a domain error, GET /busy with ErrNoLeader and
// POST /echo with what it was told and the node that answered.
func mountToys(core *httpapi.Server) {
	for _, g := range []httpapi.Group{
		{Prefix: "/toy", Errors: toyErrors{"toy"}, ToLeader: true, Relay: true},
		{Prefix: "/toy/plain", Errors: toyErrors{"plain"}, ToLeader: true},
	} {
		e := core.Mount(g)
		fail := func(echo.Context) error { return fsm.Errf(fsm.CodeTableNotFound, "no table") }
		e.GET("/fail", httpapi.Public(), fail)
		e.HEAD("/fail", httpapi.Public(), fail)
		e.GET("/busy", httpapi.Public(), func(echo.Context) error { return clusterapi.ErrNoLeader })
		e.POST("/echo", httpapi.Public(), func(c echo.Context) error {
			var body map[string]string
			if _, err := httpapi.BindJSON(c, &body); err != nil {
				return err
			}
			return c.JSON(http.StatusOK, map[string]any{"got": body["say"], "node": core.Node().ID()})
		})
	}
}

func serveCore(t *testing.T, node httpapi.DataPath) (*httpapi.Server, *api) {
	t.Helper()
	core := httpapi.New(node, httpapi.Config{Logger: testLogger()})
	mountToys(core)
	srv := httptest.NewServer(core.Handler())
	t.Cleanup(srv.Close)
	return core, &api{t: t, base: srv.URL}
}

func TestFastCoreRendersErrorsWithTheOwningGroupsMapping(t *testing.T) {
	t.Parallel()
	_, a := serveCore(t, fakecluster.New("node1", "file://"+t.TempDir()))
	for _, tc := range []struct {
		path, group string
		status      int
	}{
		{"/toy/fail", "toy", http.StatusTeapot},
		{"/toy/plain/fail", "plain", http.StatusTeapot},
		{"/toy/nope", "toy", http.StatusNotFound},
		{"/toy/plain/nope", "plain", http.StatusNotFound},
		{"/toy/busy", "toy", http.StatusServiceUnavailable},
	} {
		r := a.do(http.MethodGet, tc.path, nil)
		if r.status != tc.status || dig(r.body, "toy") != tc.group {
			t.Fatalf("GET %s: status %d, body %s; want %d from group %s", tc.path, r.status, r.raw, tc.status, tc.group)
		}
		if retry := r.header.Get("Retry-After"); (tc.status == http.StatusServiceUnavailable) != (retry == "1") {
			t.Fatalf("GET %s: Retry-After %q", tc.path, retry)
		}
	}
	if r := a.do(http.MethodHead, "/toy/fail", nil); r.status != http.StatusTeapot || len(r.raw) != 0 {
		t.Fatalf("HEAD: status %d, body %q; want 418 without a body", r.status, r.raw)
	}
	r := a.do(http.MethodGet, "/elsewhere", nil)
	if r.status != http.StatusNotFound || dig(r.body, "error") != "Not Found" || num(t, dig(r.body, "code")) != 404 {
		t.Fatalf("a path no group owns: status %d, body %s", r.status, r.raw)
	}
}

// follower is a node that does not lead: it knows the leader's address.
type follower struct {
	*fakecluster.Node
	leader string
}

func (f follower) IsLeader() bool                  { return false }
func (f follower) LeaderHTTPAddr() (string, error) { return f.leader, nil }

func TestFastCoreForwardsAsTheOwningGroupSays(t *testing.T) {
	t.Parallel()
	leader, la := serveCore(t, fakecluster.New("leader", "file://"+t.TempDir()))
	_, fa := serveCore(t, follower{fakecluster.New("follower", "file://"+t.TempDir()), strings.TrimPrefix(la.base, "http://")})
	for i, tc := range []struct {
		path    string
		relayed uint64 // requests the leader has been relayed so far
	}{
		{"/toy/echo", 1},
		{"/toy/plain/echo", 1},
		{"/toy/echo", 2},
	} {
		say := fmt.Sprint("hello ", i)
		r := fa.do(http.MethodPost, tc.path, map[string]string{"say": say})
		if r.status != http.StatusOK || dig(r.body, "got") != say || dig(r.body, "node") != "leader" || r.header.Get(httpapi.HeaderServedBy) != "leader" {
			t.Fatalf("POST %s through the follower: %v %s", tc.path, r.header, r.raw)
		}
		if got := leader.RelayStats().Requests; got != tc.relayed {
			t.Fatalf("after POST %s the leader was relayed %d requests, want %d", tc.path, got, tc.relayed)
		}
	}
	r := fa.do(http.MethodGet, "/toy/fail", nil, httpapi.HeaderConsistency, "stale")
	if r.status != http.StatusTeapot || r.header.Get(httpapi.HeaderServedBy) != "follower" {
		t.Fatalf("a stale read is served by the follower itself: %d %v", r.status, r.header)
	}
}

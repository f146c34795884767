package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/ucrest"
	"github.com/raftcat/raftcat/internal/fakecluster"
)

// deposed leads until its first proposal, which it refuses as raft
// refuses one on a leader handing leadership over (nothing proposed);
// from then on it follows, and the leader is at next. With stays, the
// hand-over fails and it keeps leading.
type deposed struct {
	*fakecluster.Node
	next     string
	stays    bool
	refused  atomic.Bool
	moved    atomic.Bool
	proposed atomic.Int32 // proposals it applied
}

func (d *deposed) IsLeader() bool { return !d.moved.Load() }

func (d *deposed) LeaderHTTPAddr() (string, error) {
	if d.moved.Load() {
		return d.next, nil
	}
	return d.Node.LeaderHTTPAddr()
}

func (d *deposed) Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, uint64, error) {
	if d.refused.CompareAndSwap(false, true) {
		d.moved.Store(!d.stays)
		return fsm.Result{}, 0, clusterapi.ErrNotLeader
	}
	d.proposed.Add(1)
	return d.Node.Propose(ctx, cmd)
}

// trailing follows whoever d says leads.
type trailing struct {
	*fakecluster.Node
	d *deposed
}

func (f trailing) IsLeader() bool                  { return false }
func (f trailing) LeaderHTTPAddr() (string, error) { return f.d.LeaderHTTPAddr() }

// serveUC serves the UC REST API of node, with a toy route that refuses
// with ErrNotLeader outside the flows (as a cluster operation would).
func serveUC(t *testing.T, node httpapi.DataPath) *api {
	t.Helper()
	core := httpapi.New(node, httpapi.Config{Logger: testLogger()})
	ucrest.Register(core)
	e := core.Mount(httpapi.Group{Prefix: "/toy", Errors: toyErrors{"toy"}, ToLeader: true, Relay: true})
	e.POST("/refuse", func(echo.Context) error {
		if d, ok := node.(*deposed); ok {
			d.moved.Store(true)
		}
		return clusterapi.ErrNotLeader
	})
	srv := httptest.NewServer(core.Handler())
	t.Cleanup(srv.Close)
	return &api{t: t, base: srv.URL}
}

// moveSetup is a new leader and a leader about to be deposed in its favour.
func moveSetup(t *testing.T) (old *deposed, oldAPI, newAPI *api) {
	t.Helper()
	newAPI = serveUC(t, fakecluster.New("new-leader", "file://"+t.TempDir()))
	old = &deposed{Node: fakecluster.New("old-leader", "file://"+t.TempDir()), next: strings.TrimPrefix(newAPI.base, "http://")}
	oldAPI = serveUC(t, old)
	old.SetHTTPAddr(strings.TrimPrefix(oldAPI.base, "http://"))
	return old, oldAPI, newAPI
}

// A write the leader refused because leadership moved, having proposed
// nothing, is served by the new leader: whether the client sent it to the
// old leader or through a follower.
func TestFastAWriteRefusedByADeposedLeaderGoesToTheNewOne(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"the old leader", "a follower"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			old, oldAPI, newAPI := moveSetup(t)
			client := oldAPI.with(t)
			if via == "a follower" {
				client = serveUC(t, trailing{fakecluster.New("follower", "file://"+t.TempDir()), old})
			}
			body := map[string]any{"name": "moved", "catalog_name": "unity", "comment": "sent on"}
			r := client.do(http.MethodPost, apiPrefix+"/schemas", body)
			if r.status != http.StatusOK || dig(r.body, "comment") != "sent on" || r.header.Get(httpapi.HeaderServedBy) != "new-leader" {
				t.Fatalf("the refused write: %d %v %s", r.status, r.header, r.raw)
			}
			if r.header.Get(httpapi.HeaderLeaderMoved) != "" {
				t.Fatalf("the client sees the nodes' own mark: %v", r.header)
			}
			newAPI.ok(http.StatusOK, http.MethodGet, apiPrefix+"/schemas/unity.moved", nil)
			local := oldAPI.do(http.MethodGet, apiPrefix+"/schemas/unity.moved", nil, httpapi.HeaderConsistency, "stale")
			if local.status != http.StatusNotFound || old.proposed.Load() != 0 {
				t.Fatalf("the old leader applied something: GET %d, %d proposals", local.status, old.proposed.Load())
			}
		})
	}
}

// A write refused while a hand-over that then failed was under way is
// served by the same leader once it takes writes again.
func TestFastAWriteRefusedDuringAFailedHandOverIsServedAfterIt(t *testing.T) {
	t.Parallel()
	old, oldAPI, newAPI := moveSetup(t)
	old.stays = true
	r := oldAPI.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "stayed", "catalog_name": "unity"})
	if r.status != http.StatusOK || r.header.Get(httpapi.HeaderServedBy) != "old-leader" || old.proposed.Load() != 1 {
		t.Fatalf("the refused write: %d %v %s; %d proposals applied", r.status, r.header, r.raw, old.proposed.Load())
	}
	if g := newAPI.do(http.MethodGet, apiPrefix+"/schemas/unity.stayed", nil); g.status != http.StatusNotFound {
		t.Fatalf("the other node has the schema: %d", g.status)
	}
}

// A refusal the flows did not record (a cluster operation's) is answered
// as before: the request may have done something, so it is not sent on.
func TestFastAnUnrecordedRefusalIsNotSentOn(t *testing.T) {
	t.Parallel()
	_, oldAPI, _ := moveSetup(t)
	r := oldAPI.do(http.MethodPost, "/toy/refuse", map[string]string{})
	if r.status != http.StatusServiceUnavailable || r.header.Get(httpapi.HeaderServedBy) != "old-leader" || dig(r.body, "toy") != "toy" {
		t.Fatalf("an unrecorded refusal: %d %v %s", r.status, r.header, r.raw)
	}
}

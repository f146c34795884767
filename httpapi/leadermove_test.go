package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
	nextNode *fakecluster.Node // the new leader
	stays    bool
	refuseAt int32 // which proposal it refuses, from 1 (0: the first)
	refusal  error // what it refuses with (nil: ErrNotLeader)
	refused  atomic.Bool
	moved    atomic.Bool
	proposed atomic.Int32 // proposals it applied
	entries  []string     // NoteEntry's arguments
	mu       sync.Mutex
}

func (d *deposed) NoteEntry(node string) {
	d.mu.Lock()
	d.entries = append(d.entries, node)
	d.mu.Unlock()
}

func (d *deposed) IsLeader() bool { return !d.moved.Load() }

func (d *deposed) LeaderHTTPAddr() (string, error) {
	if d.moved.Load() {
		return d.next, nil
	}
	return d.Node.LeaderHTTPAddr()
}

func (d *deposed) Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, uint64, error) {
	if d.proposed.Load()+1 >= max(d.refuseAt, 1) && d.refused.CompareAndSwap(false, true) {
		if d.refusal != nil {
			return fsm.Result{}, 0, d.refusal
		}
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
	e.POST("/refuse", httpapi.Public(), func(echo.Context) error {
		if d, ok := node.(*deposed); ok {
			d.moved.Store(true)
		}
		return clusterapi.ErrNotLeader
	})
	e.POST("/twice", httpapi.Public(), func(c echo.Context) error { // two proposals: the second may be refused
		if _, err := core.State(c); err != nil {
			return err
		}
		for range 2 {
			if _, err := core.Propose(c, &fsm.SetURLSigningKey{Key: testKey, IfAbsent: true}); err != nil {
				return err
			}
		}
		return c.NoContent(http.StatusNoContent)
	})
	e.POST("/echo", httpapi.Public(), func(c echo.Context) error { // reads a little, proposes, reads the rest
		c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, 1<<20)
		head := make([]byte, 5)
		if _, err := io.ReadFull(c.Request().Body, head); err != nil {
			return err
		}
		if _, err := core.Propose(c, &fsm.SetURLSigningKey{Key: testKey, IfAbsent: true}); err != nil {
			return err
		}
		rest, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, "text/plain", append(head, rest...))
	})
	srv := httptest.NewServer(core.Handler())
	t.Cleanup(srv.Close)
	return &api{t: t, base: srv.URL}
}

// moveSetup is a new leader and a leader about to be deposed in its favour.
func moveSetup(t *testing.T) (old *deposed, oldAPI, newAPI *api) {
	t.Helper()
	next := fakecluster.New("new-leader", "file://"+t.TempDir())
	newAPI = serveUC(t, next)
	old = &deposed{Node: fakecluster.New("old-leader", "file://"+t.TempDir()), next: strings.TrimPrefix(newAPI.base, "http://"), nextNode: next}
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

// testKey is a URL signing key (32 bytes, base64): a command the toy routes
// propose.
const testKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

// A request refused because leadership moved after it had already
// proposed something is answered with the refusal: sent on, it would be
// applied twice.
func TestFastARefusalAfterAProposalIsNotSentOn(t *testing.T) {
	t.Parallel()
	old, oldAPI, newAPI := moveSetup(t)
	old.refuseAt = 2
	_, before := old.nextNode.StaleState()
	r := oldAPI.do(http.MethodPost, "/toy/twice", "")
	if r.status != http.StatusServiceUnavailable || r.header.Get(httpapi.HeaderServedBy) != "old-leader" || old.proposed.Load() != 1 {
		t.Fatalf("a refusal after a proposal: %d %v %s; %d proposals applied", r.status, r.header, r.raw, old.proposed.Load())
	}
	if _, index := old.nextNode.StaleState(); index != before {
		t.Fatalf("the new leader applied the request too: at index %d, was %d", index, before)
	}
	newAPI.ok(http.StatusNoContent, http.MethodPost, "/toy/twice", "") // the route works where nothing refuses
}

// A leader too busy to take a proposal refuses it, and that is not
// leadership moving: the request is answered at once, not run again.
func TestFastABusyLeaderAnswersAtOnce(t *testing.T) {
	t.Parallel()
	old, oldAPI, _ := moveSetup(t)
	old.refusal = fmt.Errorf("%w: timed out enqueuing operation", clusterapi.ErrBusy)
	r := oldAPI.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "busy", "catalog_name": "unity"})
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.raw), "overloaded") ||
		r.header.Get(httpapi.HeaderServedBy) != "old-leader" || old.proposed.Load() != 0 {
		t.Fatalf("a busy leader: %d %v %s; %d proposals applied", r.status, r.header, r.raw, old.proposed.Load())
	}
}

// A request whose handler read part of the body through a reader of its
// own before it was refused goes to the new leader whole.
func TestFastARefusedRequestGoesOnWithItsWholeBody(t *testing.T) {
	t.Parallel()
	_, oldAPI, _ := moveSetup(t)
	body := strings.Repeat("0123456789", 10_000)
	r := oldAPI.do(http.MethodPost, "/toy/echo", body)
	if r.status != http.StatusOK || string(r.raw) != body || r.header.Get(httpapi.HeaderServedBy) != "new-leader" {
		t.Fatalf("the refused request: %d %v, %d of %d bytes back", r.status, r.header, len(r.raw), len(body))
	}
}

// A follower that forwards to a node that has meanwhile stepped down is
// told so, and sends the request to the new leader.
func TestFastAForwardToAFormerLeaderGoesOnToTheNewOne(t *testing.T) {
	t.Parallel()
	old, oldAPI, _ := moveSetup(t)
	old.moved.Store(true)
	follower := &lagging{Node: fakecluster.New("follower", "file://"+t.TempDir()), stale: strings.TrimPrefix(oldAPI.base, "http://"), d: old}
	client := serveUC(t, follower)
	r := client.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "lagged", "catalog_name": "unity"})
	if r.status != http.StatusOK || r.header.Get(httpapi.HeaderServedBy) != "new-leader" || follower.asked.Load() < 2 {
		t.Fatalf("the forwarded write: %d %v %s; leader asked %d times", r.status, r.header, r.raw, follower.asked.Load())
	}
	if r.header.Get(httpapi.HeaderLeaderMoved) != "" || old.proposed.Load() != 0 {
		t.Fatalf("the former leader's mark reached the client, or it applied the write: %v, %d", r.header, old.proposed.Load())
	}
}

// lagging is a follower that first names a former leader, then the one d
// says leads.
type lagging struct {
	*fakecluster.Node
	stale string
	d     *deposed
	asked atomic.Int32
}

func (f *lagging) IsLeader() bool { return false }

func (f *lagging) LeaderHTTPAddr() (string, error) {
	if f.asked.Add(1) == 1 {
		return f.stale, nil
	}
	return f.d.LeaderHTTPAddr()
}

// The leader counts a request at the follower its header names only when
// the request came over a relay connection, as followers send requests:
// a client naming a follower itself is counted at the leader.
func TestFastOnlyRelayedRequestsCountAtTheFollowerTheyName(t *testing.T) {
	t.Parallel()
	old, oldAPI, _ := moveSetup(t)
	old.stays, old.refuseAt = true, 1<<30 // it keeps leading and takes every proposal
	oldAPI.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "forged", "catalog_name": "unity"},
		httpapi.HeaderForwarded, "follower")
	via := serveUC(t, trailing{fakecluster.New("follower", "file://"+t.TempDir()), old})
	via.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "relayed", "catalog_name": "unity"})
	old.mu.Lock()
	defer old.mu.Unlock()
	if strings.Join(old.entries, ",") != "old-leader,follower" {
		t.Fatalf("entries counted: %v, want the forged request at the leader and the relayed one at the follower", old.entries)
	}
}

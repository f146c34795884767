package chaos

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// cutShort answers 200 and promises a body it never finishes, as a node
// killed mid-answer does.
func cutShort(w http.ResponseWriter, _ *http.Request) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"metadata\":")
	buf.Flush()
	conn.Close()
}

func TestAnAnswerCutShortIsAnUnknownOutcome(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(cutShort))
	defer srv.Close()
	status, out, err := call(http.MethodGet, srv.URL, nil)
	if err == nil {
		t.Fatalf("call = %d %v, nil error; want the cut recognised", status, out)
	}
	c := &client{id: 1, table: "t", urls: []string{srv.URL}, rng: rand.New(rand.NewPCG(1, 2)), rec: &recorder{start: time.Now()}}
	if _, _, ok := c.load(); ok {
		t.Fatal("a load whose answer was cut short counted as ok")
	}
	if ops := c.rec.snapshot(); len(ops) != 1 || ops[0].Outcome != OutcomeUnknown {
		t.Fatalf("recorded %+v, want one unknown load", ops)
	}
}

func TestAnOKAnswerThatIsNotJSONIsAnUnknownOutcome(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("<html>a proxy page</html>"))
	}))
	defer srv.Close()
	if status, out, err := call(http.MethodGet, srv.URL, nil); err == nil {
		t.Fatalf("call = %d %v, nil error; want a non-JSON 200 refused", status, out)
	}
}

// deltaServer answers Delta commits with the statuses given in turn (the
// last one from then on) and loads with a table at version latest whose
// tracked commits are those given.
func deltaServer(t *testing.T, latest int64, tracked map[int64]string, statuses ...int) (*httptest.Server, *atomic.Int32) {
	var commits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			var cms []any
			for v, f := range tracked {
				cms = append(cms, map[string]any{"version": v, "file-name": f})
			}
			json.NewEncoder(w).Encode(map[string]any{"latest-table-version": latest, "metadata": map[string]any{"etag": "e"}, "commits": cms})
			return
		}
		n := int(commits.Add(1))
		w.WriteHeader(statuses[min(n, len(statuses))-1])
		w.Write([]byte(`{"error":{"message":"Could not determine whether commit version 3 is a replay","type":"CommitStateUnknownException","code":500}}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &commits
}

// commitWithin runs c.commit(v) and fails the test if it has not
// returned within a few seconds.
func commitWithin(t *testing.T, c *client, v int64) {
	t.Helper()
	done := make(chan struct{})
	go func() { c.commit(v, nil); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("commit of version %d still retrying after 5 s", v)
	}
}

// A commit of unknown outcome whose version a load shows taken and no
// longer tracked (published) is left unknown: the server can never tell
// whether a retry is a replay (the drill writes no commit files for it to
// compare), and retrying for ever would stall the client.
func TestAnUndecidableCommitIsLeftUnknown(t *testing.T) {
	srv, commits := deltaServer(t, 5, map[int64]string{5: "x"}, http.StatusInternalServerError)
	c := &client{id: 1, table: "t", urls: []string{srv.URL}, rng: rand.New(rand.NewPCG(1, 2)), rec: &recorder{start: time.Now()}}
	commitWithin(t, c, 3)
	ops := c.rec.snapshot()
	if n := commits.Load(); n != 1 || len(ops) != 2 || ops[0].Outcome != OutcomeUnknown || ops[1].Op != OpLoad {
		t.Fatalf("%d commits sent; recorded %+v", n, ops)
	}
}

// While the version is still tracked, an identical retry settles the
// outcome (a replay is answered 200, another file's commit 409), so the
// client retries.
func TestACommitOfATrackedVersionIsRetried(t *testing.T) {
	srv, commits := deltaServer(t, 3, map[int64]string{3: "mine"}, http.StatusServiceUnavailable, http.StatusOK)
	c := &client{id: 1, table: "t", urls: []string{srv.URL}, rng: rand.New(rand.NewPCG(1, 2)), rec: &recorder{start: time.Now()}}
	commitWithin(t, c, 3)
	if ops := c.rec.snapshot(); commits.Load() != 2 || ops[len(ops)-1].Outcome != OutcomeOK {
		t.Fatalf("%d commits sent; recorded %+v", commits.Load(), ops)
	}
}

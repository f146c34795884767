package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// With follower reads, a follower answers loads itself, and every load
// sees every commit acknowledged before it began, wherever the commit
// was made: each commit goes through one follower and the next load
// through the other. The nodes' roles must hold for the whole test, so
// their heartbeat timeout is longer than a loaded machine's stalls.
func TestFollowerReadsSeeEveryAcknowledgedCommit(t *testing.T) {
	t.Parallel()
	nodes := testcluster.Start(t, 3, testcluster.Options{FollowerReads: true, Heartbeat: 2 * time.Second})
	leader := testcluster.Leader(t, nodes)
	fs := testcluster.Followers(nodes, leader)
	writer, reader := &api{t: t, base: fs[0].URL}, &api{t: t, base: fs[1].URL}
	m := writer.newManaged()
	const commits = 30
	for v := int64(1); v <= commits; v++ {
		written := requireIndex(t, m.update("", commit(v), backfill(v-1)))
		r := reader.ok(http.StatusOK, http.MethodGet, m.path(), nil)
		if by := r.header.Get(httpapi.HeaderServedBy); by != fs[1].ID() {
			t.Fatalf("load served by %q, want the follower %s", by, fs[1].ID())
		}
		if got := latest(t, r.obj(t)); got != v {
			t.Fatalf("a load after commit %d (index %d) was acknowledged sees version %d (index %s)", v, written, got, r.header.Get(httpapi.HeaderIndex))
		}
		if read := requireIndex(t, r); read < written {
			t.Fatalf("read at index %d, before the commit's %d", read, written)
		}
	}
	fams := scrape(t, fs[1].URL)
	if local := sum(fams, "raftcat_follower_reads_total", map[string]string{"outcome": "local"}); local < commits {
		t.Fatalf("%v reads answered on the follower, want at least %d", local, commits)
	}
	if relayed := sum(scrape(t, leader.URL), "raftcat_http_requests_total",
		map[string]string{"method": "GET", "forwarded": "true", "route": "/api/2.1/unity-catalog/delta/v1/catalogs/:catalog/schemas/:schema/tables/:table"}); relayed != 0 {
		t.Fatalf("the leader answered %v forwarded loads", relayed)
	}
}

// Without follower reads a follower forwards its reads; the read-index
// endpoint answers on the leader only.
func TestReadsForwardedByDefault(t *testing.T) {
	t.Parallel()
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	f := testcluster.Followers(nodes, leader)[0]
	a := &api{t: t, base: f.URL}
	r := a.ok(http.StatusOK, http.MethodGet, apiPrefix+"/catalogs", nil)
	if by := r.header.Get(httpapi.HeaderServedBy); by != leader.ID() {
		t.Fatalf("read served by %q, want the leader %s", by, leader.ID())
	}
	l := (&api{t: t, base: leader.URL}).ok(http.StatusOK, http.MethodGet, httpapi.ReadIndexPath, nil).obj(t)
	if idx := num(t, l["index"]); idx <= 0 {
		t.Fatalf("read index %d", idx)
	}
	if got := a.do(http.MethodGet, httpapi.ReadIndexPath, nil); got.status != http.StatusServiceUnavailable {
		t.Fatalf("a follower answered the read-index request: %d %s", got.status, got.raw)
	}
}

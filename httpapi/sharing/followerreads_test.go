package sharing_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/sharing"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// With follower reads, a follower still sends the reads that write to the
// leader: the activation link's GET records the download, so through a
// follower it is forwarded and answers as the leader would, while the
// recipient's listing is answered by the follower itself.
func TestFollowerReadsForwardReadsThatWrite(t *testing.T) {
	nodes := testcluster.Start(t, 3, testcluster.Options{FollowerReads: true, Heartbeat: 2 * time.Second}) // roles must hold
	leader := testcluster.Leader(t, nodes)
	f := testcluster.Followers(nodes, leader)[0]
	p := provider{t: t, url: f.URL}
	p.schema("s")
	p.registerExternal("s", "a", copyTable(t, "simple_table"))
	p.share("sh")
	p.add("sh", "unity.s.a", "s.a", false)
	r := ok(t, 200, http.MethodPost, f.URL+uc+"/recipients", map[string]any{"name": "analyst", "authentication_type": "TOKEN"})
	act, err := url.Parse(activationURL(t, r))
	if err != nil {
		t.Fatal(err)
	}
	act.Host = strings.TrimPrefix(f.URL, "http://")
	prof := download(t, act.String())
	if again := testcluster.Do(t, http.MethodGet, act.String(), nil); again.Status == http.StatusOK {
		t.Fatalf("the activation link answered twice: %s", again.Raw)
	}
	p.grant("sh", "analyst")
	prof.Endpoint = f.URL + sharing.Prefix
	shares := prof.client(t).get("/shares")
	if shares.Status != http.StatusOK || shares.Header.Get(httpapi.HeaderServedBy) != f.ID() {
		t.Fatalf("listing shares through the follower: %d by %q: %s", shares.Status, shares.Header.Get(httpapi.HeaderServedBy), shares.Raw)
	}
}

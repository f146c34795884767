package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// Request balancing sends each request to the next node, whichever
// node the writer's URL named; a URL on no node of the cluster, or on a
// node whose address merely starts like one, is left alone.
func TestRoundRobinRoutesEachRequestToTheNextNode(t *testing.T) {
	b := newRoundRobin([]string{"http://n1:80", "http://n2:80", "http://n3:80"})
	var got []string
	for _, u := range []string{"http://n1:80/t/a", "http://n1:80/t/a", "http://n3:80/t/b", "http://n2:80/t/a", "http://n2:80"} {
		got = append(got, b.route(u))
	}
	want := []string{"http://n1:80/t/a", "http://n2:80/t/a", "http://n3:80/t/b", "http://n1:80/t/a", "http://n2:80"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("routed %v, want %v", got, want)
	}
	for _, u := range []string{"http://n1:8080/t", "http://other:80/t"} {
		if r := b.route(u); r != u {
			t.Errorf("%s routed to %s, want it left alone", u, r)
		}
	}
	var none *roundRobin
	if r := none.route("http://n1:80/t"); r != "http://n1:80/t" {
		t.Errorf("without balancing a URL became %s", r)
	}
}

// With requests balanced over nodes the lean client keeps one
// kept-alive connection to each node instead of redialling whenever the
// node changes.
func TestConnClientKeepsAConnectionPerNodeWhenBalanced(t *testing.T) {
	var seen [2]peers
	var urls []string
	for i := range seen {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen[i].add(r.RemoteAddr)
			io.WriteString(w, "ok")
		}))
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	c := newConnClient("", nil)
	c.perNode = true
	defer c.close()
	var buf bytes.Buffer
	for i := range 6 {
		code, answer, err := c.send(context.Background(), http.MethodGet, urls[i%2]+"/t", nil, &buf)
		if err != nil || code != http.StatusOK || string(answer) != "ok" {
			t.Fatalf("exchange %d: %d %q %v", i, code, answer, err)
		}
	}
	for i := range seen {
		a := seen[i].list()
		if len(a) != 3 || a[0] != a[1] || a[1] != a[2] {
			t.Errorf("node %d saw requests from %v, want three on one connection", i, a)
		}
	}
}

// The net/http writers share one pooled client: a request finds a
// connection another writer left idle, and every request carries the
// token and the JSON content type.
func TestPooledWritersShareConnections(t *testing.T) {
	var seen peers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r.RemoteAddr)
		body, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Header.Get("Authorization")+" "+r.Header.Get("Content-Type")+" "+string(body))
	}))
	defer srv.Close()
	s := &raftcatSystem{urls: []string{srv.URL}, token: "tok", client: ClientNetHTTP, clients: 2}
	a, b := s.newConn(), s.newConn()
	var buf bytes.Buffer
	for i, c := range []*connClient{a, b, a} {
		code, answer, err := c.send(context.Background(), http.MethodPost, srv.URL+"/t", strings.NewReader("{}"), &buf)
		if err != nil || code != http.StatusOK || string(answer) != "Bearer tok application/json {}" {
			t.Fatalf("exchange %d: %d %q %v", i, code, answer, err)
		}
	}
	a.close()
	b.close()
	if l := seen.list(); len(l) != 3 || l[0] != l[1] || l[1] != l[2] {
		t.Fatalf("requests came from %v, want one pooled connection", l)
	}
}

// The net/http writer's commit, made with encoding/json, says what the
// lean writer's hand-made one says, and its load decodes the answer.
func TestJSONDeltaWriterMatchesTheLeanOne(t *testing.T) {
	lean := &deltaWriter{uuid: "u-1", id: 3, seq: 7}
	js := &deltaWriter{uuid: "u-1", id: 3, seq: 7, encodeJSON: true}
	for _, v := range []int64{1, 5} {
		var a, b any
		if err := json.Unmarshal(readAll(t, lean.commitBody(v, 1700)), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(readAll(t, js.commitBody(v, 1700)), &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("version %d: encoding/json body %v, lean body %v", v, b, a)
		}
	}
	answer := `{"metadata":{"etag":"e","table-type":"MANAGED","table-uuid":"u-1","location":"file:///t","created-time":1,` +
		`"updated-time":2,"columns":{"type":"struct","fields":[]},"partition-columns":[],"properties":{"a":"b"}},` +
		`"commits":[{"version":4,"timestamp":1,"file-name":"f","file-size":1,"file-modification-timestamp":1}],"latest-table-version":4}`
	if v, err := decodeLatest([]byte(answer)); err != nil || v != 4 {
		t.Fatalf("decoded version %d, %v; want 4", v, err)
	}
	if _, err := decodeLatest([]byte(`{"metadata":{}}`)); err == nil {
		t.Fatal("an answer without latest-table-version was accepted")
	}
}

func readAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Relays are the requests followers sent on to the leader, summed over
// the nodes; tries a former leader turned back are not requests.
func TestRelayedCountsForwardedRequests(t *testing.T) {
	node := func(answered, unknown, moved string) string {
		return `# TYPE raftcat_forwarded_requests_total counter
raftcat_forwarded_requests_total{outcome="answered"} ` + answered + `
raftcat_forwarded_requests_total{outcome="unknown_outcome"} ` + unknown + `
raftcat_forwarded_requests_total{outcome="leader_moved"} ` + moved + `
`
	}
	snap := metricsSnapshot{parseMetrics(t, node("10", "1", "50")), parseMetrics(t, node("5", "0", "7"))}
	if n := relayedTotal(snap); n != 16 {
		t.Fatalf("relayed %v, want 16", n)
	}
}

// The client's CPU and the relays are reported per acknowledged commit.
func TestClientCostPerCommit(t *testing.T) {
	r := Result{Commits: 200, Conflicts: 50, AttemptLatency: Latencies{}}
	r.addCPU(0.5, 0.3)
	r.addRequests(700)
	r.addRelays(300)
	if r.ClientCPUMsPerCommit != 1.5 || r.RelayedPerCommit != 1.5 || r.RequestsPerCommit != 3.5 || r.RetriesPerCommit != 0.25 {
		t.Fatalf("per commit: client CPU %v ms, relayed %v, requests %v, retries %v; want 1.5, 1.5, 3.5, 0.25",
			r.ClientCPUMsPerCommit, r.RelayedPerCommit, r.RequestsPerCommit, r.RetriesPerCommit)
	}
	if !strings.Contains(r.ClientLine(), "client CPU 1.50 ms/commit") || !strings.Contains(r.ClientLine(), "relayed 1.50/commit") {
		t.Fatalf("client line: %s", r.ClientLine())
	}
	r.addSchedWaits(schedHist{counts: []uint64{0, 100, 100}, buckets: []float64{math.Inf(-1), 0, 0.002, 0.004}})
	if r.ClientRunWaitMsPerCommit != 2 || r.ClientRunWaitP99Ms != 4 {
		t.Fatalf("run waits: %v ms/commit, p99 %v ms; want 2 (0.4 s over 200 commits) and 4", r.ClientRunWaitMsPerCommit, r.ClientRunWaitP99Ms)
	}
	if !strings.Contains(r.ClientLine(), "waited to run 2.00 ms/commit (one wait p99 4.00 ms)") {
		t.Fatalf("client line: %s", r.ClientLine())
	}
	var none Result
	none.addCPU(1, 1)
	none.addRequests(3)
	none.addRelays(3)
	if none.ClientCPUMsPerCommit != 0 || none.RelayedPerCommit != 0 {
		t.Fatalf("without commits: %+v", none)
	}
}

// The comparison with the lean client needs something else to compare,
// and request balancing has no meaning when every request goes to the
// leader.
func TestCheckClientsRefusesWhatCannotRun(t *testing.T) {
	for _, c := range []Config{
		{Client: "curl"}, {Balance: "dns"}, {Balance: BalanceRequest, Leader: true},
		{AgainstLean: true, Protocol: "delta"}, {AgainstLean: true, Client: ClientLean, Balance: BalanceClient, Protocol: "delta"},
		{AgainstLean: true, Client: ClientNetHTTP, Protocol: "iceberg"},
	} {
		if err := c.checkClients(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	for _, c := range []Config{{}, {Client: ClientNetHTTP, Balance: BalanceRequest}, {AgainstLean: true, Balance: BalanceRequest, Protocol: "delta"}} {
		if err := c.checkClients(); err != nil {
			t.Errorf("%+v refused: %v", c, err)
		}
	}
}

package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The clients the bench's raftcat writers can use (Config.Client).
const (
	// ClientLean is the bench's own client: a kept-alive connection per
	// writer that the writer's goroutine reads and writes itself, and
	// bodies made and read by hand (connClient).
	ClientLean = "lean"
	// ClientNetHTTP is how most Go services talk to a catalog: one
	// net/http client with a pooled transport shared by every writer,
	// and encoding/json for the Delta requests and answers.
	ClientNetHTTP = "nethttp"
)

// How the writers' requests are spread over the nodes (Config.Balance).
const (
	// BalanceClient keeps each writer on one node, as an L4 (connection)
	// balancer does: writer i talks to node i mod nodes.
	BalanceClient = "client"
	// BalanceRequest sends each request to the next node, round robin
	// over the cluster, as an L7 (request) balancer does.
	BalanceRequest = "request"
)

// checkClients checks the client and balancing settings.
func (cfg *Config) checkClients() error {
	switch {
	case cfg.Client != "" && cfg.Client != ClientLean && cfg.Client != ClientNetHTTP:
		return fmt.Errorf("bench: unknown client %q (lean or nethttp)", cfg.Client)
	case cfg.Balance != "" && cfg.Balance != BalanceClient && cfg.Balance != BalanceRequest:
		return fmt.Errorf("bench: unknown balance %q (client or request)", cfg.Balance)
	case cfg.AgainstLean && cmp.Or(cfg.Client, ClientLean) == ClientLean && cmp.Or(cfg.Balance, BalanceClient) == BalanceClient:
		return errors.New("bench: the comparison with the lean client needs another client or balancing")
	case cfg.AgainstLean && cfg.Protocol != "delta":
		return errors.New("bench: the comparison with the lean client runs the Delta workload only")
	case cfg.Balance == BalanceRequest && cfg.Leader:
		return errors.New("bench: request balancing spreads requests over the nodes; the leader target sends them all to one")
	}
	return nil
}

// roundRobin is an L7 balancer in front of the cluster, shared by every
// writer: each request goes to the node after the one the previous
// request went to.
type roundRobin struct {
	urls []string
	next atomic.Uint64
}

func newRoundRobin(urls []string) *roundRobin { return &roundRobin{urls: urls} }

// route sends u, a URL on one of the nodes, to the next node instead (u
// itself without balancing, or when it names no node).
func (b *roundRobin) route(u string) string {
	if b == nil {
		return u
	}
	for _, base := range b.urls {
		if rest, ok := strings.CutPrefix(u, base); ok && (rest == "" || rest[0] == '/' || rest[0] == '?') {
			return b.urls[(b.next.Add(1)-1)%uint64(len(b.urls))] + rest
		}
	}
	return u
}

// pooledClient is the net/http client the writers of a system share,
// made on first use: Go's default transport (keep-alive, HTTP/2 where
// offered) with room for an idle connection per writer to each node.
func (s *raftcatSystem) pooledClient() *http.Client {
	s.pooledOnce.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = max(s.clients, 2)
		t.MaxIdleConns = max(s.clients, 2) * max(len(s.urls), 1)
		t.TLSClientConfig = s.tls
		s.pooled = &http.Client{Timeout: 30 * time.Second, Transport: t}
	})
	return s.pooled
}

// sendPooled is connClient.send through the shared net/http client.
func (c *connClient) sendPooled(ctx context.Context, method, url string, body io.Reader, buf *bytes.Buffer) (int, []byte, error) {
	buf.Reset()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c.token.authorize(req.Header)
	resp, err := c.pooled.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	_, err = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes(), err
}

// nodeConn is the writer's connection to url's node, opened on first use
// (when requests are balanced over the nodes, a writer keeps one to
// each).
func (c *connClient) nodeConn(url string) *connClient {
	host := url
	if i := strings.Index(url, "://"); i >= 0 {
		host = url[i+3:]
	}
	if i := strings.IndexAny(host, "/?"); i >= 0 {
		host = host[:i]
	}
	cc := c.nodes[host]
	if cc == nil {
		if c.nodes == nil {
			c.nodes = map[string]*connClient{}
		}
		cc = newConnClient(c.token, c.tls)
		c.nodes[host] = cc
	}
	return cc
}

// deltaCommitRequest is a Delta add-commit as a Go service would build
// it for encoding/json.
type deltaCommitRequest struct {
	Requirements []deltaRequirement `json:"requirements"`
	Updates      []deltaUpdate      `json:"updates"`
}

type deltaRequirement struct {
	Type string `json:"type"`
	UUID string `json:"uuid"`
}

type deltaUpdate struct {
	Action                 string             `json:"action"`
	Commit                 *deltaCommitRecord `json:"commit,omitempty"`
	LatestPublishedVersion *int64             `json:"latest-published-version,omitempty"`
}

type deltaCommitRecord struct {
	Version                   int64  `json:"version"`
	Timestamp                 int64  `json:"timestamp"`
	FileName                  string `json:"file-name"`
	FileSize                  int64  `json:"file-size"`
	FileModificationTimestamp int64  `json:"file-modification-timestamp"`
}

// deltaLoadAnswer is the Delta API's table answer as a Go service would
// decode it.
type deltaLoadAnswer struct {
	Metadata struct {
		ETag             string            `json:"etag"`
		TableType        string            `json:"table-type"`
		TableUUID        string            `json:"table-uuid"`
		Location         string            `json:"location"`
		CreatedTime      int64             `json:"created-time"`
		UpdatedTime      int64             `json:"updated-time"`
		Columns          json.RawMessage   `json:"columns"`
		PartitionColumns []string          `json:"partition-columns"`
		Properties       map[string]string `json:"properties"`
	} `json:"metadata"`
	Commits            []deltaCommitRecord `json:"commits"`
	LatestTableVersion *int64              `json:"latest-table-version"`
}

// commitBody is the commit of version v: made by hand by the lean
// writer, with encoding/json by the net/http one.
func (w *deltaWriter) commitBody(v, now int64) io.Reader {
	name := fmt.Sprintf("%020d.w%d-%d.json", v, w.id, w.seq)
	if !w.encodeJSON {
		backfill := ""
		if v > 1 {
			backfill = fmt.Sprintf(`,{"action":"set-latest-backfilled-version","latest-published-version":%d}`, v-1)
		}
		return strings.NewReader(fmt.Sprintf(`{"requirements":[{"type":"assert-table-uuid","uuid":%q}],"updates":[`+
			`{"action":"add-commit","commit":{"version":%d,"timestamp":%d,"file-name":%q,`+
			`"file-size":1024,"file-modification-timestamp":%d}}%s]}`, w.uuid, v, now, name, now, backfill))
	}
	req := deltaCommitRequest{Requirements: []deltaRequirement{{Type: "assert-table-uuid", UUID: w.uuid}},
		Updates: []deltaUpdate{{Action: "add-commit", Commit: &deltaCommitRecord{Version: v, Timestamp: now,
			FileName: name, FileSize: 1024, FileModificationTimestamp: now}}}}
	if v > 1 {
		published := v - 1
		req.Updates = append(req.Updates, deltaUpdate{Action: "set-latest-backfilled-version", LatestPublishedVersion: &published})
	}
	b, _ := json.Marshal(req) // plain structs always encode
	return bytes.NewReader(b)
}

// decodeLatest decodes a whole Delta table answer with encoding/json and
// returns its latest version.
func decodeLatest(b []byte) (int64, error) {
	var a deltaLoadAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return 0, fmt.Errorf("load: %v", err)
	}
	if a.LatestTableVersion == nil {
		return 0, errors.New("load: no latest-table-version")
	}
	return *a.LatestTableVersion, nil
}

// relayCounter is a system whose nodes count the requests followers
// relayed to the leader.
type relayCounter interface {
	relayed(ctx context.Context) (float64, error)
}

func (s *raftcatSystem) relayed(ctx context.Context) (float64, error) {
	snap, err := scrapeAll(ctx, s.http, s.urls)
	if err != nil {
		return 0, err
	}
	return relayedTotal(snap), nil
}

func (s *icebergSystem) relayed(ctx context.Context) (float64, error) { return s.rc.relayed(ctx) }

// relayedTotal sums the requests the nodes forwarded to the leader,
// whatever came of them, leaving out the tries a former leader turned
// back (the request then went on and is counted once).
func relayedTotal(snap metricsSnapshot) float64 {
	var n float64
	for _, fams := range snap {
		for _, m := range fams["raftcat_forwarded_requests_total"].GetMetric() {
			outcome := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					outcome = l.GetValue()
				}
			}
			if outcome != "leader_moved" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// relayProbe returns a function that reads sys's relay counter, or nil
// when sys has none; a failed read says so once in log and counts as
// unknown from then on.
func relayProbe(ctx context.Context, sys system, log io.Writer) func() (float64, bool) {
	rc, ok := sys.(relayCounter)
	if !ok {
		return nil
	}
	var once sync.Once
	return func() (float64, bool) {
		n, err := rc.relayed(ctx)
		if err != nil {
			once.Do(func() { fmt.Fprintf(log, "bench: %s: relays not counted: %v\n", sys.name(), err) })
			return 0, false
		}
		return n, true
	}
}

// addRequests sets the requests and retries per acknowledged commit.
func (r *Result) addRequests(requests int) {
	if r.Commits > 0 {
		r.RequestsPerCommit = float64(requests) / float64(r.Commits)
		r.RetriesPerCommit = float64(r.Conflicts) / float64(r.Commits)
	}
}

// addRelays sets the requests relayed to the leader, in all and per
// acknowledged commit.
func (r *Result) addRelays(relayed float64) {
	r.RelayedRequests, r.RelaysCounted = relayed, true
	if r.Commits > 0 {
		r.RelayedPerCommit = relayed / float64(r.Commits)
	}
}

// ClientLine says where a commit's cost beyond the server went: the
// bench process's own CPU, requests and relays to the leader, and
// retries after conflicts, each per acknowledged commit.
func (r Result) ClientLine() string {
	s := fmt.Sprintf("%-8s per commit: client CPU %.2f ms/commit, server CPU %.2f ms", r.System, r.ClientCPUMsPerCommit, r.ServerCPUMsPerCommit)
	if r.RequestsPerCommit > 0 {
		s += fmt.Sprintf(", requests %.2f", r.RequestsPerCommit)
	}
	if r.RelaysCounted {
		s += fmt.Sprintf(", relayed %.2f/commit", r.RelayedPerCommit)
	}
	s += fmt.Sprintf(", retries %.2f", r.RetriesPerCommit)
	if r.ClientRunWaitMsPerCommit > 0 {
		s += fmt.Sprintf("; client goroutines waited to run %.2f ms/commit (one wait p99 %.2f ms)", r.ClientRunWaitMsPerCommit, r.ClientRunWaitP99Ms)
	}
	return s
}

// balanceOver makes the writers' requests go round robin over the
// nodes when balance is BalanceRequest.
func (s *raftcatSystem) balanceOver(balance string) {
	if balance == BalanceRequest {
		s.balance = newRoundRobin(s.urls)
	}
}

// leanWriters are the lean client's writers, each keeping to one node,
// on the cluster of another raftcat system (AgainstLean); the cluster
// stays that system's.
type leanWriters struct{ *raftcatSystem }

// leanBeside is the lean client on rc's cluster, with tables of its own.
func leanBeside(rc *raftcatSystem) leanWriters {
	return leanWriters{&raftcatSystem{label: "lean", urls: rc.urls, leader: rc.leader, leaderTarget: rc.leaderTarget,
		token: rc.token, tls: rc.tls, http: rc.http, cluster: rc.cluster, client: ClientLean, clients: rc.clients}}
}

func (l leanWriters) close() {} // the cluster is the other system's

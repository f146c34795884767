package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftcat/raftcat/internal/localcluster"
)

const tablesPath = "/api/2.1/unity-catalog/delta/v1/catalogs/unity/schemas/default/tables/"

// raftcatSystem drives the Delta API of a cluster.
type raftcatSystem struct {
	label  string // its name in the results: raftcat, auth-off or tls-off
	urls   []string
	tables []string // URLs of the workload's tables
	acked  tableCounts
	leader bool
	// leaderTarget is the node every request went to with --target leader.
	leaderTarget string
	token        bearer      // sent with every request
	tls          *tls.Config // trusts a secure cluster's CA (nil: plain HTTP)
	http         *http.Client
	cluster      *localcluster.Cluster // nil for a cluster given by URL
	// client is the writers' HTTP client (Config.Client) and clients how
	// many writers there are; with ClientNetHTTP they share pooled.
	client     string
	clients    int
	pooled     *http.Client
	pooledOnce sync.Once
	// balance, with Config.Balance "request", sends each writer's
	// request to the next node (nil: each writer keeps to its node).
	balance *roundRobin
}

// openRaftcat opens the cluster at cfg.URLs, or starts one.
func openRaftcat(ctx context.Context, cfg Config, log io.Writer) (*raftcatSystem, error) {
	return startRaftcat(ctx, cfg, "raftcat", log)
}

// startRaftcat opens the cluster at cfg.URLs, sending it cfg.Token, or
// starts three nodes in the directory label under cfg.Dir: with
// cfg.Auth "token", with authentication on and cfg.Token (or a random
// token) as the admin token that every request then carries; with
// cfg.Secure, with TLS, mutual TLS between nodes and encrypted gossip too.
func startRaftcat(ctx context.Context, cfg Config, label string, log io.Writer) (*raftcatSystem, error) {
	s := &raftcatSystem{label: label, urls: cfg.URLs, leader: cfg.Leader, client: cfg.Client, clients: cfg.Clients}
	opts := localcluster.Options{Bin: cfg.Bin, Dir: filepath.Join(cfg.Dir, label), Nodes: 3, Flags: cfg.ServeFlags,
		Secure: cfg.Secure}
	switch {
	case len(s.urls) > 0:
		s.token = bearer(cfg.Token)
	case cfg.Auth == AuthToken:
		opts.AdminToken = cmp.Or(cfg.Token, localcluster.NewToken())
		s.token = bearer(opts.AdminToken)
	}
	s.setClient(cfg.TLS)
	if len(s.urls) > 0 {
		s.balanceOver(cfg.Balance)
		return s, localcluster.WaitReadyWith(ctx, s.http, s.urls)
	}
	auth := ""
	if opts.AdminToken != "" {
		auth = fmt.Sprintf(" with authentication on (admin token in %s)", filepath.Join(opts.Dir, localcluster.AdminTokenFile))
	}
	if opts.Secure {
		auth += fmt.Sprintf(", TLS, mutual TLS between nodes and encrypted gossip (CA in %s)", filepath.Join(opts.Dir, localcluster.TLSDir))
	}
	fmt.Fprintf(log, "bench: starting a three-node raftcat cluster in %s%s\n", opts.Dir, auth)
	cl, err := localcluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.cluster, s.urls = cl, cl.URLs()
	s.setClient(cl.ClientTLS())
	s.balanceOver(cfg.Balance)
	fmt.Fprintf(log, "bench: nodes %s\n", strings.Join(s.urls, " "))
	if u, err := s.leaderURL(ctx, 0); err == nil {
		fmt.Fprintf(log, "bench: leader %s\n", u)
	}
	return s, nil
}

func (s *raftcatSystem) name() string { return s.label }

// setClient makes the shared HTTP client, trusting what c trusts.
func (s *raftcatSystem) setClient(c *tls.Config) {
	s.tls = c
	s.http = &http.Client{Timeout: 30 * time.Second, Transport: s.token.transport(
		&http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute, TLSClientConfig: c})}
}

// newConn is a writer's own connection to the cluster: with requests
// balanced over the nodes, one to each node; with the net/http client,
// the pool the writers share.
func (s *raftcatSystem) newConn() *connClient {
	c := newConnClient(s.token, s.tls)
	c.perNode = s.balance != nil
	if s.client == ClientNetHTTP {
		c.pooled = s.pooledClient()
	}
	return c
}

// authName is how the requests authenticated: token or none.
func (s *raftcatSystem) authName() string {
	if s.token != "" {
		return AuthToken
	}
	return "none"
}

func (s *raftcatSystem) verify(ctx context.Context, f inFlight) error {
	return s.acked.check(func(t int) (int64, error) {
		w := &deltaWriter{s: s, url: s.tables[t]}
		return w.load(ctx)
	}, f)
}

func (s *raftcatSystem) pids() []int {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Pids()
}

func (s *raftcatSystem) close() {
	if s.cluster != nil {
		s.cluster.Stop()
	}
}

// leaderURL finds the node that passes the leader check (GET
// /readyz?leader), as a load balancer routing to the leader would; a
// leader missing from the URLs given is found where the others say it
// is. A new leader passes once it is ready, so the search goes on for up
// to wait.
func (s *raftcatSystem) leaderURL(ctx context.Context, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	for {
		named := ""
		for _, u := range s.urls {
			leads, addr := s.leaderCheck(ctx, u)
			if leads {
				return u, nil
			}
			if addr != "" {
				named = "http://" + addr
			}
		}
		if named != "" && !slices.Contains(s.urls, named) {
			if leads, _ := s.leaderCheck(ctx, named); leads {
				return named, nil
			}
		}
		if !time.Now().Before(deadline) {
			return "", fmt.Errorf("no node passes the leader check (GET /readyz?leader)")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// leaderCheck asks the node at u whether it is the ready leader (an older
// version without the check answers no), and otherwise which node leads.
func (s *raftcatSystem) leaderCheck(ctx context.Context, u string) (leads bool, leaderAddr string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var buf bytes.Buffer
	code, body, err := s.send(ctx, http.MethodGet, u+"/readyz?leader", nil, &buf)
	if err != nil {
		return false, ""
	}
	var answer struct {
		Status     string `json:"status"`
		LeaderHTTP string `json:"leader_http_addr"`
	}
	_ = json.Unmarshal(body, &answer)
	return code == http.StatusOK && answer.Status == "leader", answer.LeaderHTTP
}

// targets are the nodes the clients talk to: every node, or with
// --target leader the one passing the leader check (found once).
func (s *raftcatSystem) targets(ctx context.Context) ([]string, error) {
	if !s.leader {
		return s.urls, nil
	}
	if s.leaderTarget == "" {
		u, err := s.leaderURL(ctx, 10*time.Second)
		if err != nil {
			return nil, err
		}
		s.leaderTarget = u
	}
	return []string{s.leaderTarget}, nil
}

// createAll runs create for every table index, 16 at a time, and returns
// the first error.
func createAll(ctx context.Context, tables int, create func(i int) error) error {
	return createEach(ctx, tables, 16, create)
}

// createEach runs create for every table index, at most workers at a
// time, and returns the first error.
func createEach(ctx context.Context, tables, workers int, create func(i int) error) error {
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < min(tables, workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < tables && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := create(i); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

func (s *raftcatSystem) prepare(ctx context.Context, tables, clients int) ([]committer, error) {
	targets, err := s.targets(ctx)
	if err != nil {
		return nil, err
	}
	run := fmt.Sprintf("bench_%d", time.Now().UnixNano()%1e12)
	names := make([]string, tables)
	uuids := make([]string, tables)
	err = createAll(ctx, tables, func(i int) error {
		names[i] = fmt.Sprintf("%s_%d", run, i)
		id, err := s.create(targets[i%len(targets)], names[i])
		uuids[i] = id
		return err
	})
	if err != nil {
		return nil, err
	}
	s.acked = make(tableCounts, tables)
	for _, n := range names {
		s.tables = append(s.tables, targets[0]+tablesPath+n)
	}
	out := make([]committer, clients)
	for i := range out {
		t := i % tables
		out[i] = &deltaWriter{s: s, conn: s.newConn(), url: targets[i%len(targets)] + tablesPath + names[t], uuid: uuids[t], id: i, acked: &s.acked[t],
			encodeJSON: s.client == ClientNetHTTP}
	}
	return out, nil
}

// create stages and creates a managed Delta table and returns its uuid.
func (s *raftcatSystem) create(base, name string) (string, error) {
	var st struct {
		ID         string            `json:"table-id"`
		Location   string            `json:"location"`
		Protocol   json.RawMessage   `json:"required-protocol"`
		Properties map[string]string `json:"required-properties"`
	}
	staging := strings.Replace(base+tablesPath, "/tables/", "/staging-tables", 1)
	if code, err := s.do(http.MethodPost, staging, map[string]any{"name": name}, &st); err != nil || code != http.StatusOK {
		return "", fmt.Errorf("stage %s: status %d: %v", name, code, err)
	}
	body := map[string]any{"name": name, "location": st.Location, "table-type": "MANAGED",
		"last-commit-timestamp-ms": 1, "protocol": st.Protocol, "properties": st.Properties,
		"columns": map[string]any{"type": "struct", "fields": []any{
			map[string]any{"name": "id", "type": "long", "nullable": false, "metadata": map[string]any{}}}}}
	if code, err := s.do(http.MethodPost, strings.TrimSuffix(base+tablesPath, "/"), body, nil); err != nil || code != http.StatusOK {
		return "", fmt.Errorf("create %s: status %d: %v", name, code, err)
	}
	return st.ID, nil
}

// do sends a JSON request and decodes a 200 answer into out.
func (s *raftcatSystem) do(method, url string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	var buf bytes.Buffer
	code, answer, err := s.send(context.Background(), method, url, rd, &buf)
	if err == nil && code == http.StatusOK && out != nil {
		err = json.Unmarshal(answer, out)
	}
	return code, err
}

// send makes one request and reads the whole answer into buf (reading it
// to the end lets the connection be reused).
func (s *raftcatSystem) send(ctx context.Context, method, url string, body io.Reader, buf *bytes.Buffer) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes(), err
}

// sendOn is send on a writer's own connection, or on the shared client
// when c is nil (one-off requests, such as a verifier's loads).
func (s *raftcatSystem) sendOn(ctx context.Context, c *connClient, method, url string, body io.Reader, buf *bytes.Buffer) (int, []byte, error) {
	url = s.balance.route(url)
	if c == nil {
		return s.send(ctx, method, url, body, buf)
	}
	return c.send(ctx, method, url, body, buf)
}

// deltaWriter is one Delta writer: it loads the table, then asks for
// add-commit of the next version asserting the table uuid and reporting
// the previous version as published, so the unbackfilled-commit limit
// never bites.
type deltaWriter struct {
	s     *raftcatSystem
	conn  *connClient // nil: the shared client
	url   string
	uuid  string
	id    int
	seq   int
	buf   bytes.Buffer
	acked *atomic.Int64
	times requestTimes
	// encodeJSON makes the commits and reads the loads with
	// encoding/json, as a Go service does (the net/http client's
	// writers), instead of by hand.
	encodeJSON bool
}

func (w *deltaWriter) requests() *requestTimes { return &w.times }
func (w *deltaWriter) closeConn()              { w.conn.close() }

var latestField = []byte(`"latest-table-version":`)

func (w *deltaWriter) commit(ctx context.Context) (int, error) {
	conflicts := 0
	for {
		latest, err := w.load(ctx)
		if err != nil {
			return conflicts, err
		}
		w.seq++
		body := w.commitBody(latest+1, time.Now().UnixMilli())
		start := time.Now()
		// A commit once sent is waited for, also when the window ends: a
		// cancelled one would leave its outcome unknown.
		code, answer, err := w.do(context.WithoutCancel(ctx), http.MethodPost, body)
		w.times.attempts.since(start)
		switch {
		case err != nil:
			return conflicts, fmt.Errorf("commit: %v", err)
		case code == http.StatusOK:
			w.acked.Add(1)
			return conflicts, nil
		case code == http.StatusConflict:
			conflicts++ // another writer took the version: reload and retry
		case code == http.StatusInternalServerError && bytes.Contains(answer, []byte("CommitStateUnknownException")):
			// CommitStateUnknown: the version was taken and already
			// reported published, and the catalog cannot compare commit
			// files (this writer writes none). This exact request (its
			// file name is unique) was never applied before, so it is a
			// conflict: reload and retry.
			conflicts++
		default:
			return conflicts, fmt.Errorf("commit: status %d", code)
		}
	}
}

// do sends one request to the table and reads the answer into the
// writer's buffer.
func (w *deltaWriter) do(ctx context.Context, method string, body io.Reader) (int, []byte, error) {
	return w.s.sendOn(ctx, w.conn, method, w.url, body, &w.buf)
}

// load returns the table's latest version, reading just that field of
// the answer.
func (w *deltaWriter) load(ctx context.Context) (int64, error) {
	start := time.Now()
	code, b, err := w.do(ctx, http.MethodGet, nil)
	w.times.loads.since(start)
	if err != nil || code != http.StatusOK {
		return 0, fmt.Errorf("load: status %d: %v", code, err)
	}
	if w.encodeJSON {
		return decodeLatest(b)
	}
	i := bytes.Index(b, latestField)
	if i < 0 {
		return 0, fmt.Errorf("load: no latest-table-version in %.200s", b)
	}
	b = b[i+len(latestField):]
	end := bytes.IndexAny(b, ",}")
	if end < 0 {
		return 0, fmt.Errorf("load: bad latest-table-version")
	}
	return strconv.ParseInt(string(bytes.TrimSpace(b[:end])), 10, 64)
}

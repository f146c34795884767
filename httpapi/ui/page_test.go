package ui

import (
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/ucrest"
	"github.com/raftcat/raftcat/internal/fakecluster"
	"github.com/raftcat/raftcat/internal/logging"
)

// These fast tests serve the page on a fake data path (no raft); the
// status it shows comes from fakeSource, and the other members are plain
// HTTP servers answering /v1/cluster. browser_test.go and
// overview_test.go show it on a real three-node cluster.

// fakeSource is a node's view of the cluster, set by the test.
type fakeSource struct {
	mu   sync.Mutex
	st   clusterapi.Status
	done chan struct{}
	data httpapi.DataPath // whose state is counted (startPage sets it)
}

func (f *fakeSource) Status() clusterapi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	st.Members = slices.Clone(f.st.Members)
	return st
}

func (f *fakeSource) Done() <-chan struct{} { return f.done }

func (f *fakeSource) CommandsApplied() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.CommandsApplied
}

func (f *fakeSource) ObjectCounts() (objects, tables map[string]int) {
	st, _ := f.data.StaleState()
	return st.ObjectCounts(), st.TablesByFormat()
}

func (f *fakeSource) addApplied(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.CommandsApplied += n
}

// peer serves st as a member's /v1/cluster answer and returns its address.
func peer(t *testing.T, st clusterapi.Status) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/cluster" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// threeMembers is node1's view (it leads, commit 100) of node1, node2 (a
// follower that applied 95) and node3 (not answering).
func threeMembers(t *testing.T) *fakeSource {
	node2 := peer(t, clusterapi.Status{NodeID: "node2", State: "Follower", LeaderID: "node1", Term: 3,
		CommitIndex: 100, AppliedIndex: 95, LastContactMs: 12})
	src := &fakeSource{done: make(chan struct{}), st: clusterapi.Status{NodeID: "node1", State: "Leader", LeaderID: "node1",
		Term: 3, CommitIndex: 100, AppliedIndex: 100,
		LeaderChanges: []clusterapi.LeaderChange{{AtUnixMs: 1000, Term: 2, LeaderID: "node3"}, {AtUnixMs: 2000, Term: 3, LeaderID: "node1"}},
		Members: []clusterapi.Member{
			{ID: "node1", HTTPAddr: "127.0.0.1:1", Status: "alive", Voter: true, Leader: true},
			{ID: "node2", HTTPAddr: node2, Status: "alive", Voter: true},
			{ID: "node3", HTTPAddr: closedAddr(t), Status: "failed", Voter: true},
		}}}
	t.Cleanup(func() { close(src.done) })
	return src
}

// startPage serves the status page (and UC REST, for writes to time) on
// a fake data path and returns its base URL.
func startPage(t *testing.T, src *fakeSource, recent *logging.Recent) string {
	node := fakecluster.New("node1", "file://"+t.TempDir()+"/warehouse")
	src.data = node
	core := httpapi.New(node, httpapi.Config{Logger: slog.New(slog.DiscardHandler)})
	ucrest.Register(core)
	Register(core, src, Config{Recent: recent})
	srv := httptest.NewServer(core.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// overviewJSON is the part of /ui/api/overview the tests read.
type overviewJSON struct {
	NodeID        string                    `json:"node_id"`
	Role          string                    `json:"role"`
	Members       []member                  `json:"members"`
	LeaderChanges []clusterapi.LeaderChange `json:"leader_changes"`
	Metrics       struct {
		Series []point  `json:"series"`
		P99Ms  *float64 `json:"p99_ms"`
	} `json:"metrics"`
	TablesByFormat map[string]int   `json:"tables_by_format"`
	ObjectCounts   map[string]int   `json:"object_counts"`
	Errors         errorsViewJSON   `json:"recent_errors"`
	Autopilot      *json.RawMessage `json:"autopilot"`
}

type errorsViewJSON struct {
	Kept    bool             `json:"kept"`
	Records []logging.Record `json:"records"`
}

func getOverview(t *testing.T, base string) overviewJSON {
	t.Helper()
	resp := get(t, base+"/ui/api/overview")
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("overview: %d %s", resp.StatusCode, raw)
	}
	var o overviewJSON
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("overview: %v\n%s", err, raw)
	}
	return o
}

func TestFastOverviewShowsEveryMemberWithItsLag(t *testing.T) {
	base := startPage(t, threeMembers(t), nil)
	o := getOverview(t, base)
	if o.NodeID != "node1" || o.Role != "leader" || len(o.Members) != 3 {
		t.Fatalf("overview = %+v", o)
	}
	n1, n2, n3 := o.Members[0], o.Members[1], o.Members[2]
	if !n1.Self || n1.Role != "leader" || n1.Lag == nil || *n1.Lag != 0 {
		t.Errorf("node1 = %+v, want this node, leading, in sync", n1)
	}
	if !n2.Reachable || n2.Role != "follower" || n2.Lag == nil || *n2.Lag != 5 || *n2.LastContactMs != 12 {
		t.Errorf("node2 = %+v, want a reachable follower 5 behind", n2)
	}
	if n3.Reachable || n3.Role != "unknown" || n3.Lag != nil || n3.Term != nil || !strings.Contains(n3.Error, "unreachable") {
		t.Errorf("node3 = %+v, want unreachable, with no figures", n3)
	}
	if len(o.LeaderChanges) != 2 || o.LeaderChanges[0].LeaderID != "node1" {
		t.Errorf("leader changes = %+v, want newest first", o.LeaderChanges)
	}
}

func TestFastOverviewCountsTablesWritesAndErrors(t *testing.T) {
	recent := logging.NewRecent(10)
	log, err := logging.New(io.Discard, "text", slog.LevelInfo, recent)
	if err != nil {
		t.Fatal(err)
	}
	log.Warn("first", "k", "v")
	log.Error("second")
	base := startPage(t, threeMembers(t), recent)
	body := `{"name": "pq", "catalog_name": "unity", "schema_name": "default", "table_type": "EXTERNAL",
		"data_source_format": "PARQUET", "storage_location": "/data/pq/", "columns": []}`
	r, err := http.Post(base+"/api/2.1/unity-catalog/tables", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("create table: %d %s", r.StatusCode, raw)
	}
	var o overviewJSON
	waitFor(t, 10*time.Second, "the write's latency", func() bool {
		o = getOverview(t, base)
		return o.Metrics.P99Ms != nil
	})
	if o.TablesByFormat["PARQUET"] != 1 || o.ObjectCounts["table"] != 1 || len(o.Metrics.Series) < 120 {
		t.Errorf("tables %v, objects %v, %d points", o.TablesByFormat, o.ObjectCounts, len(o.Metrics.Series))
	}
	recs := o.Errors.Records
	if !o.Errors.Kept || len(recs) != 2 || recs[0].Message != "second" || recs[1].Attrs["k"] != "v" {
		t.Errorf("recent errors = %+v, want both, newest first", o.Errors)
	}
}

func TestFastOverviewSaysWhenNoErrorsAreKept(t *testing.T) {
	o := getOverview(t, startPage(t, threeMembers(t), nil))
	if o.Errors.Kept || o.Errors.Records == nil || len(o.Errors.Records) != 0 {
		t.Fatalf("recent errors = %+v, want none kept", o.Errors)
	}
}

// waitFor polls cond until it holds, or fails t after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noRedirects reads redirects instead of following them.
var noRedirects = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, url string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestFastPageIsServedFromEmbeddedFiles(t *testing.T) {
	base := startPage(t, threeMembers(t), nil)
	if r := get(t, base+"/ui"); r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui: %d to %q, want a redirect to /ui/", r.StatusCode, r.Header.Get("Location"))
	}
	page := get(t, base+"/ui/")
	body, _ := io.ReadAll(page.Body)
	if page.StatusCode != http.StatusOK || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page.Header.Get("Content-Security-Policy"), "default-src 'none'") || !strings.Contains(string(body), "static/app.js") {
		t.Errorf("/ui/: %d %v\n%s", page.StatusCode, page.Header, body)
	}
	js := get(t, base+"/ui/static/app.js")
	if js.StatusCode != http.StatusOK || !strings.Contains(js.Header.Get("Content-Type"), "javascript") || js.Header.Get("ETag") == "" {
		t.Errorf("app.js: %d %v", js.StatusCode, js.Header)
	}
	if again := get(t, base+"/ui/static/app.js", "If-None-Match", js.Header.Get("ETag")); again.StatusCode != http.StatusNotModified {
		t.Errorf("app.js revalidated: %d, want 304", again.StatusCode)
	}
	missing := get(t, base+"/ui/static/nope.js")
	body, _ = io.ReadAll(missing.Body)
	if missing.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"code":404`) {
		t.Errorf("missing file: %d %s", missing.StatusCode, body)
	}
}

// The page loads nothing from elsewhere: the only absolute URL in its
// files is SVG's namespace.
func TestFastPageNeedsNoExternalResources(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(`)
	err := fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := fs.ReadFile(assets, path)
		for _, m := range external.FindAllString(string(data), -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s refers to %q", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFastSamplerCountsAppliedCommandsUntilTheNodeIsDone(t *testing.T) {
	src := &fakeSource{done: make(chan struct{})}
	m := newMetrics()
	stopped := make(chan struct{})
	go func() {
		m.sample(src, 5*time.Millisecond)
		close(stopped)
	}()
	waitFor(t, 10*time.Second, "applied commands to be counted", func() bool {
		src.addApplied(10)
		return m.commands.Rate(time.Now(), time.Minute) > 0
	})
	close(src.done)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the sampler still runs after the node is done")
	}
}

func TestFastOnlyOtherProtocolsWritesAreTimed(t *testing.T) {
	m := newMetrics()
	for _, info := range []httpapi.RequestInfo{
		{Protocol: "delta", Route: "/x", Method: http.MethodPost},
		{Protocol: "ucrest", Route: "/y", Method: http.MethodDelete},
		{Protocol: "delta", Route: "/x", Method: http.MethodGet},
		{Protocol: "admin", Route: "/v1/cluster/leave", Method: http.MethodPost},
		{Protocol: "ui", Route: "/ui/", Method: http.MethodPost},
		{Protocol: "admin", Route: "unmatched", Method: http.MethodPut},
	} {
		info.Duration = time.Millisecond
		m.observeRequest(info)
	}
	if _, n := m.writes.Quantile(time.Now(), time.Minute, 0.99); n != 2 {
		t.Fatalf("timed %d writes, want the delta POST and the ucrest DELETE", n)
	}
}

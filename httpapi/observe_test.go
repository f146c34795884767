package httpapi_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/raftcat/raftcat/internal/logging"
	"github.com/raftcat/raftcat/internal/metrics"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// scrape reads a node's /metrics with the Prometheus text parser.
func scrape(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapeAs(t, base, "")
}

// scrapeAs scrapes with a bearer token ("" for none).
func scrapeAs(t testing.TB, base, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// sum adds up a counter's (or a histogram's sample count's) series whose
// labels include want.
func sum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var total float64
	for _, m := range fams[name].GetMetric() {
		if !metrics.HasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		}
	}
	return total
}

func TestMetricsUnderCommitLoad(t *testing.T) {
	t.Parallel()
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	leader := testcluster.Leader(t, nodes)
	follower := testcluster.Followers(nodes, leader)[0]
	before := scrape(t, leader.URL)

	a := &api{t: t, base: follower.URL}
	var tables []*managedTable
	for range 4 {
		m := a.newManaged()
		for v := int64(1); v <= 5; v++ {
			m.mustUpdate("", commit(v))
		}
		tables = append(tables, m)
	}

	a.do(http.MethodGet, "/no/such/"+tables[0].tbl, nil)
	a.do(http.MethodGet, sharingPrefix+"/shares", nil)
	a.do(http.MethodGet, sharingPrefix+"/shares", nil, "Authorization", "Bearer not-a-token")
	a.do(http.MethodGet, deltaPrefix+"/no/such/"+tables[0].tbl, nil)
	after := scrape(t, leader.URL)
	route := map[string]string{"protocol": "delta", "method": "POST", "code": "200", "forwarded": "true"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		least  float64
	}{
		{"raftcat_http_requests_total", route, 20},
		{"raftcat_http_request_duration_seconds", map[string]string{"protocol": "delta", "method": "POST", "forwarded": "true"}, 20},
		{"raftcat_group_commit_batch_size", nil, 20},
		{"raftcat_fsm_commands_applied_total", nil, 20},
		{"raftcat_relay_requests_total", nil, 20},
	} {
		if got := sum(after, c.name, c.labels) - sum(before, c.name, c.labels); got < c.least {
			t.Errorf("%s%v moved by %v under 20 commits, want at least %v", c.name, c.labels, got, c.least)
		}
	}
	for _, reason := range []string{"missing", "invalid"} {
		if got := sum(after, "raftcat_auth_failures_total", map[string]string{"protocol": "sharing", "reason": reason}); got != 1 {
			t.Errorf("raftcat_auth_failures_total{protocol=sharing,reason=%s} = %v, want 1", reason, got)
		}
	}
	onFollower := scrape(t, follower.URL)
	if got := sum(onFollower, "raftcat_forwarded_requests_total", map[string]string{"outcome": "answered"}); got < 20 {
		t.Errorf("the follower forwarded %v requests, want at least 20", got)
	}
	if got := sum(onFollower, "raftcat_http_requests_total", map[string]string{"protocol": "delta", "method": "POST", "forwarded": "false"}); got < 20 {
		t.Errorf("the follower counted %v of the commits its clients sent, want at least 20", got)
	}
	if got := sum(onFollower, "raftcat_http_requests_total", map[string]string{"route": "unmatched", "code": "404"}); got < 2 {
		t.Errorf("requests for unknown paths counted %v times under route=unmatched, want 2", got)
	}
	checkBoundedLabels(t, onFollower, tables[0].tbl, tables[0].uuid)
	for _, name := range []string{"raftcat_raft_commitTime", "raftcat_raft_leader_dispatchLog",
		"raftcat_build_info", "raftcat_raft_apply_lag_entries", "raftcat_raft_term", "raftcat_autopilot_failure_tolerance"} {
		if after[name] == nil {
			t.Errorf("%s is missing from the leader's /metrics", name)
		}
	}
	if got := sum(after, "raftcat_fsm_tables", map[string]string{"format": "DELTA"}); got < 1 {
		t.Errorf("raftcat_fsm_tables{format=DELTA} = %v", got)
	}
	checkBoundedLabels(t, after, tables[0].tbl, tables[0].uuid)
}

// checkBoundedLabels fails on label values that name objects (a raw
// path, a table's name or id) and on label sets that grow beyond a
// cluster's fixed dimensions.
func checkBoundedLabels(t *testing.T, fams map[string]*dto.MetricFamily, objectNames ...string) {
	t.Helper()
	values := map[string]map[string]bool{} // label name -> values seen
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "le" || l.GetName() == "quantile" {
					continue // fixed by each histogram's or summary's buckets
				}
				for _, o := range objectNames {
					if strings.Contains(l.GetValue(), o) {
						t.Errorf("%s{%s=%q} names an object", name, l.GetName(), l.GetValue())
					}
				}
				if values[l.GetName()] == nil {
					values[l.GetName()] = map[string]bool{}
				}
				values[l.GetName()][l.GetValue()] = true
			}
		}
	}
	for label, vs := range values {
		if len(vs) > 64 {
			t.Errorf("label %s has %d values", label, len(vs))
		}
	}
}

func TestRequestIDCrossesTheRelay(t *testing.T) {
	t.Parallel()
	logs := map[string]*logBuffer{}
	var mu sync.Mutex
	nodes := testcluster.Start(t, 3, testcluster.Options{Logger: func(id string) *slog.Logger {
		mu.Lock()
		defer mu.Unlock()
		logs[id] = &logBuffer{}
		log, _ := logging.New(logs[id], "json", slog.LevelDebug, nil)
		return log
	}})
	leader := testcluster.Leader(t, nodes)
	follower := testcluster.Followers(nodes, leader)[0]
	a := &api{t: t, base: follower.URL}

	id := fmt.Sprintf("req-%s-1", t.Name())
	r := a.do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": "c_" + strings.ToLower(uniq("rid"))}, "X-Request-Id", id)
	if r.status != http.StatusOK || r.header.Get("X-Request-Id") != id {
		t.Fatalf("POST through the follower: %d %q %s", r.status, r.header.Get("X-Request-Id"), r.raw)
	}
	mu.Lock()
	leaderLog, followerLog := logs[leader.ID()], logs[follower.ID()]
	mu.Unlock()
	for who, l := range map[string]*logBuffer{"leader": leaderLog, "follower": followerLog} {
		line := firstLine(l.Lines(`"request_id":"` + id + `"`))
		if line == "" || !strings.Contains(line, `"msg":"request"`) {
			t.Errorf("the %s logged no request line with the request's id:\n%s", who, strings.Join(l.Lines(), "\n"))
		}
	}
	if !strings.Contains(firstLine(leaderLog.Lines(`"request_id":"`+id+`"`)), `"forwarded":true`) {
		t.Errorf("the leader's line for the request does not say it was forwarded")
	}

	r = a.do(http.MethodGet, apiPrefix+"/catalogs", nil)
	if got := r.header.Get("X-Request-Id"); len(got) < 16 {
		t.Fatalf("a request without an id was answered with X-Request-Id %q", got)
	}
	bad := strings.Repeat("x", 200)
	if got := a.do(http.MethodGet, apiPrefix+"/catalogs", nil, "X-Request-Id", bad).header.Get("X-Request-Id"); got == bad || got == "" {
		t.Fatalf("an over-long request id was kept: %q", got)
	}
}

// firstLine is the first of lines, or "".
func firstLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

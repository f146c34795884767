// Package deploy_test checks the monitoring files in deploy/ against a
// live cluster: every metric the alert rules and the Grafana dashboard
// use must be one that /metrics exposes, promtool must accept the rules
// and pass their unit tests, and raftcat's own metric names must pass
// promtool's lint.
package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/raftcat/raftcat/internal/testcluster"
)

const (
	rulesFile     = "prometheus/rules.yml"
	rulesTestFile = "prometheus/rules_test.yml"
	dashboardFile = "grafana/raftcat.json"
)

// The rules and the dashboard use only metrics that a running cluster
// exposes, once it has committed writes, written to object storage and
// taken raft snapshots; the exposition passes promtool's lint, but for
// the names raft and memberlist choose (their counters too end in
// _total). The cluster runs with
// authentication on, as in production: Prometheus scrapes with a token.
func TestMetricsExist(t *testing.T) {
	promtool := needPromtool(t)
	nodes := testcluster.Start(t, 3, testcluster.Options{SnapshotThreshold: 16, SnapshotInterval: 100 * time.Millisecond, TrailingLogs: 8,
		AdminToken: adminToken})
	leader := testcluster.Leader(t, nodes)
	exercise(t, nodes)
	testcluster.WaitFor(t, 30*time.Second, "a raft snapshot on every node", func() bool {
		for _, nd := range nodes {
			if nd.Status().LastSnapshotIndex == 0 {
				return false
			}
		}
		return true
	})
	commit := leader.Status().CommitIndex
	testcluster.WaitFor(t, 30*time.Second, "every node applying the writes", func() bool {
		for _, nd := range nodes {
			if nd.Status().AppliedIndex < commit {
				return false
			}
		}
		return true
	})

	exposed := map[string]bool{}
	for _, nd := range nodes {
		text := scrape(t, nd.URL+"/metrics")
		families := parse(t, nd.ID(), text)
		for name := range seriesNames(families) {
			exposed[name] = true
		}
		lint(t, promtool, nd.ID(), text, families)
	}

	rules := ruleFiles(t)
	used := usedNames(t, rules)
	for _, want := range []string{"raftcat_raft_has_leader", "raftcat_snapshot_failures_total", "raftcat:raft_leaders:sum"} {
		if _, ok := used[want]; !ok {
			t.Errorf("the name extractor did not find %s in the rules", want)
		}
	}
	dash := dashboardExprs(t)
	for _, want := range []string{"raftcat_fsm_commands_applied_total", "raftcat_http_request_duration_seconds_bucket", "go_goroutines"} {
		if _, ok := namesIn(dash)[want]; !ok {
			t.Errorf("the name extractor did not find %s in the dashboard", want)
		}
	}
	addNames(used, dash)
	for _, problem := range unknownNames(used, exposed, recordedNames(rules)) {
		t.Error(problem)
	}
	t.Logf("%d metric names used by %s, %s and %s; %d series names exposed", len(used), rulesFile, rulesTestFile, dashboardFile, len(exposed))
}

// promtool accepts the rules and their unit tests pass.
func TestRulesPromtool(t *testing.T) {
	promtool := needPromtool(t)
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// The dashboard is JSON Grafana can import: a data source variable that
// every panel uses, and job and instance variables.
func TestDashboardShape(t *testing.T) {
	var d struct {
		SchemaVersion int `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"list"`
		} `json:"templating"`
		Panels []panel `json:"panels"`
	}
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want a current one", d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["DS_PROMETHEUS"] != "datasource" || vars["job"] != "query" || vars["instance"] != "query" {
		t.Errorf("template variables %v, want DS_PROMETHEUS (datasource), job and instance (query)", vars)
	}
	ids := map[int]bool{}
	for _, p := range flatten(d.Panels) {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${DS_PROMETHEUS}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %q and %d targets, want ${DS_PROMETHEUS} and at least one", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, `job=~"$job"`) || !strings.Contains(tg.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q: %s does not select $job and $instance", p.Title, tg.Expr)
			}
		}
	}
}

// The checker reports what it should, so that TestMetricsExist can fail.
func TestUnknownNames(t *testing.T) {
	exposed := map[string]bool{"raftcat_raft_term": true, "raftcat_http_request_duration_seconds_bucket": true,
		"raftcat_raft_commitTime": true, "go_goroutines": true, "process_cpu_seconds_total": true}
	recorded := map[string]bool{"raftcat:http_requests:rate5m": true}
	for _, tc := range []struct {
		expr string
		want []string // names reported
	}{
		{`raftcat_raft_term{job=~"$job"}`, nil},
		{`rate(process_cpu_seconds_total[5m]) and go_goroutines > 10`, nil},
		{`histogram_quantile(0.99, sum by (le) (rate(raftcat_http_request_duration_seconds_bucket[$__rate_interval])))`, nil},
		{`raftcat_raft_commitTime{quantile="0.99"} > 100`, nil},
		{`raftcat:http_requests:rate5m > 1`, nil},
		{`raftcat_made_up_total + raftcat_raft_term`, []string{"raftcat_made_up_total"}},
		{`raftcat_http_request_duration_seconds`, []string{"raftcat_http_request_duration_seconds"}}, // a histogram has no bare series
		{`raftcat:not_recorded:rate5m`, []string{"raftcat:not_recorded:rate5m"}},
		{`go_gorutines`, []string{"go_gorutines"}},
		{`up{job="raftcat_made_up_total"} == 0`, nil}, // label values are not names
	} {
		used := map[string][]string{}
		addNames(used, map[string]string{tc.expr: "case"})
		problems := unknownNames(used, exposed, recorded)
		var got []string
		for _, p := range problems {
			got = append(got, strings.Fields(p)[0])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: reported %q, want %q", tc.expr, problems, tc.want)
		}
	}
}

// The lint filter lets through only go-metrics exports (described by
// their own name, under raftcat_raft_ or raftcat_memberlist_), and of
// those no counter without _total.
func TestLintFilter(t *testing.T) {
	promtool := needPromtool(t)
	text := []byte(`# HELP raftcat_raft_fooBar_total raftcat_raft_fooBar_total
# TYPE raftcat_raft_fooBar_total counter
raftcat_raft_fooBar_total 1
# HELP raftcat_memberlist_tcp_sent raftcat_memberlist_tcp_sent
# TYPE raftcat_memberlist_tcp_sent counter
raftcat_memberlist_tcp_sent 1
# HELP raftcat_raft_barBaz Described like one of ours.
# TYPE raftcat_raft_barBaz gauge
raftcat_raft_barBaz 1
# HELP raftcat_widgets Widgets made.
# TYPE raftcat_widgets counter
raftcat_widgets 1
# HELP raftcat_things_total Things made.
# TYPE raftcat_things_total counter
raftcat_things_total 1
`)
	problems, err := lintProblems(promtool, text, parse(t, "example", text))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		name, _, _ := strings.Cut(p, ":")
		got = append(got, name)
	}
	slices.Sort(got)
	if want := []string{"raftcat_memberlist_tcp_sent", "raftcat_raft_barBaz", "raftcat_widgets"}; !slices.Equal(got, want) {
		t.Errorf("lint problems %q, want ones about %q", problems, want)
	}
}

// needPromtool returns promtool's path; without it the test fails (CI
// installs Debian's prometheus package, which carries it).
// adminToken is the token of the metastore admin of the test's cluster;
// every request sends it.
const adminToken = "deploy-test-admin-token"

var bearer = testcluster.Bearer(adminToken)

func needPromtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (install Debian's prometheus package): %v", err)
	}
	return p
}

// exercise makes the cluster write: catalogs (through every node, so
// followers forward), an Iceberg namespace and table (object storage),
// and reads.
func exercise(t *testing.T, nodes []*testcluster.Node) {
	t.Helper()
	const uc = "/api/2.1/unity-catalog"
	for i := range 40 {
		nd := nodes[i%len(nodes)]
		r := testcluster.Do(t, http.MethodPost, nd.URL+uc+"/catalogs", map[string]any{"name": fmt.Sprintf("monitoring_%d", i)}, bearer...)
		if r.Status != http.StatusOK {
			t.Fatalf("create catalog through %s: status %d: %s", nd.ID(), r.Status, r.Raw)
		}
	}
	ice := nodes[1].URL + uc + "/iceberg/v1/unity"
	table := `{"name":"events","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`
	for _, req := range []struct{ method, url, body string }{
		{http.MethodPost, ice + "/namespaces", `{"namespace":["monitoring"]}`},
		{http.MethodPost, ice + "/namespaces/monitoring/tables", table},
		{http.MethodGet, ice + "/namespaces/monitoring/tables/events", ""},
		{http.MethodGet, nodes[2].URL + uc + "/catalogs/monitoring_1", ""},
	} {
		var body any
		if req.body != "" {
			body = req.body
		}
		if r := testcluster.Do(t, req.method, req.url, body, bearer...); r.Status != http.StatusOK {
			t.Fatalf("%s %s: status %d: %s", req.method, req.url, r.Status, r.Raw)
		}
	}
}

func scrape(t *testing.T, url string) []byte {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(bearer[0], bearer[1]) // as Prometheus's authorization: credentials
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, %v", url, resp.StatusCode, err)
	}
	return body
}

func parse(t *testing.T, node string, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parse %s's /metrics: %v", node, err)
	}
	return families
}

// seriesNames are the names of the series the families expose: a
// histogram's _bucket, _sum and _count, a summary's quantiles (its own
// name), _sum and _count.
func seriesNames(families map[string]*dto.MetricFamily) map[string]bool {
	names := map[string]bool{}
	for name, f := range families {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
		default:
			names[name] = true
		}
	}
	return names
}

// goMetricsExport reports whether a family is one raft, memberlist or
// the raft log store report through go-metrics: their Prometheus sinks
// describe each with its own name. Those names (camelCase) are upstream's
// choice and exempt from the lint, but for counters, which raftcat names
// with _total; every other family, raftcat's own included, must pass it.
func goMetricsExport(f *dto.MetricFamily) bool {
	name := f.GetName()
	if f.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total") {
		return false
	}
	return (strings.HasPrefix(name, "raftcat_raft_") || strings.HasPrefix(name, "raftcat_memberlist_")) && f.GetHelp() == name
}

// lint runs promtool check metrics on one node's exposition.
func lint(t *testing.T, promtool, node string, text []byte, families map[string]*dto.MetricFamily) {
	t.Helper()
	problems, err := lintProblems(promtool, text, families)
	if err != nil {
		t.Fatalf("promtool check metrics on %s's /metrics: %v", node, err)
	}
	for _, p := range problems {
		t.Errorf("promtool check metrics (%s): %s", node, p)
	}
}

// lintProblems returns promtool's findings on an exposition ("name:
// message"), but for the go-metrics exports.
func lintProblems(promtool string, text []byte, families map[string]*dto.MetricFamily) ([]string, error) {
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil, nil
	case !errors.As(err, &exit) || exit.ExitCode() != 3: // 3: lint problems found
		return nil, fmt.Errorf("%v\n%s", err, out.String())
	}
	var problems []string
	exempt := 0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		name, msg, _ := strings.Cut(line, " ")
		f, ok := families[name]
		switch {
		case !ok:
			problems = append(problems, line)
		case goMetricsExport(f):
			exempt++
		default:
			problems = append(problems, name+": "+msg)
		}
	}
	if exempt+len(problems) == 0 {
		return nil, fmt.Errorf("failed without naming a metric:\n%s", out.String())
	}
	return problems, nil
}

// ruleFile is the part of a Prometheus rule file (or a promtool test
// file) that names metrics.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
	Tests []struct {
		InputSeries []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		PromQLExprTest []struct {
			Expr       string `yaml:"expr"`
			ExpSamples []struct {
				Labels string `yaml:"labels"`
			} `yaml:"exp_samples"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

type rules struct{ rules, tests ruleFile }

func ruleFiles(t *testing.T) rules {
	t.Helper()
	var r rules
	for path, into := range map[string]*ruleFile{rulesFile: &r.rules, rulesTestFile: &r.tests} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if len(r.rules.Groups) == 0 || len(r.tests.Tests) == 0 {
		t.Fatalf("%s has no groups or %s no tests", rulesFile, rulesTestFile)
	}
	return r
}

// recordedNames are the names the recording rules define.
func recordedNames(r rules) map[string]bool {
	out := map[string]bool{}
	for _, g := range r.rules.Groups {
		for _, rule := range g.Rules {
			if rule.Record != "" {
				out[rule.Record] = true
			}
		}
	}
	return out
}

// usedNames maps each metric name the rules, and the series their unit
// tests feed them, use to where.
func usedNames(t *testing.T, r rules) map[string][]string {
	t.Helper()
	exprs := map[string]string{}
	for _, g := range r.rules.Groups {
		for _, rule := range g.Rules {
			exprs[rule.Expr] = fmt.Sprintf("%s: %s%s", rulesFile, rule.Record, rule.Alert)
		}
	}
	for i, tc := range r.tests.Tests {
		where := fmt.Sprintf("%s: test %d", rulesTestFile, i+1)
		for _, s := range tc.InputSeries {
			exprs[s.Series] = where
		}
		for _, e := range tc.PromQLExprTest {
			exprs[e.Expr] = where
			for _, s := range e.ExpSamples {
				exprs[s.Labels] = where
			}
		}
	}
	used := map[string][]string{}
	addNames(used, exprs)
	return used
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func flatten(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}

// dashboardExprs maps every query of the dashboard (panel targets and
// template variables) to where it is.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	exprs := map[string]string{}
	for _, p := range flatten(d.Panels) {
		for _, tg := range p.Targets {
			exprs[tg.Expr] = fmt.Sprintf("%s: panel %q", dashboardFile, p.Title)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs[v.Definition] = fmt.Sprintf("%s: variable %s", dashboardFile, v.Name)
		}
	}
	if len(exprs) < 20 {
		t.Fatalf("%s: only %d queries found", dashboardFile, len(exprs))
	}
	return exprs
}

var (
	// stringLiteral matches PromQL's quoted strings, which hold label
	// values, not metric names.
	stringLiteral = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	identifier    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// namesIn returns the metric names the expressions use, those of
// raftcat (raftcat_..., and recording rules raftcat:...), the Go runtime
// and the process, each with where it is used.
func namesIn(exprs map[string]string) map[string]string {
	out := map[string]string{}
	for expr, where := range exprs {
		for _, id := range identifier.FindAllString(stringLiteral.ReplaceAllString(expr, `""`), -1) {
			for _, prefix := range []string{"raftcat_", "raftcat:", "go_", "process_"} {
				if strings.HasPrefix(id, prefix) {
					out[id] = where
				}
			}
		}
	}
	return out
}

func addNames(used map[string][]string, exprs map[string]string) {
	for name, where := range namesIn(exprs) {
		used[name] = append(used[name], where)
	}
}

// unknownNames names each used metric that is neither exposed nor, for a
// name with a colon, defined by a recording rule.
func unknownNames(used map[string][]string, exposed, recorded map[string]bool) []string {
	var problems []string
	for name, where := range used {
		slices.Sort(where)
		where = slices.Compact(where)
		switch {
		case strings.Contains(name, ":"):
			if !recorded[name] {
				problems = append(problems, fmt.Sprintf("%s is not a recording rule of %s (used in %s)", name, rulesFile, strings.Join(where, "; ")))
			}
		case !exposed[name]:
			problems = append(problems, fmt.Sprintf("%s is not exposed at /metrics (used in %s)", name, strings.Join(where, "; ")))
		}
	}
	slices.Sort(problems)
	return problems
}

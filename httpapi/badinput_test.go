package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// A route's valid request, and the field that names what it creates or
// changes (the field each bad value goes into; "" when it has none).
type routeCase struct {
	body  string // a valid JSON object, keys in a fixed order
	field string
	// create is set where the field is required (a missing one must fail).
	create bool
}

// routeCases covers every route that takes a body. A route added without a
// case here fails the sweep, so it cannot be left out by accident.
var routeCases = map[string]routeCase{
	"POST " + apiPrefix + "/catalogs":            {`{"name":"sweep_c","comment":"c"}`, "name", true},
	"PATCH " + apiPrefix + "/catalogs/:name":     {`{"new_name":"sweep_c2","comment":"c"}`, "new_name", false},
	"POST " + apiPrefix + "/schemas":             {`{"name":"sweep_s","catalog_name":"unity"}`, "name", true},
	"PATCH " + apiPrefix + "/schemas/:full_name": {`{"new_name":"sweep_s2","comment":"c"}`, "new_name", false},
	"POST " + apiPrefix + "/tables": {`{"name":"sweep_t","catalog_name":"unity","schema_name":"default","table_type":"EXTERNAL",` +
		`"data_source_format":"DELTA","storage_location":"file:///data/sweep_t","columns":[{"name":"id","type_json":` +
		`"{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}","position":0}]}`, "name", true},
	"POST " + deltaPrefix + "/catalogs/:catalog/schemas/:schema/staging-tables": {`{"name":"sweep_st"}`, "name", true},
	"POST " + deltaPrefix + "/catalogs/:catalog/schemas/:schema/tables": {`{"name":"sweep_d","location":"file:///data/sweep_d",` +
		`"table-type":"EXTERNAL","data-source-format":"DELTA","columns":{"type":"struct","fields":[]},` +
		`"protocol":{"min-reader-version":1,"min-writer-version":2},"last-commit-timestamp-ms":1700000000000}`, "name", true},
	"POST " + deltaPrefix + "/catalogs/:catalog/schemas/:schema/tables/:table": {`{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-4000-8000-000000000000"}],` +
		`"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`, "", false},
	"POST " + deltaPrefix + "/catalogs/:catalog/schemas/:schema/tables/:table/rename":  {`{"new-name":"sweep_r"}`, "new-name", true},
	"POST " + deltaPrefix + "/catalogs/:catalog/schemas/:schema/tables/:table/metrics": {`{"report":{"type":"commit-report"}}`, "", false},
	"POST " + icebergPrefix + "/v1/:prefix/namespaces":                                 {`{"namespace":["sweep_ns"],"properties":{"k":"v"}}`, "namespace", true},
	"POST " + icebergPrefix + "/v1/:prefix/namespaces/:namespace/properties":           {`{"removals":["a"],"updates":{"k":"v"}}`, "removals", false},
	"POST " + icebergPrefix + "/v1/:prefix/namespaces/:namespace/tables": {`{"name":"sweep_i","schema":{"type":"struct",` +
		`"fields":[{"type":"long","id":1,"name":"id","required":true}],"schema-id":0},"properties":{"k":"v"}}`, "name", true},
	"POST " + icebergPrefix + "/v1/:prefix/namespaces/:namespace/register":              {`{"name":"sweep_reg","metadata-location":"file:///nowhere/x.metadata.json"}`, "name", true},
	"POST " + icebergPrefix + "/v1/:prefix/namespaces/:namespace/tables/:table":         {`{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`, "", false},
	"POST " + icebergPrefix + "/v1/:prefix/namespaces/:namespace/tables/:table/metrics": {`{"report-type":"scan-report"}`, "", false},
	"POST " + icebergPrefix + "/v1/:prefix/tables/rename": {`{"source":{"namespace":["default"],"name":"sweep"},` +
		`"destination":{"namespace":["default"],"name":"sweep_x"}}`, "", false},
	"POST " + icebergPrefix + "/v1/:prefix/transactions/commit": {`{"table-changes":[{"identifier":{"namespace":["default"],"name":"sweep"},` +
		`"requirements":[],"updates":[]}]}`, "", false},
	"POST " + icebergPrefix + "/v1/:prefix/namespaces/:namespace/views": {`{"name":"sweep_v","schema":{"type":"struct","schema-id":0,` +
		`"fields":[]},"view-version":{"version-id":1,"timestamp-ms":1700000000000,"schema-id":0,"summary":{},` +
		`"representations":[{"type":"sql","sql":"select 1","dialect":"spark"}],"default-namespace":["default"]},"properties":{}}`, "name", true},
	"POST " + icebergPrefix + "/v1/:prefix/namespaces/:namespace/views/:view": {`{"requirements":[],` +
		`"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`, "", false},
	"POST " + icebergPrefix + "/v1/:prefix/views/rename": {`{"source":{"namespace":["default"],"name":"sweep"},` +
		`"destination":{"namespace":["default"],"name":"sweep_v2"}}`, "", false},
	"POST " + apiPrefix + "/shares":                                                {`{"name":"sweep_sh","comment":"c"}`, "name", true},
	"PATCH " + apiPrefix + "/shares/:name":                                         {`{"comment":"c","updates":[{"action":"ADD","data_object":{"name":"unity.default.sweep"}}]}`, "comment", false},
	"PATCH " + apiPrefix + "/shares/:name/permissions":                             {`{"changes":[{"principal":"sweep_r","add":["SELECT"],"remove":[]}]}`, "", false},
	"POST " + apiPrefix + "/recipients":                                            {`{"name":"sweep_r","authentication_type":"TOKEN","comment":"c"}`, "name", true},
	"POST " + apiPrefix + "/recipients/:name/rotate-token":                         {`{"existing_token_expire_in_seconds":0}`, "", false},
	"POST " + apiPrefix + "/delta-sharing/url-signing-key/rotate":                  {`{}`, "", false},
	"POST " + sharingPrefix + "/shares/:share/schemas/:schema/tables/:table/query": {`{"version":1,"limitHint":2}`, "", false},
	"POST " + apiPrefix + "/transactions/commit": {`{"operations":[{"delta":{"catalog":"unity","schema":"default","name":"sweep",` +
		`"requirements":[],"updates":[]}}]}`, "", false},
	"POST " + lancePrefix + "/v1/namespace/:id/create":               {`{"mode":"Create","properties":{"k":"v"}}`, "mode", false},
	"POST " + lancePrefix + "/v1/namespace/:id/describe":             {`{"id":["x"]}`, "id", false},
	"POST " + lancePrefix + "/v1/namespace/:id/exists":               {`{"id":["x"]}`, "id", false},
	"POST " + lancePrefix + "/v1/namespace/:id/drop":                 {`{"mode":"Fail","behavior":"Restrict"}`, "behavior", false},
	"POST " + lancePrefix + "/v1/table/:id/declare":                  {`{"location":"file:///data/sweep_l"}`, "location", false},
	"POST " + lancePrefix + "/v1/table/:id/describe":                 {`{"version":1}`, "version", false},
	"POST " + lancePrefix + "/v1/table/:id/exists":                   {`{"version":1}`, "version", false},
	"POST " + lancePrefix + "/v1/table/:id/register":                 {`{"location":"file:///data/sweep_reg","mode":"Create"}`, "location", true},
	"POST " + lancePrefix + "/v1/table/:id/deregister":               {`{"id":["x"]}`, "id", false},
	"POST " + lancePrefix + "/v1/table/:id/drop":                     {`{"id":["x"]}`, "id", false},
	"POST " + lancePrefix + "/v1/table/:id/rename":                   {`{"new_table_name":"sweep_ren"}`, "new_table_name", true},
	"POST " + lancePrefix + "/v1/table/:id/version/list":             {`{}`, "", false},
	"POST " + lancePrefix + "/v1/table/:id/version/create":           {`{"version":1,"manifest_path":"x/_versions/1.manifest-a","naming_scheme":"V2"}`, "manifest_path", true},
	"POST " + lancePrefix + "/v1/table/:id/version/describe":         {`{"version":1}`, "version", false},
	"POST " + lancePrefix + "/v1/table/:id/version/delete":           {`{"ranges":[{"start_version":0,"end_version":1}]}`, "ranges", false},
	"POST " + lancePrefix + "/v1/table/version/batch-create":         {`{"entries":[{"id":["unity","default","sweep_l"],"version":1,"manifest_path":"x"}]}`, "entries", true},
	"POST " + lancePrefix + "/v1/table/batch-commit":                 {`{"operations":[{"declare_table":{"id":["unity","default","sweep_l"]}}]}`, "", false},
	"POST " + lancePrefix + "/*":                                     {`{}`, "", false},
	"PATCH " + lancePrefix + "/*":                                    {`{}`, "", false},
	"POST /v1/cluster/transfer-leadership":                           {`{"id":"node-x"}`, "id", false},
	"POST /v1/cluster/remove-node":                                   {`{"id":"node-x"}`, "id", true},
	"POST /v1/cluster/restore":                                       {`{"not":"a snapshot"}`, "", false},
	"POST /v1/cluster/gossip-keys":                                   {`{"op":"install","key":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}`, "key", true},
	"POST /v1/auth/principals":                                       {`{"name":"sweep_p","type":"user"}`, "name", true},
	"POST /v1/auth/tokens":                                           {`{"principal":"admin","ttl_seconds":60}`, "principal", false},
	"POST /v1/auth/signing-keys/rotate":                              {`{"grace_seconds":60}`, "", false},
	"PATCH " + apiPrefix + "/permissions/:securable_type/:full_name": {`{"changes":[{"principal":"sweep_p","add":["SELECT"],"remove":[]}]}`, "", false},
	"POST " + icebergPrefix + "/v1/oauth/tokens":                     {`{"grant_type":"client_credentials"}`, "", false},
}

// Routes the sweep leaves alone: leave stops the node it is sent to, the
// relay takes only upgrades, pprof is off.
var sweepSkips = []string{"POST /v1/cluster/leave", "GET /v1/cluster/relay"}

// setField returns body with field's value replaced by raw JSON.
func setField(body, field, raw string) string {
	re := regexp.MustCompile(`"` + regexp.QuoteMeta(field) + `":("(?:[^"\\]|\\.)*"|[^,}]*)`)
	return re.ReplaceAllLiteralString(body, `"`+field+`":`+raw)
}

func removeField(body, field string) string {
	re := regexp.MustCompile(`"` + regexp.QuoteMeta(field) + `":("(?:[^"\\]|\\.)*"|[^,}]*),?`)
	return strings.Replace(re.ReplaceAllLiteralString(body, ""), ",}", "}", 1)
}

// badBodies derives the bad requests of one route from its valid one.
func badBodies(rc routeCase) map[string]string {
	b := rc.body
	out := map[string]string{
		"malformed JSON":   b[:len(b)/2],
		"not an object":    "[" + b + "]",
		"trailing garbage": b + ` {"x":1}`,
		"deep nesting":     `{"x":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`,
		"duplicate keys":   `{"requirements":[],"requirements":[],` + b[1:],
		"invalid UTF-8":    `{"x":"bad` + "\xff\xfe" + `",` + b[1:],
	}
	if f := rc.field; f != "" {
		out["wrong type"] = setField(b, f, `5`)
		out["huge number"] = setField(b, f, `1e99999`)
		out["control characters"] = setField(b, f, `"a\u0000b\u0007"`)
		out["over-long name"] = setField(b, f, `"`+strings.Repeat("n", 300)+`"`)
		out["duplicate keys"] = `{"` + f + `":"sweep_dup",` + b[1:]
		out["invalid UTF-8"] = setField(b, f, "\"bad\xff\xfe\"")
		if rc.create {
			out["null"] = setField(b, f, `null`)
			out["missing field"] = removeField(b, f)
		}
	}
	return out
}

// badParams are path parameter values every route must refuse or not find.
var badParams = map[string]string{
	"over-long name":    strings.Repeat("p", 300),
	"control character": "a%00b",
	"bad escape":        "a%zzb",
}

var paramPattern = regexp.MustCompile(`:[a-z_]+`)

// fill gives a route's path parameters values naming what the cluster
// holds, except param, which gets value.
func fill(path, param, value string) string {
	return paramPattern.ReplaceAllStringFunc(path, func(p string) string {
		switch {
		case p == param:
			return value
		case p == ":catalog" || p == ":name" || p == ":prefix":
			return "unity"
		case p == ":schema" || p == ":namespace":
			return "default"
		case p == ":full_name" && strings.Contains(path, "/schemas/"):
			return "unity.default"
		case p == ":full_name":
			return "unity.default.sweep"
		case p == ":table":
			return "sweep"
		}
		return "x"
	})
}

// rawDo sends a request as bytes, so that paths no client would build (a
// bad escape) reach the server as they are; hdr are extra header lines
// ("Name: value").
func rawDo(t *testing.T, base, method, path, body string, hdr ...string) reply {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	extra := ""
	for _, h := range hdr {
		extra += h + "\r\n"
	}
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		method, path, extra, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// expect4xx checks a 4xx in the protocol's error envelope.
func expect4xx(t *testing.T, method, path string, r reply) {
	t.Helper()
	if r.status < 400 || r.status > 499 {
		t.Fatalf("status %d, want a 4xx: %.300s", r.status, r.raw)
	}
	if method == http.MethodHead {
		return
	}
	m, ok := r.body.(map[string]any)
	if !ok {
		t.Fatalf("answer is not a JSON object: %.300s", r.raw)
	}
	want := []string{"code", "error"}
	switch {
	case strings.HasSuffix(path, "/v1/oauth/tokens"): // OAuth2's own error shape
		want = []string{"error", "error_description"}
	case strings.HasPrefix(path, deltaPrefix), strings.HasPrefix(path, icebergPrefix):
		want = []string{"error"}
	case strings.HasPrefix(path, sharingPrefix):
		want = []string{"errorCode", "message"}
	case strings.HasPrefix(path, apiPrefix):
		want = []string{"details", "error_code", "message"}
	}
	if got := keys(m); !slices.Equal(got, want) {
		t.Fatalf("envelope keys %v, want %v: %.300s", got, want, r.raw)
	}
}

func stateDigest(t *testing.T, base string) string {
	t.Helper()
	r := rawDo(t, base, http.MethodGet, "/v1/cluster/state-digest", "")
	return str(t, r.obj(t)["digest"])
}

// TestEveryRouteRefusesBadInput derives bad requests from a valid one for
// every route that takes a body, and bad path parameters for every route,
// on a real node: every answer is a 4xx in the route's protocol envelope,
// and the state digest is the same afterwards.
func TestEveryRouteRefusesBadInput(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	base := nodes[0].URL
	testcluster.CreateManaged(t, base, base, "unity", "default", "sweep")
	before := stateDigest(t, base)
	for _, rt := range nodes[0].Routes() {
		route := rt.Method + " " + rt.Path
		if strings.HasPrefix(rt.Method, "echo_") || slices.Contains(sweepSkips, route) || strings.HasPrefix(rt.Path, "/debug") {
			continue
		}
		if rt.Method == http.MethodPost || rt.Method == http.MethodPatch {
			rc, ok := routeCases[route]
			if !ok {
				t.Errorf("route %s has no bad-input case", route)
				continue
			}
			for name, body := range badBodies(rc) {
				t.Run(route+" "+name, func(t *testing.T) {
					path := fill(rt.Path, "", "")
					expect4xx(t, rt.Method, path, rawDo(t, base, rt.Method, path, body))
				})
			}
		}
		for _, param := range paramPattern.FindAllString(rt.Path, -1) {
			for name, value := range badParams {
				t.Run(route+" "+param+" "+name, func(t *testing.T) {
					path := fill(rt.Path, param, value)
					body := routeCases[route].body
					expect4xx(t, rt.Method, path, rawDo(t, base, rt.Method, path, body))
				})
			}
		}
	}
	if after := stateDigest(t, base); after != before {
		t.Fatalf("bad input changed the state: digest %s -> %s", before, after)
	}
}

package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	apiPrefix   = "/api/2.1/unity-catalog"
	deltaPrefix = apiPrefix + "/delta/v1"
	// icebergPrefix is the Iceberg REST catalog prefix.
	icebergPrefix = apiPrefix + "/iceberg"
	sharingPrefix = "/delta-sharing"
	lancePrefix   = "/lance"

	headerIndex       = "X-Raftcat-Index"
	headerConsistency = "X-Raftcat-Consistency"
)

// httpClient is shared by every test; no test relies on cookies or redirects.
var httpClient = &http.Client{Timeout: 60 * time.Second}

// api talks to one node over real HTTP.
type api struct {
	t      testing.TB
	base   string
	client *http.Client // nil: httpClient
}

// with returns a client that reports failures to another test (a subtest).
func (a *api) with(t testing.TB) *api { return &api{t: t, base: a.base, client: a.client} }

// reply is a decoded HTTP answer.
type reply struct {
	status int
	header http.Header
	raw    []byte
	body   any // decoded JSON (numbers as json.Number), nil for an empty body
}

// obj returns the body as a JSON object.
func (r reply) obj(t testing.TB) map[string]any {
	t.Helper()
	m, ok := r.body.(map[string]any)
	if !ok {
		t.Fatalf("body is not a JSON object (status %d): %s", r.status, r.raw)
	}
	return m
}

// do sends a request. body may be nil (no body), a string or []byte (sent
// verbatim) or any other value (sent as JSON). hdr holds header name/value
// pairs.
func (a *api) do(method, path string, body any, hdr ...string) reply {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			a.t.Fatalf("marshal request body: %v", err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		a.t.Fatalf("new request: %v", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := httpClient
	if a.client != nil {
		client = a.client
	}
	resp, err := client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&r.body); err != nil {
			a.t.Fatalf("%s %s: status %d, body is not JSON: %v: %q", method, path, resp.StatusCode, err, raw)
		}
	}
	return r
}

// doJSON is do returning the pieces separately.
func (a *api) doJSON(method, path string, body any, hdr ...string) (int, http.Header, any) {
	a.t.Helper()
	r := a.do(method, path, body, hdr...)
	return r.status, r.header, r.body
}

// ok sends a request that must succeed with the given status.
func (a *api) ok(status int, method, path string, body any, hdr ...string) reply {
	a.t.Helper()
	r := a.do(method, path, body, hdr...)
	if r.status != status {
		a.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.raw)
	}
	if method != http.MethodGet && method != http.MethodHead {
		requireIndex(a.t, r)
	}
	return r
}

// requireIndex checks that a response carries a positive raft index.
func requireIndex(t testing.TB, r reply) uint64 {
	t.Helper()
	v := r.header.Get(headerIndex)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("%s header = %q, want a positive integer (status %d: %s)", headerIndex, v, r.status, r.raw)
	}
	return n
}

// ---- JSON access ----

// dig walks objects by key and arrays by int index.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			s, ok := v.([]any)
			if !ok || k < 0 || k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

func str(t testing.TB, v any) string {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("value %#v is not a string", v)
	}
	return s
}

func num(t testing.TB, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("value %#v is not a number", v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("value %s is not an integer", n)
	}
	return i
}

func arr(t testing.TB, v any) []any {
	t.Helper()
	s, ok := v.([]any)
	if !ok {
		t.Fatalf("value %#v is not an array", v)
	}
	return s
}

func objOf(t testing.TB, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("value %#v is not an object", v)
	}
	return m
}

func strs(t testing.TB, v any) []string {
	t.Helper()
	if s, ok := v.([]string); ok {
		return slices.Clone(s)
	}
	var out []string
	for _, e := range arr(t, v) {
		out = append(out, str(t, e))
	}
	return out
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// ---- error envelopes ----

// deltaErr checks a Delta API error: exactly {"error":{"message","type","code"}}
// with code == status, the given type, and a message containing each of want.
func deltaErr(t testing.TB, r reply, status int, typ string, want ...string) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	top := r.obj(t)
	if got := keys(top); !slices.Equal(got, []string{"error"}) {
		t.Fatalf("top-level keys %v, want [error]: %s", got, r.raw)
	}
	e := objOf(t, top["error"])
	if got := keys(e); !slices.Equal(got, []string{"code", "message", "type"}) {
		t.Fatalf("error keys %v, want [code message type]: %s", got, r.raw)
	}
	if c := num(t, e["code"]); c != int64(status) {
		t.Fatalf("error.code %d, want %d", c, status)
	}
	if got := str(t, e["type"]); got != typ {
		t.Fatalf("error.type %q, want %q: %s", got, typ, r.raw)
	}
	msg := str(t, e["message"])
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("error.message %q does not contain %q", msg, w)
		}
	}
	return msg
}

// ucErr checks a UC REST error envelope.
func ucErr(t testing.TB, r reply, status int, code string, want ...string) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	top := r.obj(t)
	if got := keys(top); !slices.Equal(got, []string{"details", "error_code", "message"}) {
		t.Fatalf("top-level keys %v, want [details error_code message]: %s", got, r.raw)
	}
	if got := str(t, top["error_code"]); got != code {
		t.Fatalf("error_code %q, want %q: %s", got, code, r.raw)
	}
	details := arr(t, top["details"])
	if len(details) != 1 {
		t.Fatalf("details has %d entries, want 1: %s", len(details), r.raw)
	}
	d := objOf(t, details[0])
	if got := str(t, d["@type"]); got != "type.googleapis.com/google.rpc.ErrorInfo" {
		t.Fatalf("details[0].@type = %q", got)
	}
	if got := str(t, d["reason"]); got != code {
		t.Fatalf("details[0].reason = %q, want %q", got, code)
	}
	msg := str(t, top["message"])
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("message %q does not contain %q", msg, w)
		}
	}
	return msg
}

// ---- names and paths ----

var nameSeq atomic.Int64

// uniq returns a fresh name with the given prefix.
func uniq(prefix string) string { return fmt.Sprintf("%s_%d", prefix, nameSeq.Add(1)) }

func tablesPath(cat, sch string) string {
	return deltaPrefix + "/catalogs/" + url.PathEscape(cat) + "/schemas/" + url.PathEscape(sch) + "/tables"
}

func tablePath(cat, sch, tbl string) string {
	return tablesPath(cat, sch) + "/" + url.PathEscape(tbl)
}

func stagingPath(cat, sch string) string {
	return deltaPrefix + "/catalogs/" + url.PathEscape(cat) + "/schemas/" + url.PathEscape(sch) + "/staging-tables"
}

// newSchema creates a fresh schema in the seeded catalog "unity".
func (a *api) newSchema() (cat, sch string) {
	a.t.Helper()
	sch = uniq("s")
	a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": sch, "catalog_name": "unity"})
	return "unity", sch
}

// ---- Delta tables ----

// simpleColumns is (id long not null, amount double).
func simpleColumns() map[string]any {
	return map[string]any{"type": "struct", "fields": []any{
		map[string]any{"name": "id", "type": "long", "nullable": false, "metadata": map[string]any{}},
		map[string]any{"name": "amount", "type": "double", "nullable": true, "metadata": map[string]any{"comment": "money"}},
	}}
}

// stage creates a staging table and returns its response.
func (a *api) stage(cat, sch, name string) map[string]any {
	a.t.Helper()
	return a.ok(http.StatusOK, http.MethodPost, stagingPath(cat, sch), map[string]any{"name": name}).obj(a.t)
}

// managedBody builds a createTable request that honours the managed
// contract exactly as the staging answer states it: the required protocol
// (plus rowTracking and domainMetadata, which the row-tracking domain
// needs), every required property, io.unitycatalog.tableId = table-id, and
// location = the staging location.
func managedBody(t testing.TB, stg map[string]any, name string) map[string]any {
	t.Helper()
	rp := objOf(t, stg["required-protocol"])
	reader := strs(t, rp["reader-features"])
	writer := append(strs(t, rp["writer-features"]), "domainMetadata", "rowTracking")
	props := map[string]any{}
	for k, v := range objOf(t, stg["required-properties"]) {
		props[k] = str(t, v)
	}
	props["io.unitycatalog.tableId"] = str(t, stg["table-id"])
	return map[string]any{
		"name":       name,
		"location":   str(t, stg["location"]),
		"table-type": "MANAGED",
		"columns":    simpleColumns(),
		"protocol": map[string]any{
			"min-reader-version": num(t, rp["min-reader-version"]),
			"min-writer-version": num(t, rp["min-writer-version"]),
			"reader-features":    reader,
			"writer-features":    writer,
		},
		"properties":               props,
		"last-commit-timestamp-ms": int64(1700000000000),
		"domain-metadata":          map[string]any{"delta.rowTracking": map[string]any{"rowIdHighWaterMark": 99}},
	}
}

// createManaged stages and creates a MANAGED table and returns the
// createTable answer.
func (a *api) createManaged(cat, sch, name string) map[string]any {
	a.t.Helper()
	stg := a.stage(cat, sch, name)
	return a.ok(http.StatusOK, http.MethodPost, tablesPath(cat, sch), managedBody(a.t, stg, name)).obj(a.t)
}

// managedTable is a created MANAGED table.
type managedTable struct {
	a             *api
	cat, sch, tbl string
	uuid          string
}

// newManaged creates a MANAGED table in a fresh schema.
func (a *api) newManaged() *managedTable {
	a.t.Helper()
	cat, sch := a.newSchema()
	tbl := uniq("t")
	created := a.createManaged(cat, sch, tbl)
	return &managedTable{a: a, cat: cat, sch: sch, tbl: tbl, uuid: str(a.t, dig(created, "metadata", "table-uuid"))}
}

func (m *managedTable) path() string { return tablePath(m.cat, m.sch, m.tbl) }

// load returns the loadTable answer.
func (m *managedTable) load() map[string]any {
	m.a.t.Helper()
	return m.a.ok(http.StatusOK, http.MethodGet, m.path(), nil).obj(m.a.t)
}

// etag returns the current etag.
func (m *managedTable) etag() string {
	m.a.t.Helper()
	return str(m.a.t, dig(m.load(), "metadata", "etag"))
}

// update posts updates with assert-table-uuid (and assert-etag when etag
// is not empty).
func (m *managedTable) update(etag string, updates ...any) reply {
	m.a.t.Helper()
	reqs := []any{map[string]any{"type": "assert-table-uuid", "uuid": m.uuid}}
	if etag != "" {
		reqs = append(reqs, map[string]any{"type": "assert-etag", "etag": etag})
	}
	r := m.a.do(http.MethodPost, m.path(), map[string]any{"requirements": reqs, "updates": updates})
	if r.status == http.StatusOK {
		requireIndex(m.a.t, r)
	}
	return r
}

// mustUpdate is update that must answer 200; it returns the new state.
func (m *managedTable) mustUpdate(etag string, updates ...any) map[string]any {
	m.a.t.Helper()
	r := m.update(etag, updates...)
	if r.status != http.StatusOK {
		m.a.t.Fatalf("update: status %d: %s", r.status, r.raw)
	}
	return r.obj(m.a.t)
}

// commitFile is the staged commit file name of version v; variant
// distinguishes competing commits for the same version.
func commitFile(v int64, variant string) string {
	return fmt.Sprintf("%020d.%s.json", v, variant)
}

// commit is an add-commit action for version v.
func commit(v int64) map[string]any { return commitAs(v, "0b2c9b7e-0000-4000-8000-000000000001") }

func commitAs(v int64, variant string) map[string]any {
	return map[string]any{"action": "add-commit", "commit": map[string]any{
		"version": v, "timestamp": 1700000000000 + v, "file-name": commitFile(v, variant),
		"file-size": 1000 + v, "file-modification-timestamp": 1700000000500 + v,
	}}
}

// backfill is a set-latest-backfilled-version action.
func backfill(v int64) map[string]any {
	return map[string]any{"action": "set-latest-backfilled-version", "latest-published-version": v}
}

func setProps(kv ...string) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return map[string]any{"action": "set-properties", "updates": m}
}

// commitVersions lists the versions in a load answer's commits.
func commitVersions(t testing.TB, load map[string]any) []int64 {
	t.Helper()
	var out []int64
	for _, c := range arr(t, load["commits"]) {
		out = append(out, num(t, dig(c, "version")))
	}
	return out
}

func latest(t testing.TB, load map[string]any) int64 {
	t.Helper()
	return num(t, load["latest-table-version"])
}

// with returns the same table with failures reported to another test.
func (m *managedTable) with(t testing.TB) *managedTable {
	c := *m
	c.a = m.a.with(t)
	return &c
}

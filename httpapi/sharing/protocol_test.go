package sharing_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

const checkpointTable = "basic-with-inserts-deletes-checkpoint"

// expectError checks a protocol error: status, JSON envelope, errorCode.
func expectError(t *testing.T, status int, code string, gotStatus int, raw string) {
	t.Helper()
	var e struct {
		ErrorCode string `json:"errorCode"`
		Message   string `json:"message"`
	}
	if gotStatus != status || json.Unmarshal([]byte(raw), &e) != nil || e.Message == "" || (code != "" && e.ErrorCode != code) {
		t.Fatalf("got %d %s, want %d with errorCode %s", gotStatus, raw, status, code)
	}
}

func ids(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l["id"].(string))
	}
	slices.Sort(out)
	return out
}

// appendCommit publishes a commit adding one file to a copied golden
// table, as a writer outside the catalog would.
func appendCommit(t *testing.T, location string, version int, file string, rows int) {
	t.Helper()
	dir := strings.TrimPrefix(location, "file://")
	line := fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{},"size":100,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":%d}"}}`, file, rows)
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", version)), []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoveryListsWhatIsGranted(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	c := l.prof.client(t)
	l.prov.share("other") // exists, not granted
	r := c.get("/shares")
	if r.Status != 200 || strings.Count(string(r.Raw), "\n") > 1 || fmt.Sprint(r.Body["items"]) != "[map[id:"+idOf(r, 0)+" name:lake]]" {
		t.Fatalf("list shares: %d %s", r.Status, r.Raw)
	}
	if _, has := r.Body["nextPageToken"]; has {
		t.Fatalf("last page carries a token: %s", r.Raw)
	}
	if r := c.get("/shares/LAKE"); r.Status != 200 || r.Body["share"].(map[string]any)["name"] != "lake" {
		t.Fatalf("get share case-insensitively: %d %s", r.Status, r.Raw)
	}
	for _, p := range []string{"/shares/other", "/shares/nope", "/shares/other/schemas", "/shares/lake/schemas/nope/tables"} {
		r := c.get(p)
		expectError(t, 404, "RESOURCE_DOES_NOT_EXIST", r.Status, string(r.Raw))
	}
	if r := c.get("/shares/lake/schemas"); fmt.Sprint(r.Body["items"]) != "[map[name:golden share:lake]]" {
		t.Fatalf("schemas: %s", r.Raw)
	}
	var names []string
	tok := ""
	for pages := 0; ; pages++ {
		r := c.get("/shares/lake/all-tables?maxResults=5&pageToken=" + tok)
		if r.Status != 200 || pages > 5 {
			t.Fatalf("all-tables page %d: %d %s", pages, r.Status, r.Raw)
		}
		items, _ := r.Body["items"].([]any)
		for _, it := range items {
			m := it.(map[string]any)
			if m["share"] != "lake" || m["schema"] != "golden" || m["id"] == "" {
				t.Fatalf("table item %v", m)
			}
			names = append(names, m["name"].(string))
		}
		next, _ := r.Body["nextPageToken"].(string)
		if next == "" {
			break
		}
		tok = next
	}
	if len(names) != len(goldenRows) || !slices.IsSorted(names) {
		t.Fatalf("all-tables gave %v", names)
	}
	schemaTok := c.get("/shares/lake/schemas/golden/tables?maxResults=1").Body["nextPageToken"].(string)
	for _, p := range []string{"/shares?maxResults=-1", "/shares?maxResults=abc", "/shares?maxResults=501",
		"/shares?pageToken=garbage", "/shares?pageToken=" + schemaTok} {
		r := c.get(p)
		expectError(t, 400, "INVALID_PARAMETER_VALUE", r.Status, string(r.Raw))
	}
	if r := c.get("/shares?maxResults=0"); r.Status != 200 || r.Body["items"] != nil {
		t.Fatalf("maxResults=0: %s", r.Raw)
	}
}

func idOf(r testcluster.Response, i int) string {
	items, _ := r.Body["items"].([]any)
	if len(items) <= i {
		return ""
	}
	id, _ := items[i].(map[string]any)["id"].(string)
	return id
}

func TestVersionMetadataAndFormats(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	c := l.prof.client(t)
	tp := tablePath("lake", "golden", sharedName(checkpointTable))
	if r := c.get(tp + "/version"); r.Status != 200 || r.Header.Get("Delta-Table-Version") != "13" || len(r.Raw) != 0 {
		t.Fatalf("version: %d %v %s", r.Status, r.Header, r.Raw)
	}
	head := testcluster.Do(t, http.MethodHead, l.prof.Endpoint+tp, nil, c.auth()...)
	if head.Status != 200 || head.Header.Get("Delta-Table-Version") != "13" {
		t.Fatalf("HEAD: %d %v", head.Status, head.Header)
	}
	if r := testcluster.Do(t, http.MethodHead, l.prof.Endpoint+tablePath("lake", "golden", "nope"), nil, c.auth()...); r.Status != 404 || len(r.Raw) != 0 {
		t.Fatalf("HEAD unknown: %d %s", r.Status, r.Raw)
	}
	// In-commit timestamps: v0 2026-07-12T16:36:43.271Z, v1 2023-05-12 (hand-edited), v2 16:36:52.175Z, v3 16:36:53.881Z.
	ict := tablePath("lake", "golden", "cdc_ict_table")
	for ts, want := range map[string]string{"2026-07-12T16:36:50Z": "2", "2026-07-12T16:36:52.175Z": "2", "2000-01-01T00:00:00Z": "0"} {
		if r := c.get(ict + "/version?startingTimestamp=" + ts); r.Header.Get("Delta-Table-Version") != want {
			t.Errorf("startingTimestamp %s: %d %s version %q, want %s", ts, r.Status, r.Raw, r.Header.Get("Delta-Table-Version"), want)
		}
	}
	for _, q := range []string{"startingTimestamp=2999-01-01T00:00:00Z", "startingTimestamp=abc", "startingTimestamp=2024-01-01"} {
		r := c.get(ict + "/version?" + q)
		expectError(t, 400, "INVALID_PARAMETER_VALUE", r.Status, string(r.Raw))
	}

	meta := c.ndjson(http.MethodGet, tp+"/metadata", nil).mustOK(t)
	if fmt.Sprint(meta.kinds()) != "[protocol metaData]" || meta.header.Get("delta-sharing-capabilities") != "responseformat=parquet" ||
		meta.header.Get("Content-Type") != "application/x-ndjson; charset=utf-8" || meta.header.Get("Delta-Table-Version") != "13" {
		t.Fatalf("metadata: %v %s", meta.header, meta.raw)
	}
	if p := meta.of("protocol")[0]; fmt.Sprint(p) != "map[minReaderVersion:1]" {
		t.Fatalf("parquet protocol line %v", p)
	}
	m := meta.of("metaData")[0]
	if m["format"].(map[string]any)["provider"] != "parquet" || fmt.Sprint(m["partitionColumns"]) != "[]" || !strings.Contains(m["schemaString"].(string), `"id"`) {
		t.Fatalf("parquet metaData line %v", m)
	}
	at := c.ndjson(http.MethodGet, tablePath("lake", "golden", "log_replay_latest_metadata_protocol")+"/metadata?version=0", nil).mustOK(t)
	if s := at.of("metaData")[0]["schemaString"].(string); strings.Contains(s, "col2") || at.header.Get("Delta-Table-Version") != "0" {
		t.Fatalf("metadata at version 0: %s", at.raw)
	}

	c.caps = "responseformat=delta"
	d := c.ndjson(http.MethodGet, tp+"/metadata", nil).mustOK(t)
	if d.header.Get("delta-sharing-capabilities") != "responseformat=delta" || d.of("protocol")[0]["deltaProtocol"] == nil || d.of("metaData")[0]["deltaMetadata"] == nil {
		t.Fatalf("delta metadata: %v %s", d.header, d.raw)
	}
	q := c.query(tp, map[string]any{}).mustOK(t)
	for _, f := range q.of("file") {
		add := f["deltaSingleAction"].(map[string]any)["add"].(map[string]any)
		if !strings.HasPrefix(add["path"].(string), "http") || f["id"] == "" || f["expirationTimestamp"] == nil {
			t.Fatalf("delta file line %v", f)
		}
	}

	// A deletion-vector table cannot be read by a parquet-only client.
	c.caps = ""
	dv := tablePath("lake", "golden", "basic_dv_no_checkpoint")
	for _, caps := range []string{"", "responseformat=parquet", "responseformat=delta"} {
		c.caps = caps
		a := c.query(dv, map[string]any{})
		expectError(t, 400, "UNSUPPORTED_OPERATION", a.status, a.raw)
	}
	c.caps = "responseformat=delta,parquet;readerfeatures=deletionvectors"
	a := c.query(dv, map[string]any{}).mustOK(t)
	if a.header.Get("delta-sharing-capabilities") != "responseformat=delta" || a.rows(t) != 8 {
		t.Fatalf("dv table in delta format: %v %s", a.header, a.raw)
	}
	for _, f := range a.of("file") {
		add := f["deltaSingleAction"].(map[string]any)["add"].(map[string]any)
		if dvm, ok := add["deletionVector"].(map[string]any); ok {
			if dvm["storageType"] != "p" {
				t.Fatalf("deletion vector not rewritten to a URL: %v", dvm)
			}
			if status, raw := fetch(t, dvm["pathOrInlineDv"].(string)); status != 200 || len(raw) == 0 {
				t.Fatalf("deletion vector file: %d", status)
			}
		}
	}
}

func TestQueryBodyValidation(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	c := l.prof.client(t)
	tp := tablePath("lake", "golden", sharedName(checkpointTable))
	if a := c.query(tp, map[string]any{"version": "3"}).mustOK(t); a.header.Get("Delta-Table-Version") != "3" || a.rows(t) != 40 {
		t.Fatalf("numeric string version: %s", a.raw)
	}
	a := c.ndjson(http.MethodPost, tp+"/query", nil)
	expectError(t, 400, "MALFORMED_REQUEST", a.status, a.raw)
	for _, body := range []map[string]any{
		{"version": 1, "timestamp": "2024-01-01T00:00:00Z"}, {"version": -1}, {"version": 99}, {"version": "x3"},
		{"timestamp": "1999-01-01T00:00:00Z"}, {"timestamp": "2999-01-01T00:00:00Z"}, {"timestamp": "abc"},
		{"predicateHints": map[string]any{}}, {"maxFiles": 0}, {"maxFiles": 3000000000}, {"startingVersion": 3, "endingVersion": 2},
		{"startingVersion": 99}, {"startingVersion": 0, "endingVersion": 99}, {"startingVersion": -1}, {"startingVersion": 0, "version": 1},
		{"version": 1, "includeRefreshToken": true}, {"refreshToken": "foo"}, {"pageToken": "x", "refreshToken": "y"}, {"pageToken": "garbage"},
	} {
		a := c.query(tp, body)
		if a.status != 400 {
			t.Errorf("%v: %d %s, want 400", body, a.status, a.raw)
		}
	}
	l.prov.share("flat")
	l.prov.add("flat", "unity.golden."+sharedName(checkpointTable), "s.t", false)
	l.prov.grant("flat", "analyst")
	for _, body := range []map[string]any{{"version": 1}, {"timestamp": "2024-01-01T00:00:00Z"}, {"startingVersion": 0}} {
		a := c.query(tablePath("flat", "s", "t"), body)
		expectError(t, 400, "INVALID_PARAMETER_VALUE", a.status, a.raw)
	}
	r := c.get(tablePath("flat", "s", "t") + "/changes?startingVersion=0")
	expectError(t, 400, "INVALID_PARAMETER_VALUE", r.Status, string(r.Raw))
	if a := c.query(tablePath("flat", "s", "t"), map[string]any{}).mustOK(t); a.rows(t) != 41 {
		t.Fatalf("latest snapshot without history: %s", a.raw)
	}
}

// Pages of one query stay on the snapshot the first page read, even when
// a commit lands between them; the union of the pages is the snapshot.
func TestPaginationEndStreamAndRefresh(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	c := l.prof.client(t)
	tp := tablePath("lake", "golden", sharedName(checkpointTable))
	all := c.query(tp, map[string]any{}).mustOK(t)
	if fmt.Sprint(all.kinds()[:2]) != "[protocol metaData]" || slices.Contains(all.kinds(), "endStreamAction") {
		t.Fatalf("plain query: %s", all.raw)
	}
	want := ids(all.of("file"))
	loc := tableLocation(t, l, sharedName(checkpointTable))
	var got []string
	body := map[string]any{"maxFiles": 2}
	for page := 0; ; page++ {
		a := c.query(tp, body).mustOK(t)
		if a.header.Get("Delta-Table-Version") != "13" || page > len(want) {
			t.Fatalf("page %d: %v %s", page, a.header, a.raw)
		}
		kinds := a.kinds()
		if kinds[len(kinds)-1] != "endStreamAction" || len(a.of("file")) > 2 {
			t.Fatalf("page %d lines %v", page, kinds)
		}
		got = append(got, ids(a.of("file"))...)
		if page == 0 {
			appendCommit(t, loc, 14, "new.parquet", 7)
		}
		es := a.of("endStreamAction")[0]
		if es["minUrlExpirationTimestamp"] == nil {
			t.Fatalf("end-stream action without minUrlExpirationTimestamp: %v", es)
		}
		next, _ := es["nextPageToken"].(string)
		if next == "" {
			break
		}
		body = map[string]any{"maxFiles": 2, "pageToken": next}
		if page == 0 {
			bad := c.query(tp, map[string]any{"maxFiles": 2, "pageToken": next, "limitHint": 1})
			expectError(t, 400, "INVALID_PARAMETER_VALUE", bad.status, bad.raw)
			other := c.query(tablePath("lake", "golden", "simple_table"), body)
			expectError(t, 400, "INVALID_PARAMETER_VALUE", other.status, other.raw)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	if v := c.get(tp + "/version").Header.Get("Delta-Table-Version"); v != "14" {
		t.Fatalf("the new commit is not visible: %s", v)
	}

	c.caps = "responseformat=parquet;includeendstreamaction=true"
	es := c.query(tp, map[string]any{"includeRefreshToken": true}).mustOK(t)
	if es.header.Get("delta-sharing-capabilities") != "responseformat=parquet;includeendstreamaction=true" || es.kinds()[len(es.kinds())-1] != "endStreamAction" {
		t.Fatalf("end-stream capability: %v %v", es.header, es.kinds())
	}
	refresh := es.of("endStreamAction")[0]["refreshToken"].(string)
	appendCommit(t, loc, 15, "newer.parquet", 3)
	again := c.query(tp, map[string]any{"refreshToken": refresh}).mustOK(t)
	if again.header.Get("Delta-Table-Version") != "14" || !slices.Equal(ids(again.of("file")), ids(es.of("file"))) {
		t.Fatalf("refresh moved off the snapshot: %v %s", again.header, again.raw)
	}
	if latest := c.query(tp, map[string]any{}).mustOK(t); latest.header.Get("Delta-Table-Version") != "15" {
		t.Fatalf("latest: %v", latest.header)
	}
}

func tableLocation(t *testing.T, l *lake, name string) string {
	t.Helper()
	r := ok(t, 200, http.MethodGet, l.nodes[0].URL+uc+"/tables/unity.golden."+name, nil)
	return r.Body["storage_location"].(string)
}

func TestHintsAndTimeTravel(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	c := l.prof.client(t)
	parted := tablePath("lake", "golden", "delta_0_8_0_partitioned")
	hint := `{"op":"equal","children":[{"op":"column","name":"year","valueType":"string"},{"op":"literal","value":"2021","valueType":"string"}]}`
	a := c.query(parted, map[string]any{"jsonPredicateHints": hint}).mustOK(t)
	if n := len(a.of("file")); n != 3 {
		t.Fatalf("year = 2021 kept %d files, want 3", n)
	}
	for _, f := range a.of("file") {
		if y := f["partitionValues"].(map[string]any)["year"]; y != "2021" {
			t.Fatalf("kept a file of year %v", y)
		}
	}
	for _, junk := range []string{"garbage", `{"op":"equal","children":[{"op":"column","name":"year","valueType":"integer"},{"op":"literal","value":"2021","valueType":"integer"}]}`} {
		if a := c.query(parted, map[string]any{"jsonPredicateHints": junk}).mustOK(t); len(a.of("file")) != 6 {
			t.Fatalf("unusable hint %q dropped files", junk)
		}
	}
	tp := tablePath("lake", "golden", sharedName(checkpointTable))
	if a := c.query(tp, map[string]any{"limitHint": 1}).mustOK(t); len(a.of("file")) != 1 {
		t.Fatalf("limitHint 1 gave %d files", len(a.of("file")))
	}
	ict := tablePath("lake", "golden", "cdc_ict_table")
	a = c.query(ict, map[string]any{"timestamp": "2026-07-12T16:36:53Z"}).mustOK(t)
	if a.header.Get("Delta-Table-Version") != "2" || a.rows(t) != 2 {
		t.Fatalf("timestamp query: %v %s", a.header, a.raw)
	}
	for _, f := range a.of("file") {
		if f["version"] != float64(2) {
			t.Fatalf("time-travel file without its version: %v", f)
		}
	}
	// Streaming from a version: the raw data changes, with versions and
	// timestamps, a remove carrying its add's id.
	cdf := tablePath("lake", "golden", "cdf_table")
	s := c.query(cdf, map[string]any{"startingVersion": 0, "endingVersion": 1}).mustOK(t)
	if s.header.Get("Delta-Table-Version") != "0" || len(s.of("add")) != 13 || len(s.of("remove")) != 3 || len(s.of("cdf")) != 0 {
		t.Fatalf("stream: %d adds, %d removes: %s", len(s.of("add")), len(s.of("remove")), s.raw)
	}
	adds := map[string]bool{}
	for _, f := range s.of("add") {
		adds[f["id"].(string)] = true
		if f["version"] == nil || f["timestamp"] == nil {
			t.Fatalf("stream line without version or timestamp: %v", f)
		}
	}
	for _, f := range s.of("remove") {
		if !adds[f["id"].(string)] {
			t.Fatalf("remove %v has no add id", f)
		}
	}
	if m := s.of("metaData")[0]; m["version"] != float64(0) {
		t.Fatalf("stream head metaData %v", m)
	}
	paged := c.ndjson(http.MethodGet, cdf+"/changes?startingVersion=0&maxFiles=2", nil).mustOK(t)
	if kinds := paged.kinds(); len(paged.of("add")) != 2 || kinds[len(kinds)-1] != "endStreamAction" || paged.of("endStreamAction")[0]["nextPageToken"] == nil {
		t.Fatalf("paged changes: %v", kinds)
	}
	hist := c.ndjson(http.MethodGet, cdf+"/changes?startingVersion=1&endingVersion=3&includeHistoricalMetadata=True", nil).mustOK(t)
	if hist.header.Get("Delta-Table-Version") != "1" || hist.of("metaData")[0]["version"] != float64(1) {
		t.Fatalf("historical metadata head: %s", hist.raw)
	}
	for _, q := range []string{"", "startingVersion=1&startingTimestamp=2024-01-01T00:00:00Z", "startingVersion=abc",
		"startingVersion=3&endingVersion=2", "startingVersion=7", "startingTimestamp=2024-01-01", "startingVersion=0&maxFiles=0"} {
		r := c.get(cdf + "/changes?" + q)
		expectError(t, 400, "INVALID_PARAMETER_VALUE", r.Status, string(r.Raw))
	}
}

// Three nodes answer the same query alike: the same version, the same
// file ids, and URLs that work.
func TestThreeNodesAnswerAlike(t *testing.T) {
	l := startLake(t, testcluster.Options{})
	tp := tablePath("lake", "golden", "cdf_table")
	var first answer
	for i := range l.nodes {
		a := l.on(i).client(t).query(tp, map[string]any{}).mustOK(t)
		if i == 0 {
			first = a
			continue
		}
		if a.header.Get("Delta-Table-Version") != first.header.Get("Delta-Table-Version") ||
			!slices.Equal(ids(a.of("file")), ids(first.of("file"))) || a.rows(t) != first.rows(t) {
			t.Fatalf("node %d answers differently: %s\nvs %s", i, a.raw, first.raw)
		}
	}
	// Spark's habits: predicateHints always sent, includeRefreshToken on
	// latest reads and false on time travel, then a refresh of the URLs.
	c := l.on(2).client(t)
	c.headers = []string{"User-Agent", "Delta-Sharing-Spark/1.3.0 Spark/3.5.3 Java/17"}
	a := c.query(tp, map[string]any{"predicateHints": []string{}, "includeRefreshToken": true}).mustOK(t)
	es := a.of("endStreamAction")
	if len(es) != 1 || es[0]["refreshToken"] == nil {
		t.Fatalf("no refresh token for Spark: %v", a.kinds())
	}
	r := c.query(tp, map[string]any{"predicateHints": []string{}, "refreshToken": es[0]["refreshToken"]}).mustOK(t)
	if !slices.Equal(ids(r.of("file")), ids(a.of("file"))) {
		t.Fatalf("refresh changed the files")
	}
	tt := c.query(tp, map[string]any{"predicateHints": []string{}, "version": 2, "includeRefreshToken": false}).mustOK(t)
	if tt.header.Get("Delta-Table-Version") != "2" {
		t.Fatalf("Spark time travel: %v", tt.header)
	}
}

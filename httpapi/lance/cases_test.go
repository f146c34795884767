package lance_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// The digest's cases L-01 to L-33 and L-35, as raw HTTP against three
// nodes, with manifests in a file:// warehouse and in a real
// S3-compatible server. The catalog's namespace tree holds tables in a
// schema or below, so the digest's namespace "ns" is [lake, ns] here.
func TestLanceCasesFile(t *testing.T) { runCases(t, fileWarehouse(t)) }

func TestLanceCasesS3(t *testing.T) { runCases(t, s3Warehouse(t)) }

func runCases(t *testing.T, w *warehouse) {
	c := newClient(t, w)
	namespaceCases(t, c)
	tableCases(t, c, w)
	versionCases(t, c, w)
	batchCases(t, c, w)
	removalCases(t, c, w)
}

func namespaceCases(t *testing.T, c *client) {
	c.ok(c.post("/v1/namespace/lake/create", map[string]any{"id": []string{"lake"}}))
	// L-01, L-02
	r := c.ok(c.post("/v1/namespace/"+esc("lake", "ns")+"/create", map[string]any{"id": []string{"lake", "ns"}, "properties": map[string]string{"o": "me"}}))
	if r.Body["properties"].(map[string]any)["o"] != "me" {
		t.Fatalf("L-01: %s", r.Raw)
	}
	c.fails(c.post("/v1/namespace/"+esc("lake", "ns")+"/create", map[string]any{"properties": map[string]string{"o": "x"}}), 409, 2)
	for _, m := range []string{"exist_ok", "ExistOk"} {
		r = c.ok(c.post("/v1/namespace/"+esc("lake", "ns")+"/create", map[string]any{"mode": m, "properties": map[string]string{"o": "x"}}))
		if r.Body["properties"].(map[string]any)["o"] != "me" {
			t.Fatalf("L-02 %s changed the namespace: %s", m, r.Raw)
		}
	}
	// L-03
	c.fails(c.post("/v1/namespace/"+esc("nope", "child")+"/create", map[string]any{}), 404, 1)
	// L-04: the root lists catalogs; pages follow their tokens.
	if got := strs(c.ok(c.get("/v1/namespace/%24/list")).Body["namespaces"]); strings.Join(got, ",") != "lake,unity" {
		t.Fatalf("L-04 root = %v", got)
	}
	c.ok(c.post("/v1/namespace/"+esc("lake", "other")+"/create", nil))
	first := c.ok(c.get("/v1/namespace/lake/list?limit=1"))
	tok, _ := first.Body["page_token"].(string)
	if got := strs(first.Body["namespaces"]); len(got) != 1 || got[0] != "ns" || tok == "" {
		t.Fatalf("L-04 first page: %s", first.Raw)
	}
	rest := c.ok(c.get("/v1/namespace/lake/list?limit=1&page_token=" + tok))
	if got := strs(rest.Body["namespaces"]); len(got) != 1 || got[0] != "other" {
		t.Fatalf("L-04 second page: %s", rest.Raw)
	}
	if last := c.ok(c.get("/v1/namespace/lake/list?limit=1&page_token=other")); last.Body["page_token"] != nil {
		t.Fatalf("L-04 last page has a token: %s", last.Raw)
	}
	// L-05, L-06
	if r = c.ok(c.post("/v1/namespace/"+esc("lake", "ns")+"/describe", map[string]any{})); r.Body["properties"].(map[string]any)["o"] != "me" {
		t.Fatalf("L-05: %s", r.Raw)
	}
	c.fails(c.post("/v1/namespace/nope/describe", map[string]any{}), 404, 1)
	if r = c.ok(c.post("/v1/namespace/"+esc("lake", "ns")+"/exists", map[string]any{})); len(r.Raw) != 0 {
		t.Fatalf("L-06: exists has a body: %s", r.Raw)
	}
	c.fails(c.post("/v1/namespace/nope/exists", map[string]any{}), 404, 1)
	// L-07: another delimiter, on every route.
	c.ok(c.post("/v1/namespace/lake.dot/create?delimiter=.", map[string]any{}))
	c.ok(c.post("/v1/namespace/lake.dot.b/create?delimiter=.", map[string]any{}))
	for _, p := range []string{"/v1/namespace/lake.dot/list?delimiter=.", "/v1/namespace/" + esc("lake", "dot") + "/list"} {
		if got := strs(c.ok(c.get(p)).Body["namespaces"]); len(got) != 1 || got[0] != "b" {
			t.Fatalf("L-07 %s = %v", p, got)
		}
	}
	// L-08
	c.fails(c.post("/v1/namespace/"+esc("lake", "ns")+"/describe", map[string]any{"id": []string{"other"}}), 400, 13)
	// Overwrite replaces the properties.
	r = c.ok(c.post("/v1/namespace/"+esc("lake", "other")+"/create", map[string]any{"mode": "overwrite", "properties": map[string]string{"k": "v"}}))
	if d := c.ok(c.post("/v1/namespace/"+esc("lake", "other")+"/describe", nil)); d.Body["properties"].(map[string]any)["k"] != "v" {
		t.Fatalf("overwrite: %s", d.Raw)
	}
}

func tableCases(t *testing.T, c *client, w *warehouse) {
	t1 := "/v1/table/" + esc("lake", "ns", "t")
	// L-09, L-10
	r := c.ok(c.post(t1+"/declare", map[string]any{"id": []string{"lake", "ns", "t"}, "location": w.table("t")}))
	if r.Body["location"] != w.table("t") || r.Body["managed_versioning"] != true {
		t.Fatalf("L-09: %s", r.Raw)
	}
	c.fails(c.post(t1+"/declare", map[string]any{"location": w.table("t-again")}), 409, 5)
	c.fails(c.post("/v1/table/"+esc("lake", "nope", "t")+"/declare", map[string]any{}), 404, 1)
	if r = c.ok(c.post("/v1/table/"+esc("lake", "ns", "t2")+"/declare", map[string]any{"location": w.table("t2")})); r.Body["location"] != w.table("t2") {
		t.Fatalf("L-10: %s", r.Raw)
	}
	if r = c.ok(c.post("/v1/table/"+esc("lake", "ns", "m")+"/declare", nil)); !strings.Contains(r.Body["location"].(string), "/tables/") {
		t.Fatalf("a table declared without a location gets a managed one: %s", r.Raw)
	}
	// L-11
	r = c.ok(c.post(t1+"/describe?check_declared=true&with_table_uri=true", map[string]any{}))
	if r.Body["location"] != w.table("t") || r.Body["managed_versioning"] != true || r.Body["is_only_declared"] != true ||
		!strings.Contains(r.Body["table_uri"].(string), "://") {
		t.Fatalf("L-11: %s", r.Raw)
	}
	// L-12, L-13
	c.fails(c.post("/v1/table/"+esc("lake", "ns", "nope")+"/describe", map[string]any{}), 404, 4)
	c.fails(c.post("/v1/table/"+esc("lake", "nons", "t")+"/describe", map[string]any{}), 404, 1)
	if r = c.ok(c.post(t1+"/exists", map[string]any{})); len(r.Raw) != 0 {
		t.Fatalf("L-13: %s", r.Raw)
	}
	c.fails(c.post("/v1/table/"+esc("lake", "ns", "nope")+"/exists", map[string]any{}), 404, 4)
	// L-14 (declared tables are listed; include_declared=false after L-16)
	if got := strs(c.ok(c.get("/v1/namespace/" + esc("lake", "ns") + "/table/list")).Body["tables"]); strings.Join(got, ",") != "m,t,t2" {
		t.Fatalf("L-14: %v", got)
	}
	c.fails(c.get("/v1/namespace/"+esc("lake", "nope")+"/table/list"), 404, 1)
	// Lance tables are tables of format LANCE in UC REST.
	uc := c.nodes[0].URL + "/api/2.1/unity-catalog/tables/lake.ns.t"
	if r = c.okUC(uc); r.Body["data_source_format"] != "LANCE" || r.Body["storage_location"] != w.table("t") {
		t.Fatalf("UC REST: %s", r.Raw)
	}
}

func (c *client) okUC(u string) testcluster.Response {
	c.t.Helper()
	return c.ok(testcluster.Do(c.t, "GET", u, nil))
}

func (c *client) create(table string, body map[string]any) testcluster.Response {
	c.t.Helper()
	return c.post("/v1/table/"+esc("lake", "ns", table)+"/version/create", body)
}

func versionBody(table string, v int64, staged string, size int, extra ...any) map[string]any {
	b := map[string]any{"id": []string{"lake", "ns", table}, "version": v, "manifest_path": staged,
		"manifest_size": size, "e_tag": "client-etag", "naming_scheme": "V2"}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

func (c *client) list(table, query string) testcluster.Response {
	c.t.Helper()
	return c.ok(c.post("/v1/table/"+esc("lake", "ns", table)+"/version/list"+query, "null"))
}

func versionCases(t *testing.T, c *client, w *warehouse) {
	tl := w.table("t")
	// L-15
	if got := versionsOf(c.list("t", "?limit=1&descending=true")); len(got) != 0 {
		t.Fatalf("L-15: %v", got)
	}
	// L-16: the server finalizes the staging manifest.
	staged := w.stage(t, tl, 1, "manifest one")
	r := c.ok(c.create("t", versionBody("t", 1, staged, 12)))
	v := r.Body["version"].(map[string]any)
	final, _ := v["manifest_path"].(string)
	if v["version"] != float64(1) || !strings.HasSuffix(final, "/_versions/18446744073709551614.manifest") ||
		v["manifest_size"] != float64(12) || v["e_tag"] == "client-etag" || strings.Contains(final, "://") {
		t.Fatalf("L-16: %s", r.Raw)
	}
	if w.read(t, final) != "manifest one" || w.read(t, staged) != "" {
		t.Fatalf("L-16: final %q, staging left %q", w.read(t, final), w.read(t, staged))
	}
	// An exact replay is answered with the recorded version.
	if again := c.ok(c.create("t", versionBody("t", 1, staged, 12))); again.Body["version"].(map[string]any)["manifest_path"] != final {
		t.Fatalf("replay: %s", again.Raw)
	}
	// L-17
	other := w.stage(t, tl, 1, "another one")
	c.fails(c.create("t", versionBody("t", 1, other, 11)), 409, 14)
	if w.read(t, final) != "manifest one" || len(versionsOf(c.list("t", ""))) != 1 {
		t.Fatal("L-17: the conflict changed something")
	}
	// L-18
	r = c.ok(c.create("t", versionBody("t", 2, w.stage(t, tl, 2, "two"), 3, "naming_scheme", "V1")))
	if p := r.Body["version"].(map[string]any)["manifest_path"].(string); !strings.HasSuffix(p, "/_versions/2.manifest") {
		t.Fatalf("L-18: %s", r.Raw)
	}
	// L-19: nothing recorded on any of these.
	c.fails(c.post("/v1/table/"+esc("lake", "ns", "nope")+"/version/create", versionBody("nope", 3, staged, 1)), 404, 4)
	c.fails(c.create("t", map[string]any{"version": 3}), 400, 13)
	c.fails(c.create("t", versionBody("t", 3, relative(t, tl+"/_versions/missing.manifest-x"), 1)), 400, 13)
	c.fails(c.create("t", versionBody("t", 3, relative(t, w.table("t2")+"/_versions/x.manifest-y"), 1)), 400, 13)
	if got := versionsOf(c.list("t", "?descending=true")); len(got) != 2 {
		t.Fatalf("L-19: versions %v", got)
	}
	// L-11 again: a table with a version is no longer only declared.
	if d := c.ok(c.post("/v1/table/"+esc("lake", "ns", "t")+"/describe?check_declared=true", nil)); d.Body["is_only_declared"] != false {
		t.Fatalf("L-11 after a version: %s", d.Raw)
	}
	if got := strs(c.ok(c.get("/v1/namespace/" + esc("lake", "ns") + "/table/list?include_declared=false")).Body["tables"]); strings.Join(got, ",") != "t" {
		t.Fatalf("L-14 include_declared=false: %v", got)
	}
	// L-20
	c.ok(c.create("t", versionBody("t", 3, w.stage(t, tl, 3, "three"), 5)))
	for q, want := range map[string]string{"?descending=true": "3,2,1", "?descending=true&limit=1": "3"} {
		if got := versionsOf(c.list("t", q)); join(got) != want {
			t.Fatalf("L-20 %s = %v", q, got)
		}
	}
	p1 := c.list("t", "?limit=2")
	tok, _ := p1.Body["page_token"].(string)
	if join(versionsOf(p1)) != "1,2" || tok == "" {
		t.Fatalf("L-20 first page: %s", p1.Raw)
	}
	if p2 := c.list("t", "?limit=2&page_token="+tok); join(versionsOf(p2)) != "3" || p2.Body["page_token"] != nil {
		t.Fatalf("L-20 second page: %s", p2.Raw)
	}
	// L-21
	tv := "/v1/table/" + esc("lake", "ns", "t") + "/version/"
	if r = c.ok(c.post(tv+"describe", map[string]any{"version": 2})); r.Body["version"].(map[string]any)["version"] != float64(2) {
		t.Fatalf("L-21: %s", r.Raw)
	}
	c.fails(c.post(tv+"describe", map[string]any{"version": 99}), 404, 11)
	if r = c.ok(c.post(tv+"describe", map[string]any{})); r.Body["version"].(map[string]any)["version"] != float64(3) {
		t.Fatalf("L-21 latest: %s", r.Raw)
	}
	// L-22
	if r = c.ok(c.post(tv+"delete", map[string]any{"ranges": []any{map[string]any{"start_version": 1, "end_version": 2}}})); r.Body["deleted_count"] != float64(1) {
		t.Fatalf("L-22: %s", r.Raw)
	}
	c.fails(c.post(tv+"describe", map[string]any{"version": 1}), 404, 11)
	c.ok(c.post(tv+"delete", map[string]any{"ranges": []any{map[string]any{"start_version": 0, "end_version": -1}}}))
	if got := versionsOf(c.list("t", "")); len(got) != 0 {
		t.Fatalf("L-22: %v left", got)
	}
	// L-23: all entries or none.
	r = c.ok(c.post("/v1/table/version/batch-create", map[string]any{"entries": []any{
		versionBody("t", 4, w.stage(t, tl, 4, "four"), 4), versionBody("t2", 1, w.stage(t, w.table("t2"), 1, "t2 one"), 6)}}))
	vs := r.Body["versions"].([]any)
	if len(vs) != 2 || !strings.Contains(vs[0].(map[string]any)["manifest_path"].(string), "/t.lance/") ||
		!strings.Contains(vs[1].(map[string]any)["manifest_path"].(string), "/t2.lance/") {
		t.Fatalf("L-23: %s", r.Raw)
	}
	c.fails(c.post("/v1/table/version/batch-create", map[string]any{"entries": []any{
		versionBody("t", 5, w.stage(t, tl, 5, "five"), 4), versionBody("t2", 1, w.stage(t, w.table("t2"), 1, "t2 again"), 8)}}), 409, 14)
	if got := versionsOf(c.list("t", "")); join(got) != "4" || w.read(t, relative(t, tl+"/_versions/18446744073709551610.manifest")) != "" {
		t.Fatalf("L-23: the failed batch left version 5 behind: %v", got)
	}
}

func join(vs []int64) string {
	var s []string
	for _, v := range vs {
		s = append(s, strconv.FormatInt(v, 10))
	}
	return strings.Join(s, ",")
}

func op(kind string, body map[string]any) map[string]any { return map[string]any{kind: body} }

func batchCases(t *testing.T, c *client, w *warehouse) {
	t3 := []string{"lake", "ns", "t3"}
	// L-24
	r := c.ok(c.post("/v1/table/batch-commit", map[string]any{"operations": []any{
		op("declare_table", map[string]any{"id": t3, "location": w.table("t3")}),
		op("create_table_version", versionBody("t3", 1, w.stage(t, w.table("t3"), 1, "t3 one"), 6))}}))
	res := r.Body["results"].([]any)
	if len(res) != 2 || res[0].(map[string]any)["declare_table"].(map[string]any)["location"] != w.table("t3") ||
		res[1].(map[string]any)["create_table_version"].(map[string]any)["version"].(map[string]any)["version"] != float64(1) {
		t.Fatalf("L-24: %s", r.Raw)
	}
	if join(versionsOf(c.list("t3", ""))) != "1" {
		t.Fatal("L-24: t3 has no version 1")
	}
	// L-25: the failure names its operation; nothing of the batch stays.
	r = c.fails(c.post("/v1/table/batch-commit", map[string]any{"operations": []any{
		op("create_table_version", versionBody("t", 5, w.stage(t, w.table("t"), 5, "five"), 4)),
		op("create_table_version", versionBody("t2", 1, w.stage(t, w.table("t2"), 1, "t2 again"), 8))}}), 409, 14)
	if d, _ := r.Body["detail"].(string); !strings.Contains(d, "operation 1") {
		t.Fatalf("L-25 detail: %s", r.Raw)
	}
	if join(versionsOf(c.list("t", ""))) != "4" || w.read(t, relative(t, w.table("t")+"/_versions/18446744073709551610.manifest")) != "" {
		t.Fatal("L-25: version 5 of t was left behind")
	}
	// L-26, L-27: shape errors.
	for _, ops := range [][]any{{map[string]any{}}, {map[string]any{"declare_table": map[string]any{"id": t3}, "deregister_table": map[string]any{"id": t3}}},
		{}, {op("declare_table", map[string]any{"location": w.table("x")})}, {op("drop_everything", map[string]any{"id": t3})}} {
		c.fails(c.post("/v1/table/batch-commit", map[string]any{"operations": ops}), 400, 13)
	}
	// L-28: a later operation sees an earlier one.
	c.ok(c.post("/v1/table/batch-commit", map[string]any{"operations": []any{
		op("deregister_table", map[string]any{"id": t3}), op("declare_table", map[string]any{"id": t3, "location": w.table("t3b")})}}))
	if d := c.ok(c.post("/v1/table/"+esc(t3...)+"/describe?check_declared=true", nil)); d.Body["is_only_declared"] != true || d.Body["location"] != w.table("t3b") {
		t.Fatalf("L-28: %s", d.Raw)
	}
	// L-29
	r = c.ok(c.post("/v1/table/batch-commit", map[string]any{"operations": []any{op("delete_table_versions",
		map[string]any{"id": []string{"lake", "ns", "t"}, "ranges": []any{map[string]any{"start_version": 4, "end_version": 5}}})}}))
	if r.Body["results"].([]any)[0].(map[string]any)["delete_table_versions"].(map[string]any)["deleted_count"] != float64(1) {
		t.Fatalf("L-29: %s", r.Raw)
	}
	// The delimiter is honoured on batch routes too.
	c.ok(c.post("/v1/table/batch-commit?delimiter=.", map[string]any{"operations": []any{
		op("declare_table", map[string]any{"id": []string{"lake", "ns", "t4"}, "location": w.table("t4")})}}))
}

func removalCases(t *testing.T, c *client, w *warehouse) {
	tl := w.table("t")
	t1 := "/v1/table/" + esc("lake", "ns", "t")
	four := relative(t, tl+"/_versions/18446744073709551611.manifest")
	// L-30: deregister keeps the data; the name can be declared again.
	r := c.ok(c.post(t1+"/deregister", map[string]any{}))
	if r.Body["location"] != tl || strings.Join(strs(r.Body["id"]), ".") != "lake.ns.t" {
		t.Fatalf("L-30: %s", r.Raw)
	}
	c.fails(c.post(t1+"/describe", map[string]any{}), 404, 4)
	c.ok(c.post(t1+"/declare", map[string]any{"location": w.table("t-new")}))
	if w.read(t, four) != "four" {
		t.Fatal("L-30: deregister deleted data")
	}
	// Register, rename, and drop (which deletes the data).
	c.ok(c.post("/v1/table/"+esc("lake", "ns", "old")+"/register", map[string]any{"location": tl}))
	c.ok(c.post("/v1/table/"+esc("lake", "ns", "old")+"/rename", map[string]any{"new_table_name": "renamed"}))
	c.fails(c.post("/v1/table/"+esc("lake", "ns", "old")+"/exists", nil), 404, 4)
	c.ok(c.post("/v1/table/"+esc("lake", "ns", "renamed")+"/drop", nil))
	if w.read(t, four) != "" {
		t.Fatal("drop left the table's files")
	}
	// L-35: the data plane is not served.
	for _, p := range []string{t1 + "/query", t1 + "/insert", t1 + "/create_index", t1 + "/tags/list", t1 + "/branches/create", "/v1/transaction/x/describe"} {
		c.fails(c.post(p, map[string]any{}), 406, 0)
	}
	// A served path with another method is a 405 naming what it takes.
	for path, allow := range map[string]string{"/v1/namespace/" + esc("lake", "ns") + "/describe": "POST", "/v1/table": "GET"} {
		if r := c.fails(c.do("DELETE", path, nil), 405, 0); r.Header.Get("Allow") != allow {
			t.Fatalf("DELETE %s: Allow %q, want %q", path, r.Header.Get("Allow"), allow)
		}
	}
	// L-31
	ns := "/v1/namespace/" + esc("lake", "ns") + "/drop"
	c.fails(c.post(ns, map[string]any{}), 409, 3)
	c.ok(c.post(ns, map[string]any{"behavior": "Cascade"}))
	c.ok(c.post("/v1/namespace/nope/drop", map[string]any{"mode": "Skip"}))
	c.fails(c.post("/v1/namespace/nope/drop", map[string]any{}), 404, 1)
}

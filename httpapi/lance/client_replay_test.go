package lance_test

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestLanceClientSequence is case L-34 with managed_versioning: the
// script of @lancedb/lancedb 0.31.0 (connectNamespace("rest"),
// createNamespace, createTable, openTable, add, version, listVersions,
// tableNames, dropTable). That client cannot be installed here, so this
// replays, verbatim over raw HTTP, the request sequence the digest
// observed from it (/work/shared/research/iceberg-lance.md §B4), with
// the client's habits: ?delimiter=%24 on every URL, ids URL-encoded
// (lake%24ns%24t), the body repeating the id, version/list with the
// literal body null, naming_scheme V2, staging manifests named
// <table>/_versions/18446744073709551614.manifest-<uuid> and
// manifest_path relative to the store root (no scheme, no leading slash),
// and re-sending a version/create it already got an answer to. It checks
// what the client would.
func TestLanceClientSequence(t *testing.T) {
	w := fileWarehouse(t)
	nodes := newClient(t, w).nodes
	n := 0
	call := func(method, pathAndQuery string, body any) testcluster.Response {
		t.Helper()
		nd := nodes[n%len(nodes)]
		n++
		return testcluster.Do(t, method, nd.URL+lance.Prefix+pathAndQuery, body)
	}
	ok := func(r testcluster.Response, what string) testcluster.Response {
		t.Helper()
		if r.Status != 200 {
			t.Fatalf("%s: status %d: %s", what, r.Status, r.Raw)
		}
		return r
	}
	const tbl = "/v1/table/lake%24ns%24t"
	id := []string{"lake", "ns", "t"}

	// createNamespace(["lake"]), createNamespace(["lake","ns"])
	ok(call("POST", "/v1/namespace/lake/create?delimiter=%24", map[string]any{"id": []string{"lake"}}), "createNamespace lake")
	ok(call("POST", "/v1/namespace/lake%24ns/create?delimiter=%24", map[string]any{"id": []string{"lake", "ns"}}), "createNamespace lake$ns")

	// createTable("t", ...): declare, find the latest version (none),
	// write the data and a staging manifest, create version 1.
	r := ok(call("POST", tbl+"/declare?delimiter=%24", map[string]any{"id": id}), "declare")
	loc, _ := r.Body["location"].(string)
	if loc == "" || r.Body["managed_versioning"] != true {
		t.Fatalf("declare: %s", r.Raw)
	}
	latest := func(what string) testcluster.Response {
		t.Helper()
		return ok(call("POST", tbl+"/version/list?delimiter=%24&limit=1&descending=true", "null"), what)
	}
	if r = latest("createTable: latest"); strings.TrimSpace(string(r.Raw)) != `{"versions":[]}` {
		t.Fatalf("createTable: a new table's versions: %s, want {\"versions\":[]}", r.Raw)
	}
	// The client writes its data files and the staging manifest at the
	// location it was given, and names the manifest relative to the
	// store's root.
	stage := func(v int64, data string) string {
		t.Helper()
		staged := fmt.Sprintf("%s/_versions/%020d.manifest-%s", loc, ^uint64(0)-uint64(v), uuid.NewString())
		if err := w.objects.Write(context.Background(), loc+"/data/"+uuid.NewString()+".lance", []byte("rows")); err != nil {
			t.Fatal(err)
		}
		if err := w.objects.Write(context.Background(), staged, []byte(data)); err != nil {
			t.Fatal(err)
		}
		rel := relative(t, staged)
		if strings.Contains(rel, "://") || strings.HasPrefix(rel, "/") {
			t.Fatalf("manifest_path %q is not store-relative", rel)
		}
		return rel
	}
	createBody := func(v int64, staged, data string) map[string]any {
		return map[string]any{"id": id, "version": v, "manifest_path": staged, "manifest_size": len(data),
			"e_tag": "9861c1-6617e82df60f7-1bb", "naming_scheme": "V2"}
	}
	// The answer is the final V2 manifest of v, store-relative, which
	// holds the staged bytes.
	checkCreated := func(r testcluster.Response, v int64, data string) string {
		t.Helper()
		tv, _ := r.Body["version"].(map[string]any)
		final, _ := tv["manifest_path"].(string)
		if tv["version"] != float64(v) || tv["manifest_size"] != float64(len(data)) || v2Version(final) != v ||
			final != relative(t, loc+"/_versions/"+path.Base(final)) {
			t.Fatalf("version/create v%d: %s", v, r.Raw)
		}
		if got := w.read(t, final); got != data {
			t.Fatalf("v%d: the final manifest holds %q, want the staged %q", v, got, data)
		}
		return final
	}
	m1 := "manifest 1: rows {id:1},{id:2}"
	staged1 := stage(1, m1)
	r = ok(call("POST", tbl+"/version/create?delimiter=%24", createBody(1, staged1, m1)), "createTable: version/create 1")
	final1 := checkCreated(r, 1, m1)
	if w.read(t, staged1) != "" {
		t.Fatal("the staging manifest of v1 was left")
	}
	// The client's retry habit: the same version/create again (it
	// re-sends after errors and lost answers) is the same version.
	r = ok(call("POST", tbl+"/version/create?delimiter=%24", createBody(1, staged1, m1)), "createTable: version/create 1 again")
	if tv := r.Body["version"].(map[string]any); tv["version"] != float64(1) || tv["manifest_path"] != final1 {
		t.Fatalf("the replayed version/create: %s", r.Raw)
	}

	// openTable("t"): describe, then the latest version, whose manifest
	// the client reads directly.
	r = ok(call("POST", tbl+"/describe?delimiter=%24", map[string]any{"id": id}), "openTable: describe")
	if r.Body["location"] != loc || r.Body["managed_versioning"] != true || r.Body["version"] != float64(1) {
		t.Fatalf("openTable: describe %s", r.Raw)
	}
	r = latest("openTable: latest")
	vs, _ := r.Body["versions"].([]any)
	if len(vs) != 1 {
		t.Fatalf("openTable: latest %s", r.Raw)
	}
	v0 := vs[0].(map[string]any)
	if v0["version"] != float64(1) || v0["manifest_path"] != final1 || v2Version(final1) != 1 || w.read(t, final1) != m1 {
		t.Fatalf("openTable: latest %s", r.Raw)
	}

	// add([{id:3}]): version latest+1.
	m2 := "manifest 2: rows {id:1},{id:2},{id:3}"
	staged2 := stage(2, m2)
	r = ok(call("POST", tbl+"/version/create?delimiter=%24", createBody(2, staged2, m2)), "add: version/create 2")
	final2 := checkCreated(r, 2, m2)

	// version(): the latest is 2.
	if r = latest("version"); len(versionsOf(r)) != 1 || versionsOf(r)[0] != 2 ||
		r.Body["versions"].([]any)[0].(map[string]any)["manifest_path"] != final2 {
		t.Fatalf("version: %s", r.Raw)
	}

	// listVersions(): pages of 1000, newest first, following page_token
	// (a token seen twice is an error to the client).
	var all []int64
	seen := map[string]bool{}
	for tok := ""; ; {
		q := tbl + "/version/list?delimiter=%24&limit=1000&descending=true"
		if tok != "" {
			q += "&page_token=" + tok
		}
		r = ok(call("POST", q, "null"), "listVersions")
		all = append(all, versionsOf(r)...)
		next, _ := r.Body["page_token"].(string)
		if next == "" {
			break
		}
		if seen[next] {
			t.Fatalf("listVersions: page_token %q repeated", next)
		}
		seen[next], tok = true, next
	}
	if !slices.Equal(all, []int64{2, 1}) {
		t.Fatalf("listVersions: %v, want [2 1]", all)
	}

	// tableNames(["lake","ns"])
	r = ok(call("GET", "/v1/namespace/lake%24ns/table/list?delimiter=%24", nil), "tableNames")
	if got := strs(r.Body["tables"]); !slices.Equal(got, []string{"t"}) {
		t.Fatalf("tableNames: %s", r.Raw)
	}

	// dropTable("t"): the table is gone and so are its files.
	r = ok(call("POST", tbl+"/drop?delimiter=%24", nil), "dropTable")
	if r.Body["location"] != loc || !slices.Equal(strs(r.Body["id"]), id) {
		t.Fatalf("dropTable: %s", r.Raw)
	}
	for _, p := range []string{"/describe", "/exists", "/version/list"} {
		if r = call("POST", tbl+p+"?delimiter=%24", "null"); r.Status != 404 || r.Body["code"] != float64(4) {
			t.Fatalf("after dropTable, %s: %d %s", p, r.Status, r.Raw)
		}
	}
	r = ok(call("GET", "/v1/namespace/lake%24ns/table/list?delimiter=%24", nil), "tableNames after drop")
	if got := strs(r.Body["tables"]); len(got) != 0 {
		t.Fatalf("tableNames after drop: %s", r.Raw)
	}
	if objs, err := w.objects.List(context.Background(), loc+"/"); err != nil || len(objs) != 0 {
		t.Fatalf("after dropTable the table's files remain: %v %v", objs, err)
	}
}

// v2Version is the version a V2 manifest name stands for (-1 if path
// names no V2 manifest).
func v2Version(p string) int64 {
	name, ok := strings.CutSuffix(path.Base(p), ".manifest")
	if !ok || len(name) != 20 {
		return -1
	}
	u, err := strconv.ParseUint(name, 10, 64)
	if err != nil {
		return -1
	}
	return int64(^uint64(0) - u)
}

package iceberg_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcat/raftcat/httpapi/iceberg"
	tc "github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

const ucPrefix = "/api/2.1/unity-catalog"

var seq atomic.Int64

func uniq(prefix string) string { return fmt.Sprintf("%s_%d", prefix, seq.Add(1)) }

// viewsURL is the views collection of a namespace of warehouse unity.
func viewsURL(base, ns string) string {
	return base + iceberg.Prefix + "/v1/unity/namespaces/" + ns + "/views"
}

func viewURL(base, ns, name string) string { return viewsURL(base, ns) + "/" + name }

func schemaJSON() map[string]any {
	return map[string]any{"type": "struct", "schema-id": 0, "fields": []any{
		map[string]any{"id": 1, "name": "id", "type": "long", "required": false}}}
}

func viewVersion(id int, sql string) map[string]any {
	return map[string]any{"version-id": id, "timestamp-ms": 1700000000000 + id, "schema-id": 0,
		"summary":           map[string]any{"engine-name": "spark"},
		"representations":   []any{map[string]any{"type": "sql", "sql": sql, "dialect": "spark"}},
		"default-namespace": []any{"default"}}
}

func viewBody(name string) map[string]any {
	return map[string]any{"name": name, "schema": schemaJSON(), "view-version": viewVersion(1, "select 1"),
		"properties": map[string]any{"comment": "first"}}
}

// newVersionUpdates add a view version and make it current.
func newVersionUpdates(sql string) map[string]any {
	return map[string]any{"updates": []any{
		map[string]any{"action": "add-view-version", "view-version": viewVersion(2, sql)},
		map[string]any{"action": "set-current-view-version", "view-version-id": -1},
	}}
}

func wantOK(t *testing.T, r tc.Response, status int, what string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: %d %s", what, r.Status, r.Text())
	}
}

// wantError checks Iceberg's error envelope.
func wantError(t *testing.T, r tc.Response, status int, typ string) {
	t.Helper()
	e, _ := r.Body["error"].(map[string]any)
	if r.Status != status || e == nil || e["type"] != typ || e["code"] != float64(status) || e["message"] == "" {
		t.Fatalf("want %d %s, got %d %s", status, typ, r.Status, r.Text())
	}
}

func metaOf(t *testing.T, r tc.Response) (string, map[string]any) {
	t.Helper()
	loc, _ := r.Body["metadata-location"].(string)
	meta, _ := r.Body["metadata"].(map[string]any)
	if loc == "" || meta == nil {
		t.Fatalf("no view in %s", r.Text())
	}
	return loc, meta
}

// fileExists reports whether a file:// metadata location is on disk.
func fileExists(loc string) bool {
	_, err := os.Stat(strings.TrimPrefix(loc, "file://"))
	return err == nil
}

func newSchema(t *testing.T, base string) string {
	t.Helper()
	name := uniq("ns")
	wantOK(t, tc.Do(t, http.MethodPost, base+ucPrefix+"/schemas", map[string]any{"name": name, "catalog_name": "unity"}),
		http.StatusOK, "create schema")
	return name
}

func TestViewLifecycle(t *testing.T) {
	nodes := tc.Start(t, 3, tc.Options{})
	leader := tc.Leader(t, nodes)
	follower := tc.Followers(nodes, leader)[0].URL
	ns, other := newSchema(t, follower), newSchema(t, follower)

	r := tc.Do(t, http.MethodPost, viewsURL(follower, ns), viewBody("recent"))
	wantOK(t, r, http.StatusOK, "create")
	loc0, meta := metaOf(t, r)
	if !strings.Contains(loc0, "/views/"+meta["view-uuid"].(string)+"/metadata/00000-") || !fileExists(loc0) ||
		meta["current-version-id"] != float64(1) || dig(meta, "properties", "comment") != "first" {
		t.Fatalf("created %s: %v", loc0, meta)
	}
	list := tc.Do(t, http.MethodGet, viewsURL(leader.URL, ns), nil)
	wantOK(t, list, http.StatusOK, "list")
	if got := fmt.Sprint(list.Body["identifiers"]); got != "[map[name:recent namespace:["+ns+"]]]" {
		t.Fatalf("identifiers %s", got)
	}
	for _, nd := range nodes {
		r := tc.Do(t, http.MethodGet, viewURL(nd.URL, ns, "recent"), nil)
		if loc, _ := metaOf(t, r); loc != loc0 {
			t.Fatalf("%s loads %s, want %s", nd.URL, loc, loc0)
		}
	}
	wantOK(t, tc.Do(t, http.MethodHead, viewURL(follower, ns, "recent"), nil), http.StatusNoContent, "exists")
	wantOK(t, tc.Do(t, http.MethodHead, viewURL(follower, ns, "nope"), nil), http.StatusNotFound, "missing exists")

	r = tc.Do(t, http.MethodPost, viewURL(follower, ns, "recent"), newVersionUpdates("select 2"))
	wantOK(t, r, http.StatusOK, "replace")
	loc1, meta := metaOf(t, r)
	if !strings.Contains(loc1, "/metadata/00001-") || !fileExists(loc1) || meta["current-version-id"] != float64(2) ||
		len(meta["version-log"].([]any)) != 2 {
		t.Fatalf("replaced %s: %v", loc1, meta)
	}
	same := tc.Do(t, http.MethodPost, viewURL(follower, ns, "recent"), map[string]any{"updates": []any{}})
	if loc, _ := metaOf(t, same); loc != loc1 {
		t.Fatalf("an empty replace moved the view to %s", loc)
	}
	wrong := map[string]any{"requirements": []any{map[string]any{"type": "assert-view-uuid", "uuid": "00000000-0000-4000-8000-000000000000"}},
		"updates": []any{map[string]any{"action": "set-properties", "updates": map[string]any{"k": "v"}}}}
	wantError(t, tc.Do(t, http.MethodPost, viewURL(follower, ns, "recent"), wrong), http.StatusConflict, "CommitFailedException")

	rename := map[string]any{"source": map[string]any{"namespace": []any{ns}, "name": "recent"},
		"destination": map[string]any{"namespace": []any{other}, "name": "latest"}}
	wantOK(t, tc.Do(t, http.MethodPost, follower+iceberg.Prefix+"/v1/unity/views/rename", rename), http.StatusNoContent, "rename")
	wantError(t, tc.Do(t, http.MethodGet, viewURL(follower, ns, "recent"), nil), http.StatusNotFound, "NoSuchViewException")
	if loc, _ := metaOf(t, tc.Do(t, http.MethodGet, viewURL(follower, other, "latest"), nil)); loc != loc1 {
		t.Fatalf("renamed view at %s", loc)
	}
	wantError(t, tc.Do(t, http.MethodPost, follower+iceberg.Prefix+"/v1/unity/views/rename", rename), http.StatusNotFound, "NoSuchViewException")

	wantOK(t, tc.Do(t, http.MethodDelete, viewURL(follower, other, "latest"), nil), http.StatusNoContent, "drop")
	wantError(t, tc.Do(t, http.MethodDelete, viewURL(follower, other, "latest"), nil), http.StatusNotFound, "NoSuchViewException")
	wantError(t, tc.Do(t, http.MethodPost, viewURL(follower, other, "latest"), newVersionUpdates("x")), http.StatusNotFound, "NoSuchViewException")
	if l := tc.Do(t, http.MethodGet, viewsURL(follower, other), nil); fmt.Sprint(l.Body["identifiers"]) != "[]" {
		t.Fatalf("views left: %s", l.Text())
	}
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	return v
}

func TestViewListPages(t *testing.T) {
	nodes := tc.Start(t, 3, tc.Options{})
	base := nodes[0].URL
	ns := newSchema(t, base)
	for _, n := range []string{"a", "b", "c"} {
		wantOK(t, tc.Do(t, http.MethodPost, viewsURL(base, ns), viewBody(n)), http.StatusOK, "create "+n)
	}
	var names []string
	token := ""
	for range 3 {
		r := tc.Do(t, http.MethodGet, viewsURL(base, ns)+"?pageSize=2&pageToken="+token, nil)
		wantOK(t, r, http.StatusOK, "page")
		for _, id := range r.Body["identifiers"].([]any) {
			names = append(names, id.(map[string]any)["name"].(string))
		}
		token, _ = r.Body["next-page-token"].(string)
		if token == "" {
			break
		}
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Fatalf("pages gave %v", names)
	}
	wantError(t, tc.Do(t, http.MethodGet, viewsURL(base, ns)+"?pageSize=0", nil), http.StatusBadRequest, "BadRequestException")
	wantError(t, tc.Do(t, http.MethodGet, viewsURL(base, "nope"), nil), http.StatusNotFound, "NoSuchNamespaceException")
}

// Tables and views share names; view routes never see tables, and UC's
// table listing shows views as type VIEW.
func TestViewAndTableNamesClash(t *testing.T) {
	nodes := tc.Start(t, 3, tc.Options{})
	base := nodes[1].URL
	ns := newSchema(t, base)
	table := map[string]any{"name": "tbl", "catalog_name": "unity", "schema_name": ns, "table_type": "EXTERNAL",
		"data_source_format": "DELTA", "storage_location": "file://" + t.TempDir() + "/tbl", "columns": []any{
			map[string]any{"name": "id", "type_json": `{"name":"id","type":"long","nullable":true,"metadata":{}}`, "position": 0}}}
	wantOK(t, tc.Do(t, http.MethodPost, base+ucPrefix+"/tables", table), http.StatusOK, "create table")

	wantError(t, tc.Do(t, http.MethodPost, viewsURL(base, ns), viewBody("tbl")), http.StatusConflict, "AlreadyExistsException")
	wantError(t, tc.Do(t, http.MethodGet, viewURL(base, ns, "tbl"), nil), http.StatusNotFound, "NoSuchViewException")
	wantOK(t, tc.Do(t, http.MethodHead, viewURL(base, ns, "tbl"), nil), http.StatusNotFound, "exists on a table")
	wantError(t, tc.Do(t, http.MethodDelete, viewURL(base, ns, "tbl"), nil), http.StatusNotFound, "NoSuchViewException")
	wantError(t, tc.Do(t, http.MethodPost, viewURL(base, ns, "tbl"), newVersionUpdates("x")), http.StatusNotFound, "NoSuchViewException")

	wantOK(t, tc.Do(t, http.MethodPost, viewsURL(base, ns), viewBody("v")), http.StatusOK, "create view")
	wantError(t, tc.Do(t, http.MethodPost, viewsURL(base, ns), viewBody("v")), http.StatusConflict, "AlreadyExistsException")
	rename := map[string]any{"source": map[string]any{"namespace": []any{ns}, "name": "v"},
		"destination": map[string]any{"namespace": []any{ns}, "name": "tbl"}}
	wantError(t, tc.Do(t, http.MethodPost, base+iceberg.Prefix+"/v1/unity/views/rename", rename), http.StatusConflict, "AlreadyExistsException")
	table["name"], table["storage_location"] = "v", "file://"+t.TempDir()+"/v"
	if r := tc.Do(t, http.MethodPost, base+ucPrefix+"/tables", table); r.Status < 400 || r.Status >= 500 {
		t.Fatalf("a table over a view's name: %d %s", r.Status, r.Text())
	}
	list := tc.Do(t, http.MethodGet, viewsURL(base, ns), nil)
	if got := fmt.Sprint(list.Body["identifiers"]); got != "[map[name:v namespace:["+ns+"]]]" {
		t.Fatalf("views listed: %s", got)
	}
	uc := tc.Do(t, http.MethodGet, base+ucPrefix+"/tables/unity."+ns+".v", nil)
	if uc.Body["table_type"] != "VIEW" || uc.Body["data_source_format"] != "ICEBERG" {
		t.Fatalf("UC shows the view as %s", uc.Text())
	}
}

func TestViewBadInputChangesNothing(t *testing.T) {
	nodes := tc.Start(t, 3, tc.Options{})
	base := nodes[0].URL
	ns := newSchema(t, base)
	noRepr := viewBody("bad")
	noRepr["view-version"].(map[string]any)["representations"] = []any{}
	noName := viewBody("x")
	delete(noName, "name")
	for name, body := range map[string]any{"no representations": noRepr, "no name": noName,
		"no schema":    map[string]any{"name": "x", "view-version": viewVersion(1, "s")},
		"bad location": map[string]any{"name": "x", "location": "relative/path", "schema": schemaJSON(), "view-version": viewVersion(1, "s")},
		"not JSON":     `{"name":`} {
		t.Run(name, func(t *testing.T) {
			wantError(t, tc.Do(t, http.MethodPost, viewsURL(base, ns), body), http.StatusBadRequest, "BadRequestException")
		})
	}
	wantError(t, tc.Do(t, http.MethodPost, viewsURL(base, "nope"), viewBody("x")), http.StatusNotFound, "NoSuchNamespaceException")
	wantOK(t, tc.Do(t, http.MethodPost, viewsURL(base, ns), viewBody("v")), http.StatusOK, "create")
	for name, body := range map[string]any{
		"no updates":     map[string]any{"requirements": []any{}},
		"unknown action": map[string]any{"updates": []any{map[string]any{"action": "explode"}}},
		"unknown version": map[string]any{"updates": []any{
			map[string]any{"action": "set-current-view-version", "view-version-id": 7}}},
		"relative location": map[string]any{"updates": []any{
			map[string]any{"action": "set-location", "location": "relative/dir"}}},
		"other identifier": map[string]any{"identifier": map[string]any{"namespace": []any{ns}, "name": "w"}, "updates": []any{}},
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, tc.Do(t, http.MethodPost, viewURL(base, ns, "v"), body), http.StatusBadRequest, "BadRequestException")
		})
	}
	r := tc.Do(t, http.MethodGet, viewURL(base, ns, "v"), nil)
	if loc, meta := metaOf(t, r); !strings.Contains(loc, "/00000-") || meta["current-version-id"] != float64(1) {
		t.Fatalf("bad input changed the view: %s", r.Text())
	}
	if l := tc.Do(t, http.MethodGet, viewsURL(base, ns), nil); fmt.Sprint(l.Body["identifiers"]) != "[map[name:v namespace:["+ns+"]]]" {
		t.Fatalf("views %s", l.Text())
	}
}

func TestConfigAdvertisesViewEndpoints(t *testing.T) {
	nodes := tc.Start(t, 3, tc.Options{})
	r := tc.Do(t, http.MethodGet, nodes[2].URL+iceberg.Prefix+"/v1/config?warehouse=unity", nil)
	wantOK(t, r, http.StatusOK, "config")
	var got []string
	for _, e := range r.Body["endpoints"].([]any) {
		got = append(got, e.(string))
	}
	for _, want := range []string{"GET /v1/{prefix}/namespaces/{namespace}/views", "POST /v1/{prefix}/namespaces/{namespace}/views",
		"GET /v1/{prefix}/namespaces/{namespace}/views/{view}", "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}", "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"POST /v1/{prefix}/views/rename"} {
		if !slices.Contains(got, want) {
			t.Errorf("endpoints %v lack %s", got, want)
		}
	}
	if dig(r.Body, "overrides", "prefix") != "unity" {
		t.Fatalf("overrides %v", r.Body["overrides"])
	}
}

// barrier holds the writes of new view versions until n have arrived, so
// that n replaces all read the same base before any proposes.
type barrier struct {
	storage.ObjectStore
	n       int
	mu      sync.Mutex
	seen    int
	release chan struct{}
}

func (b *barrier) Write(ctx context.Context, loc string, data []byte) error {
	if strings.Contains(loc, "/metadata/00001-") {
		b.mu.Lock()
		if b.seen++; b.seen == b.n {
			close(b.release)
		}
		b.mu.Unlock()
		select {
		case <-b.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return b.ObjectStore.Write(ctx, loc, data)
}

func TestConcurrentViewReplacesHaveOneWinner(t *testing.T) {
	const n = 4
	release := make(chan struct{})
	var barriers []*barrier
	var mu sync.Mutex
	wrap := func(s storage.ObjectStore) iceberg.ObjectStore {
		mu.Lock()
		defer mu.Unlock()
		b := &barrier{ObjectStore: s, n: n, release: release}
		barriers = append(barriers, b)
		return b
	}
	nodes := tc.Start(t, 3, tc.Options{IcebergObjects: wrap})
	leader := tc.Leader(t, nodes)
	ns := newSchema(t, leader.URL)
	wantOK(t, tc.Do(t, http.MethodPost, viewsURL(leader.URL, ns), viewBody("v")), http.StatusOK, "create")

	results := make([]tc.Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := map[string]any{"updates": []any{map[string]any{"action": "set-properties",
				"updates": map[string]any{"writer": fmt.Sprint(i)}}}}
			results[i] = tc.Do(t, http.MethodPost, viewURL(nodes[i%len(nodes)].URL, ns, "v"), body)
		})
	}
	wg.Wait()
	winner, lost := -1, 0
	for i, r := range results {
		switch r.Status {
		case http.StatusOK:
			if winner >= 0 {
				t.Fatalf("two winners: %d and %d", winner, i)
			}
			winner = i
		default:
			wantError(t, r, http.StatusConflict, "CommitFailedException")
			lost++
		}
	}
	if winner < 0 || lost != n-1 {
		t.Fatalf("winner %d, lost %d", winner, lost)
	}
	loc, meta := metaOf(t, tc.Do(t, http.MethodGet, viewURL(leader.URL, ns, "v"), nil))
	if dig(meta, "properties", "writer") != fmt.Sprint(winner) {
		t.Fatalf("the view has %v, the winner was %d", meta["properties"], winner)
	}
	dir := strings.TrimPrefix(loc[:strings.LastIndex(loc, "/")], "file://")
	tc.WaitFor(t, 10*time.Second, "the losers' files to go", func() bool {
		entries, _ := os.ReadDir(dir)
		return len(entries) == 2 // the created and the winning version
	})
}

// A replace that sets a new location writes its metadata file there, and
// the next replace keeps writing there.
func TestViewReplaceMovesItsMetadata(t *testing.T) {
	nodes := tc.Start(t, 3, tc.Options{})
	base := nodes[0].URL
	ns := newSchema(t, base)
	asked := viewBody("v")
	first := "file://" + t.TempDir() + "/first"
	asked["location"] = first + "/"
	loc0, meta := metaOf(t, tc.Do(t, http.MethodPost, viewsURL(base, ns), asked))
	if !strings.HasPrefix(loc0, first+"/metadata/00000-") || meta["location"] != first {
		t.Fatalf("created at %s, location %v", loc0, meta["location"])
	}
	moved := "file://" + t.TempDir() + "/moved"
	r := tc.Do(t, http.MethodPost, viewURL(base, ns, "v"), map[string]any{"updates": []any{
		map[string]any{"action": "set-location", "location": moved}}})
	wantOK(t, r, http.StatusOK, "move")
	loc1, meta := metaOf(t, r)
	if !strings.HasPrefix(loc1, moved+"/metadata/00001-") || meta["location"] != moved || !fileExists(loc1) {
		t.Fatalf("moved to %s, location %v", loc1, meta["location"])
	}
	loc2, _ := metaOf(t, tc.Do(t, http.MethodPost, viewURL(base, ns, "v"), newVersionUpdates("select 3")))
	if !strings.HasPrefix(loc2, moved+"/metadata/00002-") {
		t.Fatalf("the next version went to %s", loc2)
	}
}

// Iceberg tables and views share names (409 both ways, for creates and
// renames), table routes never see views, and view routes never see
// tables; views live in nested namespaces too.
func TestViewsAndIcebergTablesKeepApart(t *testing.T) {
	nodes := setup(t) // namespace db
	nd := nodes[1]
	create(t, nd, "events")
	ok(t, http.StatusOK, http.MethodPost, base(nd)+"/namespaces", `{"namespace":["db","deep"]}`)
	deep := nsPath("db", "deep")
	wantOK(t, tc.Do(t, http.MethodPost, viewsURL(nd.URL, deep), viewBody("recent")), http.StatusOK, "view in a nested namespace")
	wantOK(t, tc.Do(t, http.MethodPost, viewsURL(nd.URL, "db"), viewBody("v")), http.StatusOK, "view")

	expectError(t, tc.Do(t, http.MethodPost, viewsURL(nd.URL, "db"), viewBody("events")), http.StatusConflict, "AlreadyExistsException")
	expectError(t, tc.Do(t, http.MethodPost, base(nd)+"/namespaces/db/tables", createBody("v")), http.StatusConflict, "AlreadyExistsException")
	expectError(t, tc.Do(t, http.MethodPost, base(nd)+"/tables/rename",
		`{"source":{"namespace":["db"],"name":"events"},"destination":{"namespace":["db"],"name":"v"}}`), http.StatusConflict, "AlreadyExistsException")
	expectError(t, tc.Do(t, http.MethodPost, base(nd)+"/views/rename",
		`{"source":{"namespace":["db"],"name":"v"},"destination":{"namespace":["db"],"name":"events"}}`), http.StatusConflict, "AlreadyExistsException")

	expectError(t, tc.Do(t, http.MethodGet, base(nd)+"/namespaces/db/tables/v", nil), http.StatusNotFound, "NoSuchTableException")
	ok(t, http.StatusNotFound, http.MethodHead, base(nd)+"/namespaces/db/tables/v", nil)
	expectError(t, tc.Do(t, http.MethodDelete, base(nd)+"/namespaces/db/tables/v", nil), http.StatusNotFound, "NoSuchTableException")
	expectError(t, tc.Do(t, http.MethodPost, base(nd)+"/namespaces/db/tables/v", `{"requirements":[],"updates":[]}`),
		http.StatusNotFound, "NoSuchTableException")
	expectError(t, tc.Do(t, http.MethodGet, viewURL(nd.URL, "db", "events"), nil), http.StatusNotFound, "NoSuchViewException")
	ok(t, http.StatusNotFound, http.MethodHead, viewURL(nd.URL, "db", "events"), nil)
	expectError(t, tc.Do(t, http.MethodDelete, viewURL(nd.URL, "db", "events"), nil), http.StatusNotFound, "NoSuchViewException")
	expectError(t, tc.Do(t, http.MethodPost, base(nd)+"/views/rename",
		`{"source":{"namespace":["db"],"name":"events"},"destination":{"namespace":["db"],"name":"x"}}`), http.StatusNotFound, "NoSuchViewException")

	if got := tableNames(ok(t, http.StatusOK, http.MethodGet, base(nd)+"/namespaces/db/tables", nil)); fmt.Sprint(got) != "[events]" {
		t.Fatalf("tables listed: %v", got)
	}
	views := ok(t, http.StatusOK, http.MethodGet, viewsURL(nd.URL, "db"), nil)
	if got := fmt.Sprint(views.Body["identifiers"]); got != "[map[name:v namespace:[db]]]" {
		t.Fatalf("views listed: %s", got)
	}
	expectError(t, tc.Do(t, http.MethodDelete, base(nd)+"/namespaces/"+deep, nil), http.StatusConflict, "NamespaceNotEmptyException")
	rename := `{"source":{"namespace":["db","deep"],"name":"recent"},"destination":{"namespace":["db"],"name":"recent"}}`
	ok(t, http.StatusNoContent, http.MethodPost, base(nd)+"/views/rename", rename)
	ok(t, http.StatusNoContent, http.MethodDelete, base(nd)+"/namespaces/"+deep, nil)
	ok(t, http.StatusOK, http.MethodGet, viewURL(nd.URL, "db", "recent"), nil)
}

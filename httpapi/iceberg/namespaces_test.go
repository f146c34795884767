package iceberg_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// Namespaces over three nodes: create (one and several levels), load,
// HEAD, list with parent and pages, property updates with exact lists,
// 422 for a key set and removed, drop refused while non-empty.
func TestNamespaces(t *testing.T) {
	nodes := start(t)
	a, b, c := base(nodes[0]), base(nodes[1]), base(nodes[2])
	r := ok(t, http.StatusOK, http.MethodPost, a+"/namespaces", `{"namespace":["db"],"properties":null}`)
	if fmt.Sprint(r.Body["namespace"]) != "[db]" || fmt.Sprint(r.Body["properties"]) != "map[]" {
		t.Fatalf("create answered %s", r.Raw)
	}
	expectError(t, testcluster.Do(t, http.MethodPost, b+"/namespaces", `{"namespace":["db"]}`), 409, "AlreadyExistsException")
	for _, bad := range []string{`{"namespace":[]}`, `{}`, `{"namespace":["x"`, `{"namespace":["a\u0000"]}`} {
		expectError(t, testcluster.Do(t, http.MethodPost, c+"/namespaces", bad), 400, "BadRequestException")
	}
	ok(t, http.StatusOK, http.MethodPost, a+"/namespaces", map[string]any{"namespace": []string{"db", "b c"}})
	ok(t, http.StatusOK, http.MethodPost, b+"/namespaces", map[string]any{"namespace": []string{"db", "b c", "d/e"}, "properties": map[string]string{"k": "v"}})
	expectError(t, testcluster.Do(t, http.MethodPost, b+"/namespaces", `{"namespace":["nope","x"]}`), 404, "NoSuchNamespaceException")
	for _, nd := range nodes {
		r := ok(t, http.StatusOK, http.MethodGet, base(nd)+"/namespaces/"+nsPath("db", "b c", "d/e"), nil)
		if fmt.Sprint(r.Body["namespace"]) != "[db b c d/e]" || fmt.Sprint(r.Body["properties"]) != "map[k:v]" {
			t.Fatalf("load answered %s", r.Raw)
		}
		ok(t, http.StatusNoContent, http.MethodHead, base(nd)+"/namespaces/db", nil)
		ok(t, http.StatusNotFound, http.MethodHead, base(nd)+"/namespaces/nope", nil)
		expectError(t, testcluster.Do(t, http.MethodGet, base(nd)+"/namespaces/nope", nil), 404, "NoSuchNamespaceException")
	}
	checkList(t, c+"/namespaces?parent=db", [][]string{{"db", "b c"}})
	checkList(t, c+"/namespaces?parent="+url.QueryEscape("db\x1fb c"), [][]string{{"db", "b c", "d/e"}})
	expectError(t, testcluster.Do(t, http.MethodGet, c+"/namespaces?parent=nope", nil), 404, "NoSuchNamespaceException")
	expectError(t, testcluster.Do(t, http.MethodGet, nodes[0].URL+"/api/2.1/unity-catalog/iceberg/v1/nope/namespaces", nil), 404, "NoSuchWarehouseException")

	r = ok(t, http.StatusOK, http.MethodPost, a+"/namespaces/db/properties", `{"removals":["x"],"updates":{"owner":"me"}}`)
	if fmt.Sprint(r.Body["updated"], r.Body["removed"], r.Body["missing"]) != "[owner] [] [x]" {
		t.Fatalf("properties answered %s", r.Raw)
	}
	r = ok(t, http.StatusOK, http.MethodPost, b+"/namespaces/db/properties", `{"removals":["owner"],"updates":null}`)
	if fmt.Sprint(r.Body["updated"], r.Body["removed"]) != "[] [owner]" {
		t.Fatalf("properties answered %s", r.Raw)
	}
	expectError(t, testcluster.Do(t, http.MethodPost, c+"/namespaces/db/properties", `{"removals":["k"],"updates":{"k":"v"}}`), 422, "UnprocessableEntityException")
	if r := ok(t, 200, http.MethodGet, c+"/namespaces/db", nil); fmt.Sprint(r.Body["properties"]) != "map[]" {
		t.Fatalf("properties after the 422: %s", r.Raw)
	}
	expectError(t, testcluster.Do(t, http.MethodPost, c+"/namespaces/nope/properties", `{"updates":{"a":"b"}}`), 404, "NoSuchNamespaceException")

	expectError(t, testcluster.Do(t, http.MethodDelete, a+"/namespaces/db", nil), 409, "NamespaceNotEmptyException")
	ok(t, http.StatusNoContent, http.MethodDelete, b+"/namespaces/"+nsPath("db", "b c", "d/e"), nil)
	ok(t, http.StatusNoContent, http.MethodDelete, b+"/namespaces/"+nsPath("db", "b c"), nil)
	ok(t, http.StatusNoContent, http.MethodDelete, c+"/namespaces/db", nil)
	expectError(t, testcluster.Do(t, http.MethodDelete, a+"/namespaces/db", nil), 404, "NoSuchNamespaceException")
}

// Without a pageToken every namespace is listed; with one, pages follow
// next-page-token to the end, with no duplicates.
func TestNamespacePages(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	u := base(nodes[0])
	ok(t, 200, http.MethodPost, u+"/namespaces", `{"namespace":["p"]}`)
	want := [][]string{}
	for i := range 5 {
		ns := []string{"p", fmt.Sprintf("n%d", i)}
		ok(t, 200, http.MethodPost, u+"/namespaces", map[string]any{"namespace": ns})
		want = append(want, ns)
	}
	checkList(t, u+"/namespaces?parent=p&pageSize=2", want)
	var got [][]string
	tok := ""
	for range 10 {
		r := ok(t, 200, http.MethodGet, u+"/namespaces?parent=p&pageSize=2&pageToken="+url.QueryEscape(tok), nil)
		got = append(got, listed(r)...)
		next, more := r.Body["next-page-token"].(string)
		if !more {
			break
		}
		tok = next
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("pages listed %v, want %v", got, want)
	}
	expectError(t, testcluster.Do(t, http.MethodGet, u+"/namespaces?pageSize=0", nil), 400, "BadRequestException")
}

func listed(r testcluster.Response) [][]string {
	var out [][]string
	for _, n := range r.Body["namespaces"].([]any) {
		var levels []string
		for _, l := range n.([]any) {
			levels = append(levels, l.(string))
		}
		out = append(out, levels)
	}
	return out
}

func checkList(t *testing.T, u string, want [][]string) {
	t.Helper()
	r := ok(t, http.StatusOK, http.MethodGet, u, nil)
	if got := listed(r); !slices.EqualFunc(got, want, slices.Equal) || r.Body["next-page-token"] != nil {
		t.Fatalf("%s listed %s, want %v", u, r.Raw, want)
	}
}

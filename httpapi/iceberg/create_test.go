package iceberg_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// A create honours format-version 3 (not kept as a property) and a given
// location (trailing slash trimmed, metadata below it); table listings
// page like namespace listings; requests no handler can take still answer
// in the Iceberg envelope.
func TestCreateOptionsAndPages(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	u := base(nodes[0])
	ok(t, http.StatusOK, http.MethodPost, u+"/namespaces", `{"namespace":["db"]}`)
	v3 := ok(t, http.StatusOK, http.MethodPost, u+"/namespaces/db/tables", strings.Replace(createBody("v3"), `{"k":"v"}`, `{"format-version":"3"}`, 1))
	m := meta(v3)
	if props, _ := m["properties"].(map[string]any); m["format-version"] != 3.0 || m["next-row-id"] != 0.0 || props["format-version"] != nil {
		t.Fatalf("format-version 3 create: %s", v3.Raw)
	}
	custom := "file://" + t.TempDir() + "/custom"
	c := ok(t, http.StatusOK, http.MethodPost, u+"/namespaces/db/tables", strings.Replace(createBody("c"), `"name":"c",`, `"name":"c","location":"`+custom+`/",`, 1))
	if meta(c)["location"] != custom || !strings.HasPrefix(c.Body["metadata-location"].(string), custom+"/metadata/00000-") {
		t.Fatalf("custom location create: %s", c.Raw)
	}
	for _, name := range []string{"a", "b", "d"} {
		ok(t, http.StatusOK, http.MethodPost, u+"/namespaces/db/tables", createBody(name))
	}
	want := []string{"a", "b", "c", "d", "v3"}
	if got := tableNames(ok(t, http.StatusOK, http.MethodGet, u+"/namespaces/db/tables?pageSize=2", nil)); !slices.Equal(got, want) {
		t.Fatalf("unpaged listing %v, want %v", got, want)
	}
	var got []string
	tok := ""
	for range 10 {
		r := ok(t, http.StatusOK, http.MethodGet, u+"/namespaces/db/tables?pageSize=2&pageToken="+url.QueryEscape(tok), nil)
		got = append(got, tableNames(r)...)
		next, more := r.Body["next-page-token"].(string)
		if !more {
			break
		}
		tok = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged listing %v, want %v", got, want)
	}
	expectError(t, testcluster.Do(t, http.MethodGet, u+"/namespaces/nope/tables", nil), 404, "NoSuchNamespaceException")
	expectError(t, testcluster.Do(t, http.MethodPost, u+"/namespaces", `{"namespace":["x"]}`, "Content-Type", "text/plain"), 415, "BadRequestException")
	expectError(t, testcluster.Do(t, http.MethodPut, u+"/namespaces", `{}`), 405, "BadRequestException")
}

func tableNames(r testcluster.Response) []string {
	var out []string
	for _, id := range r.Body["identifiers"].([]any) {
		out = append(out, id.(map[string]any)["name"].(string))
	}
	return out
}

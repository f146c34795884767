package iceberg_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/internal/testcluster"
)

var endpointForm = regexp.MustCompile(`^(GET|POST|HEAD|DELETE) /v1/\{prefix\}/`)

// Config answers on every node for the default warehouse and a named one,
// advertises exactly the routes the node serves, and refuses an unknown
// warehouse with 404 NoSuchWarehouseException.
func TestConfig(t *testing.T) {
	nodes := start(t)
	for _, nd := range nodes {
		for _, q := range []string{"", "?warehouse=unity"} {
			r := ok(t, http.StatusOK, http.MethodGet, nd.URL+iceberg.Prefix+"/v1/config"+q, nil)
			if o := r.Body["overrides"].(map[string]any); o["prefix"] != "unity" {
				t.Fatalf("overrides %v, want prefix unity", o)
			}
			if d, isMap := r.Body["defaults"].(map[string]any); !isMap || len(d) != 0 {
				t.Fatalf("defaults %v, want {}", r.Body["defaults"])
			}
			checkEndpoints(t, r.Body["endpoints"].([]any), served(nd.Routes()))
		}
		r := testcluster.Do(t, http.MethodGet, nd.URL+iceberg.Prefix+"/v1/config?warehouse=nope", nil)
		expectError(t, r, http.StatusNotFound, "NoSuchWarehouseException")
	}
}

// served lists a node's Iceberg catalog routes in endpoint form.
func served(routes []*echo.Route) []string {
	var out []string
	for _, rt := range routes {
		p, found := strings.CutPrefix(rt.Path, iceberg.Prefix+"/v1/:prefix/")
		if !found || !mustMethod(rt.Method) {
			continue
		}
		p = regexp.MustCompile(`:([a-z-]+)`).ReplaceAllString(p, "{$1}")
		out = append(out, rt.Method+" /v1/{prefix}/"+p)
	}
	return out
}

func checkEndpoints(t *testing.T, got []any, want []string) {
	t.Helper()
	var eps []string
	for _, e := range got {
		s := e.(string)
		if !endpointForm.MatchString(s) {
			t.Fatalf("endpoint %q is not in the METHOD /v1/{prefix}/... form", s)
		}
		eps = append(eps, s)
	}
	slices.Sort(eps)
	slices.Sort(want)
	if !slices.Equal(eps, want) {
		t.Fatalf("endpoints %v, want the served routes %v", eps, want)
	}
}

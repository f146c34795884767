package iceberg_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// base is the catalog path of warehouse unity below a node's URL.
func base(nd *testcluster.Node) string { return nd.URL + iceberg.Prefix + "/v1/unity" }

// nsPath is the path segment of a namespace: levels escaped, joined by %1F.
func nsPath(levels ...string) string {
	esc := make([]string, len(levels))
	for i, l := range levels {
		esc[i] = url.PathEscape(l)
	}
	return strings.Join(esc, "%1F")
}

// expectError checks an error answer: status, Iceberg envelope, type.
func expectError(t *testing.T, r testcluster.Response, status int, typ string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want JSON", ct)
	}
	e, ok := r.Body["error"].(map[string]any)
	if !ok || len(r.Body) != 1 {
		t.Fatalf("not an Iceberg error envelope: %s", r.Raw)
	}
	if msg, _ := e["message"].(string); msg == "" || e["type"] != typ || e["code"] != float64(status) {
		t.Fatalf("error %v, want type %s code %d and a message", e, typ, status)
	}
}

// ok sends a request and fails unless it answers want.
func ok(t *testing.T, want int, method, u string, body any, headers ...string) testcluster.Response {
	t.Helper()
	r := testcluster.Do(t, method, u, body, headers...)
	if r.Status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, u, r.Status, want, r.Raw)
	}
	return r
}

// start starts a three-node cluster.
func start(t *testing.T) []*testcluster.Node {
	nodes := testcluster.Start(t, 3, testcluster.Options{})
	testcluster.Leader(t, nodes)
	return nodes
}

func mustMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodPost || m == http.MethodHead || m == http.MethodDelete
}

func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

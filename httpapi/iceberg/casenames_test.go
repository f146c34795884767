package iceberg_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// expectCaseTwin checks a 409 AlreadyExistsException whose message says
// that the existing name differs only in case.
func expectCaseTwin(t *testing.T, r testcluster.Response) {
	t.Helper()
	expectError(t, r, http.StatusConflict, "AlreadyExistsException")
	if msg, _ := r.Body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "differs only in case") {
		t.Fatalf("message %q does not say the names differ only in case", msg)
	}
}

// A namespace, table or view whose name differs only in case from a
// sibling's is refused, created or renamed; lookups stay exact.
func TestCaseTwinNames(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	b := base(nodes[0])
	ok(t, http.StatusOK, http.MethodPost, b+"/namespaces", `{"namespace":["Cases"]}`)
	expectCaseTwin(t, testcluster.Do(t, http.MethodPost, b+"/namespaces", `{"namespace":["cases"]}`))
	ok(t, http.StatusOK, http.MethodPost, b+"/namespaces", `{"namespace":["Cases","Inner"]}`)
	expectCaseTwin(t, testcluster.Do(t, http.MethodPost, b+"/namespaces", `{"namespace":["Cases","INNER"]}`))
	ok(t, http.StatusNotFound, http.MethodHead, b+"/namespaces/cases", nil)

	tables := b + "/namespaces/Cases/tables"
	ok(t, http.StatusOK, http.MethodPost, tables, createBody("Orders"))
	expectCaseTwin(t, testcluster.Do(t, http.MethodPost, tables, createBody("orders")))
	expectCaseTwin(t, testcluster.Do(t, http.MethodPost, b+"/namespaces/Cases/views", viewBody("ORDERS")))
	ok(t, http.StatusOK, http.MethodPost, tables, createBody("other"))
	expectCaseTwin(t, testcluster.Do(t, http.MethodPost, b+"/tables/rename",
		`{"source":{"namespace":["Cases"],"name":"other"},"destination":{"namespace":["Cases"],"name":"oRDERS"}}`))
	ok(t, http.StatusNotFound, http.MethodHead, tables+"/orders", nil)
	ok(t, http.StatusNoContent, http.MethodHead, tables+"/other", nil)

	// Another spelling of its own name, and the same name in another
	// namespace, are no twins.
	ok(t, http.StatusNoContent, http.MethodPost, b+"/tables/rename",
		`{"source":{"namespace":["Cases"],"name":"Orders"},"destination":{"namespace":["Cases"],"name":"orders"}}`)
	ok(t, http.StatusOK, http.MethodPost, b+"/namespaces/"+nsPath("Cases", "Inner")+"/tables", createBody("OTHER"))
}

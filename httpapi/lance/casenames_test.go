package lance_test

import (
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// caseTwin checks a Lance "already exists" answer whose message says that
// the existing name differs only in case.
func (c *client) caseTwin(r testcluster.Response, code int) {
	c.t.Helper()
	c.fails(r, 409, code)
	if msg, _ := r.Body["error"].(string); !strings.Contains(msg, "differs only in case") {
		c.t.Fatalf("message %q does not say the names differ only in case", msg)
	}
}

// A namespace or table whose name differs only in case from a sibling's
// is refused, created, declared or renamed; lookups stay exact.
func TestCaseTwinNames(t *testing.T) {
	w := fileWarehouse(t)
	c := &client{t: t, nodes: testcluster.Start(t, 1, testcluster.Options{Objects: w.opts})}
	c.ok(c.post("/v1/namespace/Lake/create", map[string]any{}))
	c.caseTwin(c.post("/v1/namespace/lake/create", map[string]any{}), 2)
	c.caseTwin(c.post("/v1/namespace/LAKE/create", map[string]any{"mode": "exist_ok"}), 2)
	c.ok(c.post("/v1/namespace/"+esc("Lake", "Ns")+"/create", map[string]any{}))
	c.caseTwin(c.post("/v1/namespace/"+esc("Lake", "nS")+"/create", map[string]any{}), 2)
	c.ok(c.post("/v1/namespace/"+esc("Lake", "Ns", "Deep")+"/create", map[string]any{}))
	c.caseTwin(c.post("/v1/namespace/"+esc("Lake", "Ns", "deep")+"/create", map[string]any{}), 2)
	c.fails(c.post("/v1/namespace/lake/describe", map[string]any{}), 404, 1)

	c.ok(c.post("/v1/table/"+esc("Lake", "Ns", "Emb")+"/declare", map[string]any{"location": w.table("Emb")}))
	c.caseTwin(c.post("/v1/table/"+esc("Lake", "Ns", "emb")+"/declare", map[string]any{"location": w.table("emb2")}), 5)
	c.ok(c.post("/v1/table/"+esc("Lake", "Ns", "other")+"/declare", map[string]any{"location": w.table("other")}))
	c.caseTwin(c.post("/v1/table/"+esc("Lake", "Ns", "other")+"/rename", map[string]any{"new_table_name": "EMB"}), 5)
	c.fails(c.post("/v1/table/"+esc("Lake", "Ns", "emb")+"/describe", map[string]any{}), 404, 4)
	c.ok(c.post("/v1/table/"+esc("Lake", "Ns", "other")+"/describe", map[string]any{}))
	// Another spelling of its own name is no twin.
	c.ok(c.post("/v1/table/"+esc("Lake", "Ns", "Emb")+"/rename", map[string]any{"new_table_name": "EMB"}))
}

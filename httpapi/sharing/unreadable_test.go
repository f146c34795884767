package sharing_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/goldentables"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// expectUnreadable checks the answer to a read of a table whose Delta log
// cannot be read: 409 FAILED_PRECONDITION in the Delta Sharing envelope,
// a message naming the table and cause, and never the storage location.
func expectUnreadable(t *testing.T, status int, raw, table, cause, location string) {
	t.Helper()
	expectError(t, http.StatusConflict, "FAILED_PRECONDITION", status, raw)
	var e struct{ Message string }
	_ = json.Unmarshal([]byte(raw), &e)
	if !strings.Contains(e.Message, table) || !strings.Contains(e.Message, cause) {
		t.Fatalf("message %q does not name the table %q and the cause %q", e.Message, table, cause)
	}
	if strings.Contains(e.Message, strings.TrimPrefix(location, "file://")) {
		t.Fatalf("message %q shows the table's storage location", e.Message)
	}
}

// A shared table whose Delta log stops being readable (a commit deleted,
// a commit damaged, the whole log gone) answers a 409 in the Delta
// Sharing envelope that names the cause, not an anonymous 500.
func TestUnreadableSharedTableNamesTheCause(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	testcluster.Leader(t, nodes)
	p := provider{t: t, url: nodes[0].URL}
	p.schema("s")
	loc := copyTable(t, "simple_table")
	p.registerExternal("s", "t", loc)
	p.share("sh")
	p.add("sh", "unity.s.t", "s.t", true)
	prof := p.recipient("reader")
	p.grant("sh", "reader")
	c := prof.client(t)
	tp := tablePath("sh", "s", "t")
	c.query(tp, map[string]any{}).mustOK(t)
	logDir := filepath.Join(strings.TrimPrefix(loc, "file://"), "_delta_log")

	if err := os.WriteFile(filepath.Join(logDir, "00000000000000000004.json"), []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := c.query(tp, map[string]any{})
	expectUnreadable(t, a.status, a.raw, "sh.s.t", "_delta_log/00000000000000000004.json", loc)

	if err := os.Remove(filepath.Join(logDir, "00000000000000000000.json")); err != nil {
		t.Fatal(err)
	}
	a = c.query(tp, map[string]any{})
	expectUnreadable(t, a.status, a.raw, "sh.s.t", "commit 0 is missing and no checkpoint covers it", loc)
	m := c.ndjson(http.MethodGet, tp+"/metadata", nil)
	expectUnreadable(t, m.status, m.raw, "sh.s.t", "commit 0 is missing", loc)

	if err := os.RemoveAll(logDir); err != nil {
		t.Fatal(err)
	}
	for _, r := range []answer{c.query(tp, map[string]any{}), c.ndjson(http.MethodGet, tp+"/version", nil)} {
		expectUnreadable(t, r.status, r.raw, "sh.s.t", "no Delta log", loc)
	}
}

// The README's managed table, whose commits exist only in the catalog, an
// external table registered before anything is written, and a batch
// holding either, are refused when added to a share, in UC REST's envelope
// naming the table and the cause; the share is left as it was. Once the
// table's log is in storage, the same update is accepted.
func TestAddingATableWithoutReadableLogIsRefused(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	base := testcluster.Leader(t, nodes).URL
	staged := testcluster.Stage(t, base, "unity", "default", "events")
	id := staged.Body["table-id"].(string)
	ok(t, 200, http.MethodPost, base+testcluster.DeltaBase+"/catalogs/unity/schemas/default/tables", testcluster.CreateManagedBody("events", staged))
	ok(t, 200, http.MethodPost, base+testcluster.TablePath("unity", "default", "events"), testcluster.CommitBody(id, 1, testcluster.StagedName(1, id)))

	p := provider{t: t, url: base}
	p.schema("s")
	empty := goldentables.URL(t.TempDir())
	p.registerExternal("s", "later", empty)
	p.registerExternal("s", "good", copyTable(t, "simple_table"))
	p.share("sh")
	update := func(names ...string) testcluster.Response {
		var updates []any
		for _, n := range names {
			updates = append(updates, map[string]any{"action": "ADD", "data_object": map[string]any{"name": n}})
		}
		return testcluster.Do(t, http.MethodPatch, base+uc+"/shares/sh", map[string]any{"updates": updates})
	}
	for _, c := range []struct {
		names       []string
		table, want string
	}{
		{[]string{"unity.default.events"}, "unity.default.events", "Delta log"},
		{[]string{"unity.s.later"}, "unity.s.later", "no Delta log"},
		{[]string{"unity.s.good", "unity.s.later"}, "updates[1]", "unity.s.later"},
	} {
		r := update(c.names...)
		expectUCError(t, r, http.StatusBadRequest, "FAILED_PRECONDITION")
		if msg := r.Body["message"].(string); !strings.Contains(msg, c.table) || !strings.Contains(msg, c.want) || strings.Contains(msg, "file://") {
			t.Fatalf("adding %v: message %q does not name %q and %q", c.names, msg, c.table, c.want)
		}
	}
	if got := ok(t, 200, http.MethodGet, base+uc+"/shares/sh?include_shared_data=true", nil); got.Body["objects"] != nil {
		t.Fatalf("a refused update changed the share: %s", got.Raw)
	}
	if err := os.CopyFS(strings.TrimPrefix(empty, "file://"), os.DirFS(filepath.Join(goldenDir(t), "simple_table"))); err != nil {
		t.Fatal(err)
	}
	if r := update("unity.s.later", "unity.s.good"); r.Status != http.StatusOK || strings.Count(string(r.Raw), `"status":"ACTIVE"`) != 2 {
		t.Fatalf("adding tables with readable logs: %d %s", r.Status, r.Raw)
	}
}

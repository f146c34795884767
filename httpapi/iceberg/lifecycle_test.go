package iceberg_test

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// Register makes an existing metadata file a table (409 over a taken
// name, overwrite swaps the pointer); rename moves a table across
// namespaces; drop with purge removes the table and its files.
func TestRegisterRenameDrop(t *testing.T) {
	nodes := setup(t)
	ok(t, http.StatusOK, http.MethodPost, base(nodes[0])+"/namespaces", `{"namespace":["other"]}`)
	r := create(t, nodes[0], "t1")
	loc := r.Body["metadata-location"].(string)
	ok(t, http.StatusNoContent, http.MethodDelete, base(nodes[1])+"/namespaces/db/tables/t1", nil)
	reg := `{"name":"r1","metadata-location":"` + loc + `"}`
	g := ok(t, http.StatusOK, http.MethodPost, base(nodes[1])+"/namespaces/db/register", reg)
	if g.Body["metadata-location"] != loc || meta(g)["table-uuid"] != meta(r)["table-uuid"] || g.Header.Get("ETag") != r.Header.Get("ETag") {
		t.Fatalf("register answered %s", g.Raw)
	}
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[2])+"/namespaces/db/register", reg), 409, "AlreadyExistsException")
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[2])+"/namespaces/db/register", `{"name":"r2","metadata-location":"file:///nowhere/x.metadata.json"}`), 400, "BadRequestException")
	c := ok(t, http.StatusOK, http.MethodPost, base(nodes[2])+"/namespaces/db/tables/r1", `{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`)
	ok(t, http.StatusOK, http.MethodPost, base(nodes[2])+"/namespaces/db/register", `{"name":"r1","metadata-location":"`+loc+`","overwrite":true}`)
	if now, _ := location(t, nodes[0], "r1"); now != loc || now == c.Body["metadata-location"] {
		t.Fatalf("overwrite left the pointer at %s", now)
	}

	rename := `{"source":{"namespace":["db"],"name":"r1"},"destination":{"namespace":["other"],"name":"r3"}}`
	ok(t, http.StatusNoContent, http.MethodPost, base(nodes[0])+"/tables/rename", rename)
	ok(t, http.StatusNotFound, http.MethodHead, base(nodes[1])+"/namespaces/db/tables/r1", nil)
	moved := ok(t, http.StatusOK, http.MethodGet, base(nodes[2])+"/namespaces/other/tables/r3", nil)
	if meta(moved)["table-uuid"] != meta(r)["table-uuid"] {
		t.Fatalf("renamed table answered %s", moved.Raw)
	}
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[0])+"/tables/rename", rename), 404, "NoSuchTableException")
	create(t, nodes[0], "t9")
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[0])+"/tables/rename",
		`{"source":{"namespace":["db"],"name":"t9"},"destination":{"namespace":["other"],"name":"r3"}}`), 409, "AlreadyExistsException")
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[0])+"/tables/rename",
		`{"source":{"namespace":["db"],"name":"t9"},"destination":{"namespace":["nope"],"name":"x"}}`), 404, "NoSuchNamespaceException")

	dir, _ := storage.LocalPath(meta(moved)["location"].(string))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("table directory before the purge: %v", err)
	}
	ok(t, http.StatusNoContent, http.MethodDelete, base(nodes[1])+"/namespaces/other/tables/r3?purgeRequested=true", nil)
	expectError(t, testcluster.Do(t, http.MethodGet, base(nodes[2])+"/namespaces/other/tables/r3", nil), 404, "NoSuchTableException")
	if entries := filesBelow(t, dir); len(entries) != 0 {
		t.Fatalf("files left after the purge: %v", entries)
	}
	expectError(t, testcluster.Do(t, http.MethodDelete, base(nodes[1])+"/namespaces/other/tables/r3", nil), 404, "NoSuchTableException")
}

// filesBelow lists the files below dir (none when dir is gone).
func filesBelow(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("list %s: %v", dir, err)
	}
	return out
}

// Credentials are vended for an Iceberg table; metrics are accepted for
// one (204); a Delta table of the name is not an Iceberg table (404
// naming its format) and blocks an Iceberg create (409).
func TestCredentialsMetricsAndOtherFormats(t *testing.T) {
	nodes := setup(t)
	create(t, nodes[0], "t1")
	u := base(nodes[1]) + "/namespaces/db/tables/t1"
	cr := ok(t, http.StatusOK, http.MethodGet, u+"/credentials", nil)
	creds := cr.Body["storage-credentials"].([]any)
	if len(creds) != 1 || !strings.HasPrefix(creds[0].(map[string]any)["prefix"].(string), "file://") {
		t.Fatalf("credentials answered %s", cr.Raw)
	}
	ok(t, http.StatusNoContent, http.MethodPost, u+"/metrics", `{"report-type":"scan-report","table-name":"db.t1"}`)
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[1])+"/namespaces/db/tables/nope/metrics", `{}`), 404, "NoSuchTableException")
	expectError(t, testcluster.Do(t, http.MethodGet, base(nodes[1])+"/namespaces/db/tables/nope/credentials", nil), 404, "NoSuchTableException")

	testcluster.CreateManaged(t, nodes[0].URL, nodes[0].URL, "unity", "db", "dt")
	r := testcluster.Do(t, http.MethodGet, base(nodes[2])+"/namespaces/db/tables/dt", nil)
	expectError(t, r, 404, "NoSuchTableException")
	if !strings.Contains(r.Text(), "DELTA") {
		t.Fatalf("the 404 does not name the format: %s", r.Raw)
	}
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[2])+"/namespaces/db/tables", createBody("dt")), 409, "AlreadyExistsException")
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[1])+"/namespaces/db/tables/dt",
		`{"requirements":[{"type":"assert-create"}],"updates":[]}`), 409, "CommitFailedException")
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[1])+"/namespaces/db/tables/dt",
		`{"requirements":[],"updates":[]}`), 404, "NoSuchTableException")
	if l := ok(t, http.StatusOK, http.MethodGet, base(nodes[2])+"/namespaces/db/tables", nil); strings.Contains(l.Text(), "dt") {
		t.Fatalf("the listing shows the Delta table: %s", l.Raw)
	}
}

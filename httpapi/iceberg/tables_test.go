package iceberg_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// createBody is iceberg-go's create request, with placeholder field ids.
func createBody(name string) string {
	return `{"name":"` + name + `","schema":{"type":"struct","fields":[{"type":"long","id":3,"name":"id","required":true},` +
		`{"type":"string","id":4,"name":"name","required":false}],"schema-id":0,"identifier-field-ids":[]},` +
		`"write-order":{"order-id":0,"fields":[]},"stage-create":false,"properties":{"k":"v"}}`
}

// setup starts three nodes and creates namespace db.
func setup(t *testing.T) []*testcluster.Node {
	nodes := start(t)
	ok(t, http.StatusOK, http.MethodPost, base(nodes[0])+"/namespaces", `{"namespace":["db"]}`)
	return nodes
}

func create(t *testing.T, nd *testcluster.Node, name string) testcluster.Response {
	t.Helper()
	return ok(t, http.StatusOK, http.MethodPost, base(nd)+"/namespaces/db/tables", createBody(name))
}

func meta(r testcluster.Response) map[string]any { return r.Body["metadata"].(map[string]any) }

// metadataFiles lists the metadata files of a table's location.
func metadataFiles(t *testing.T, r testcluster.Response) []string {
	t.Helper()
	dir, err := storage.LocalPath(meta(r)["location"].(string) + "/metadata")
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A create writes metadata with fresh ids at version 0, whose tag every
// node's default load answers; If-None-Match gives 304 in every form on
// every node, in both snapshot modes, and never without the header.
func TestCreateLoadETag(t *testing.T) {
	nodes := setup(t)
	r := create(t, nodes[1], "t1")
	tag, loc := r.Header.Get("ETag"), r.Body["metadata-location"].(string)
	m := meta(r)
	if !strings.Contains(loc, "/metadata/00000-") || !strings.HasPrefix(loc, m["location"].(string)+"/") || tag == "" {
		t.Fatalf("create answered location %s, tag %q", loc, tag)
	}
	fields := m["schemas"].([]any)[0].(map[string]any)["fields"].([]any)
	if m["format-version"] != 2.0 || fields[0].(map[string]any)["id"] != 1.0 || fields[1].(map[string]any)["id"] != 2.0 ||
		m["last-column-id"] != 2.0 || m["last-partition-id"] != 999.0 || m["properties"].(map[string]any)["k"] != "v" {
		t.Fatalf("create metadata %v", m)
	}
	if files := metadataFiles(t, r); len(files) != 1 || !strings.HasPrefix(files[0], "00000-") {
		t.Fatalf("metadata files %v", files)
	}
	for _, nd := range nodes {
		checkTags(t, base(nd)+"/namespaces/db/tables/t1", tag, loc)
	}
	ok(t, http.StatusNoContent, http.MethodHead, base(nodes[2])+"/namespaces/db/tables/t1", nil)
	ok(t, http.StatusNotFound, http.MethodHead, base(nodes[2])+"/namespaces/db/tables/nope", nil)
	expectError(t, testcluster.Do(t, http.MethodGet, base(nodes[0])+"/namespaces/db/tables/nope", nil), 404, "NoSuchTableException")
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[0])+"/namespaces/db/tables", createBody("t1")), 409, "AlreadyExistsException")
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[0])+"/namespaces/nope/tables", createBody("t2")), 404, "NoSuchNamespaceException")
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[0])+"/namespaces/db/tables", `{"name":"t2"}`), 400, "BadRequestException")
	expectError(t, testcluster.Do(t, http.MethodGet, base(nodes[0])+"/namespaces/db/tables/t1?snapshots=some", nil), 400, "BadRequestException")

	c := ok(t, http.StatusOK, http.MethodPost, base(nodes[2])+"/namespaces/db/tables/t1",
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`)
	newTag := c.Header.Get("ETag")
	if newTag == tag || !strings.Contains(c.Body["metadata-location"].(string), "/metadata/00001-") {
		t.Fatalf("commit answered tag %s (old %s), %s", newTag, tag, c.Raw)
	}
	for _, nd := range nodes {
		l := ok(t, http.StatusOK, http.MethodGet, base(nd)+"/namespaces/db/tables/t1", nil, "If-None-Match", tag)
		if l.Header.Get("ETag") != newTag || meta(l)["properties"].(map[string]any)["a"] != "b" {
			t.Fatalf("load after commit on %s: tag %s, want %s: %s", nd.ID(), l.Header.Get("ETag"), newTag, l.Raw)
		}
	}
	listed := ok(t, http.StatusOK, http.MethodGet, base(nodes[0])+"/namespaces/db/tables", nil)
	if fmt.Sprint(listed.Body["identifiers"]) != "[map[name:t1 namespace:[db]]]" {
		t.Fatalf("list answered %s", listed.Raw)
	}
}

// checkTags checks a table's tags and 304s on one node.
func checkTags(t *testing.T, u, tag, loc string) {
	t.Helper()
	l := ok(t, http.StatusOK, http.MethodGet, u, nil)
	if l.Header.Get("ETag") != tag || l.Body["metadata-location"] != loc {
		t.Fatalf("load tag %s, want %s", l.Header.Get("ETag"), tag)
	}
	for _, inm := range []string{tag, "W/" + tag, `"zzz", ` + tag, "*"} {
		nm := testcluster.Do(t, http.MethodGet, u, nil, "If-None-Match", inm)
		if nm.Status != http.StatusNotModified || len(nm.Raw) != 0 || nm.Header.Get("ETag") != tag {
			t.Fatalf("If-None-Match %s: %d %q tag %s", inm, nm.Status, nm.Raw, nm.Header.Get("ETag"))
		}
	}
	ok(t, http.StatusOK, http.MethodGet, u, nil, "If-None-Match", `"zzz"`)
	refs := ok(t, http.StatusOK, http.MethodGet, u+"?snapshots=refs", nil, "If-None-Match", tag)
	refsTag := refs.Header.Get("ETag")
	if refsTag == tag || refsTag == "" {
		t.Fatalf("refs tag %s, all tag %s", refsTag, tag)
	}
	if nm := testcluster.Do(t, http.MethodGet, u+"?snapshots=refs", nil, "If-None-Match", refsTag); nm.Status != http.StatusNotModified {
		t.Fatalf("refs If-None-Match: %d", nm.Status)
	}
	if l := ok(t, http.StatusOK, http.MethodGet, u+"?snapshots=all", nil); l.Header.Get("ETag") != tag {
		t.Fatalf("snapshots=all tag %s, want %s", l.Header.Get("ETag"), tag)
	}
}

func snapshotUpdate(id, parent int64, seq int) string {
	p := ""
	if parent != 0 {
		p = fmt.Sprintf(`"parent-snapshot-id":%d,`, parent)
	}
	return fmt.Sprintf(`{"action":"add-snapshot","snapshot":{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,`+
		`"manifest-list":"file:///nowhere/snap-%d.avro","summary":{"operation":"append"},"schema-id":0}},`+
		`{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}`, id, p, seq, time.Now().UnixMilli()+id, id, id)
}

func appendBody(id, parent int64, seq int) string {
	assert := "null"
	if parent != 0 {
		assert = fmt.Sprint(parent)
	}
	return `{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":` + assert + `}],"updates":[` +
		snapshotUpdate(id, parent, seq) + `]}`
}

// Failed requirements are 409 CommitFailedException, invalid updates 400,
// a stale sequence number 409; none writes a metadata file.
func TestCommitFailures(t *testing.T) {
	nodes := setup(t)
	r := create(t, nodes[0], "t1")
	u := base(nodes[1]) + "/namespaces/db/tables/t1"
	ok(t, http.StatusOK, http.MethodPost, u, appendBody(1, 0, 1))
	ok(t, http.StatusOK, http.MethodPost, u, appendBody(2, 1, 2))
	files := metadataFiles(t, r)
	conflicts := []string{
		appendBody(3, 0, 3),
		`{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-4000-8000-000000000000"}],"updates":[]}`,
		`{"requirements":[{"type":"assert-current-schema-id","current-schema-id":7}],"updates":[]}`,
		`{"requirements":[{"type":"assert-last-assigned-field-id","last-assigned-field-id":99}],"updates":[]}`,
		`{"requirements":[{"type":"assert-default-spec-id","default-spec-id":5}],"updates":[]}`,
		`{"requirements":[{"type":"assert-create"}],"updates":[]}`,
		`{"requirements":[],"updates":[` + snapshotUpdate(3, 2, 1) + `]}`,
	}
	for _, b := range conflicts {
		expectError(t, testcluster.Do(t, http.MethodPost, u, b), 409, "CommitFailedException")
	}
	invalid := []string{
		`{"requirements":[{"type":"assert-bogus"}],"updates":[]}`,
		`{"requirements":[],"updates":[{"action":"bogus"}]}`,
		`{"requirements":[],"updates":[{"action":"set-current-schema"}]}`,
		`{"requirements":[],"updates":[{"action":"set-current-schema","schema-id":42}]}`,
		`{"requirements":[],"updates":[{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":999}]}`,
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"format-version":"3"}}]}`,
		`{"requirements":[]}`, `not json`,
	}
	for _, b := range invalid {
		expectError(t, testcluster.Do(t, http.MethodPost, u, b), 400, "BadRequestException")
	}
	expectError(t, testcluster.Do(t, http.MethodPost, base(nodes[2])+"/namespaces/db/tables/nope", `{"requirements":[],"updates":[]}`), 404, "NoSuchTableException")
	if got := metadataFiles(t, r); !slices.Equal(got, files) {
		t.Fatalf("failed commits changed the metadata files: %v -> %v", files, got)
	}
	l := ok(t, http.StatusOK, http.MethodGet, u, nil)
	noop := ok(t, http.StatusOK, http.MethodPost, u, `{"requirements":[{"type":"assert-table-uuid","uuid":"`+meta(l)["table-uuid"].(string)+`"}],"updates":[]}`)
	if noop.Body["metadata-location"] != l.Body["metadata-location"] || noop.Header.Get("ETag") != l.Header.Get("ETag") {
		t.Fatalf("a commit without updates moved the table: %s", noop.Raw)
	}
	if m := meta(l); m["last-sequence-number"] != 2.0 || len(m["snapshots"].([]any)) != 2 || len(m["metadata-log"].([]any)) != 2 {
		t.Fatalf("after two appends: %v", m)
	}
}

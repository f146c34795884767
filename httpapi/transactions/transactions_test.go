package transactions_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// etl is the use case: one job commits a Delta fact table, an Iceberg
// dimension table and a Lance embeddings table, so that readers never
// see one without the others.
type etl struct {
	t       *testing.T
	nodes   []*testcluster.Node
	dir     string // the Lance table's location, a temp dir
	factID  string
	objects *storage.Blobs
	staged  int
	headers []string // sent with every request (a credential)
}

const (
	ucPrefix = "/api/2.1/unity-catalog"
	delta    = ucPrefix + "/delta/v1/catalogs/unity/schemas/default/tables/fact"
	iceberg  = ucPrefix + "/iceberg/v1/unity/namespaces/default/tables/dim"
	lanceTbl = "/lance/v1/table/" + "unity%24default%24emb"
)

func newETL(t *testing.T) *etl { return startETL(t, testcluster.Options{}) }

// startETL starts the cluster and creates the three tables, sending
// headers (a credential) with every request.
func startETL(t *testing.T, opts testcluster.Options, headers ...string) *etl {
	t.Helper()
	nodes := testcluster.Start(t, 3, opts)
	testcluster.Leader(t, nodes)
	e := &etl{t: t, nodes: nodes, dir: t.TempDir() + "/emb.lance", objects: storage.NewBlobs(storage.BlobOptions{}), headers: headers}
	st := e.ok(200, "POST", ucPrefix+"/delta/v1/catalogs/unity/schemas/default/staging-tables", map[string]any{"name": "fact"})
	e.ok(200, "POST", ucPrefix+"/delta/v1/catalogs/unity/schemas/default/tables", testcluster.CreateManagedBody("fact", st))
	e.factID = st.Body["table-id"].(string)
	e.ok(200, "POST", ucPrefix+"/iceberg/v1/unity/namespaces/default/tables", map[string]any{"name": "dim",
		"schema": map[string]any{"type": "struct", "schema-id": 0, "fields": []any{
			map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}})
	e.ok(200, "POST", lanceTbl+"/declare?delimiter=%24", map[string]any{"location": "file://" + e.dir})
	return e
}

func (e *etl) do(method, path string, body any) testcluster.Response {
	e.t.Helper()
	return testcluster.Do(e.t, method, e.nodes[len(path)%3].URL+path, body, e.headers...)
}

func (e *etl) ok(status int, method, path string, body any) testcluster.Response {
	e.t.Helper()
	r := e.do(method, path, body)
	if r.Status != status {
		e.t.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, status, r.Raw)
	}
	return r
}

// stage writes the Lance client's staging manifest of a version.
func (e *etl) stage(v int64, data string) string {
	e.t.Helper()
	e.staged++
	p := fmt.Sprintf("%s/_versions/%020d.manifest-stage%d", e.dir, ^uint64(0)-uint64(v), e.staged)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return strings.TrimPrefix(p, "/")
}

// ops are the three operations of batch n: Delta version n, the Iceberg
// property batch=n, Lance version lanceV.
func (e *etl) ops(n, lanceV int64) []any {
	commit := testcluster.CommitBody(e.factID, n, testcluster.StagedName(n, fmt.Sprint("batch", n)))
	commit["catalog"], commit["schema"], commit["name"] = "unity", "default", "fact"
	return []any{
		map[string]any{"delta": commit},
		map[string]any{"iceberg": map[string]any{"catalog": "unity", "namespace": []string{"default"}, "name": "dim",
			"requirements": []any{}, "updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{"batch": fmt.Sprint(n)}}}}},
		map[string]any{"lance": map[string]any{"create_table_version": map[string]any{"id": []string{"unity", "default", "emb"},
			"version": lanceV, "manifest_path": e.stage(lanceV, fmt.Sprintf("embeddings of batch %d", n)), "naming_scheme": "V2"}}},
	}
}

// seen is what a reader sees of the three tables.
type seen struct {
	deltaVersion    float64
	icebergBatch    string
	icebergMetadata string
	lanceVersions   int
}

func (e *etl) read() seen {
	e.t.Helper()
	d := e.ok(200, "GET", delta, nil)
	i := e.ok(200, "GET", iceberg, nil)
	l := e.ok(200, "POST", lanceTbl+"/version/list?delimiter=%24", "null")
	props, _ := i.Body["metadata"].(map[string]any)["properties"].(map[string]any) // none before the first commit
	batch, _ := props["batch"].(string)
	return seen{deltaVersion: d.Body["latest-table-version"].(float64), icebergBatch: batch,
		icebergMetadata: i.Body["metadata-location"].(string), lanceVersions: len(l.Body["versions"].([]any))}
}

func (e *etl) files(dir string) []string {
	objs, err := e.objects.List(context.Background(), dir)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Location)
	}
	return out
}

func TestCrossFormatTransaction(t *testing.T) {
	e := newETL(t)
	r := e.ok(200, "POST", ucPrefix+"/transactions/commit", map[string]any{"operations": e.ops(1, 1)})
	res := r.Body["results"].([]any)
	if len(res) != 3 || res[0].(map[string]any)["delta"].(map[string]any)["latest-table-version"] != float64(1) ||
		!strings.Contains(res[1].(map[string]any)["iceberg"].(map[string]any)["metadata-location"].(string), "/metadata/00001-") ||
		res[2].(map[string]any)["lance"].(map[string]any)["create_table_version"].(map[string]any)["version"].(map[string]any)["version"] != float64(1) {
		t.Fatalf("answer: %s", r.Raw)
	}
	after := e.read()
	if after != (seen{1, "1", after.icebergMetadata, 1}) {
		t.Fatalf("after the transaction: %+v", after)
	}

	// The last operation fails (Lance version 1 exists): nothing lands, and
	// the files written for the transaction are removed.
	metaDir := after.icebergMetadata[:strings.LastIndex(after.icebergMetadata, "/")+1]
	metaBefore, versionsBefore := e.files(metaDir), e.files("file://"+e.dir+"/_versions/")
	r = e.ok(409, "POST", ucPrefix+"/transactions/commit", map[string]any{"operations": e.ops(2, 1)})
	info := r.Body["details"].([]any)[0].(map[string]any)
	if r.Body["error_code"] != "ABORTED" || !maps.Equal(info["metadata"].(map[string]any), map[string]any{"operation_index": "2", "operation": "lance"}) {
		t.Fatalf("failure: %s", r.Raw)
	}
	if got := e.read(); got != after {
		t.Fatalf("a failed transaction changed what readers see: %+v, was %+v", got, after)
	}
	if got := e.files(metaDir); len(got) != len(metaBefore) {
		t.Fatalf("the failed transaction left Iceberg metadata: %v, was %v", got, metaBefore)
	}
	if got := e.files("file://" + e.dir + "/_versions/"); !sameFinals(got, versionsBefore) {
		t.Fatalf("the failed transaction left Lance manifests: %v, was %v", got, versionsBefore)
	}

	// A failure in the middle names that operation.
	ops := e.ops(2, 2)
	ops[1].(map[string]any)["iceberg"].(map[string]any)["requirements"] = []any{map[string]any{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}}
	r = e.ok(409, "POST", ucPrefix+"/transactions/commit", map[string]any{"operations": ops})
	if md := r.Body["details"].([]any)[0].(map[string]any)["metadata"].(map[string]any); md["operation_index"] != "1" {
		t.Fatalf("failure in the middle: %s", r.Raw)
	}
	if got := e.read(); got != after {
		t.Fatalf("a failed transaction changed what readers see: %+v", got)
	}
	e.ok(200, "POST", ucPrefix+"/transactions/commit", map[string]any{"operations": e.ops(2, 2)})
	if got := e.read(); got.deltaVersion != 2 || got.icebergBatch != "2" || got.lanceVersions != 2 {
		t.Fatalf("second transaction: %+v", got)
	}
}

// sameFinals compares the final manifests (staging files aside).
func sameFinals(a, b []string) bool {
	final := func(xs []string) (out []string) {
		for _, x := range xs {
			if strings.HasSuffix(x, ".manifest") {
				out = append(out, x)
			}
		}
		return out
	}
	return strings.Join(final(a), ",") == strings.Join(final(b), ",")
}

// Shape errors are 400s in UC REST's envelope, naming the operation.
func TestTransactionShapeErrors(t *testing.T) {
	e := newETL(t)
	for name, body := range map[string]string{
		"no operations":  `{"operations":[]}`,
		"two kinds":      `{"operations":[{"delta":{},"lance":{}}]}`,
		"unknown kind":   `{"operations":[{"hudi":{}}]}`,
		"no table":       `{"operations":[{"delta":{"requirements":[],"updates":[]}}]}`,
		"bad lance op":   `{"operations":[{"lance":{"drop_everything":{}}}]}`,
		"null operation": `{"operations":[{"iceberg":null}]}`,
	} {
		r := e.do("POST", ucPrefix+"/transactions/commit", body)
		if r.Status != 400 || r.Body["error_code"] != "INVALID_ARGUMENT" {
			t.Errorf("%s: %d %s", name, r.Status, r.Raw)
		}
	}
}

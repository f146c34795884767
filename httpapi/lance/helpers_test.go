package lance_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/internal/s3test"
	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// warehouse is where a test's tables live: a temp file:// directory or a
// bucket of a real S3-compatible server, reached through the same object
// store the nodes use.
type warehouse struct {
	root    string // location URL tables are declared under
	objects *storage.Blobs
	opts    storage.BlobOptions
}

func fileWarehouse(t *testing.T) *warehouse {
	return &warehouse{root: "file://" + t.TempDir() + "/wh", objects: storage.NewBlobs(storage.BlobOptions{})}
}

func s3Warehouse(t *testing.T) *warehouse {
	srv := s3test.Start(t)
	srv.Setenv(t)
	srv.CreateBucket(t, "lake")
	opts := storage.BlobOptions{S3Endpoint: srv.Endpoint, S3PathStyle: true}
	return &warehouse{root: "s3://lake/wh", objects: storage.NewBlobs(opts), opts: opts}
}

// table is a table location below the warehouse.
func (w *warehouse) table(name string) string { return w.root + "/" + name + ".lance" }

// stage writes a staging manifest as a Lance client does, and returns its
// store-relative path (what version/create's manifest_path names).
func (w *warehouse) stage(t *testing.T, tableLoc string, v int64, data string) string {
	t.Helper()
	loc := fmt.Sprintf("%s/_versions/%020d.manifest-%s", tableLoc, ^uint64(0)-uint64(v), uuid.NewString())
	if err := w.objects.Write(context.Background(), loc, []byte(data)); err != nil {
		t.Fatalf("stage %s: %v", loc, err)
	}
	return relative(t, loc)
}

func relative(t *testing.T, loc string) string {
	root, err := storage.Root(loc)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(loc, root)
}

// read returns an object's bytes named by a store-relative path below
// the warehouse's store ("" if it does not exist).
func (w *warehouse) read(t *testing.T, rel string) string {
	t.Helper()
	root, _ := storage.Root(w.root)
	data, err := w.objects.Read(context.Background(), root+rel)
	if err != nil {
		return ""
	}
	return string(data)
}

// client sends Lance requests to the nodes of a cluster in turn, so that
// every case is answered by leader and followers alike.
type client struct {
	t     *testing.T
	nodes []*testcluster.Node
	n     int
}

func newClient(t *testing.T, w *warehouse) *client {
	nodes := testcluster.Start(t, 3, testcluster.Options{Objects: w.opts})
	testcluster.Leader(t, nodes)
	return &client{t: t, nodes: nodes}
}

// do sends a request to the next node; paths get ?delimiter=%24 unless
// they name a delimiter.
func (c *client) do(method, path string, body any) testcluster.Response {
	c.t.Helper()
	if !strings.Contains(path, "delimiter=") {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "delimiter=%24"
	}
	nd := c.nodes[c.n%len(c.nodes)]
	c.n++
	return testcluster.Do(c.t, method, nd.URL+lance.Prefix+path, body)
}

func (c *client) post(path string, body any) testcluster.Response {
	c.t.Helper()
	return c.do("POST", path, body)
}

func (c *client) get(path string) testcluster.Response {
	c.t.Helper()
	return c.do("GET", path, nil)
}

// ok fails unless the answer is a 200.
func (c *client) ok(r testcluster.Response) testcluster.Response {
	c.t.Helper()
	if r.Status != 200 {
		c.t.Fatalf("status %d, want 200: %s", r.Status, r.Raw)
	}
	return r
}

// fails checks a Lance error: the status and code of §B6, and a message.
func (c *client) fails(r testcluster.Response, status, code int) testcluster.Response {
	c.t.Helper()
	if r.Status != status {
		c.t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if msg, _ := r.Body["error"].(string); msg == "" || r.Body["code"] != float64(code) {
		c.t.Fatalf("want {error, code: %d}, got %s", code, r.Raw)
	}
	return r
}

// esc is a path id: the names joined by "$", escaped as clients send it.
func esc(names ...string) string { return url.PathEscape(strings.Join(names, "$")) }

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func versionsOf(r testcluster.Response) []int64 {
	out := []int64{}
	for _, v := range r.Body["versions"].([]any) {
		out = append(out, int64(v.(map[string]any)["version"].(float64)))
	}
	return out
}

package httpapi_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/httpapi/deltaapi"
	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/httpapi/transactions"
	"github.com/raftcat/raftcat/httpapi/ucrest"
	"github.com/raftcat/raftcat/internal/fakecluster"
	"github.com/raftcat/raftcat/internal/testcluster"
	"github.com/raftcat/raftcat/storage"
)

// fuzzServer serves UC REST, the Delta API and the Iceberg REST catalog on
// the fake data path, with a managed Delta table unity.default.sweep and an
// Iceberg table unity.default.isweep to aim table routes at.
type fuzzServer struct {
	node *fakecluster.Node
	h    http.Handler
}

func newFuzzServer(f *testing.F) *fuzzServer {
	node := fakecluster.New("node1", "file://"+f.TempDir()+"/warehouse")
	core := httpapi.New(node, httpapi.Config{Logger: testLogger()})
	objects := storage.NewBlobs(storage.BlobOptions{})
	f.Cleanup(func() { objects.Close() })
	ucrest.Register(core)
	deltaapi.Register(core, deltaapi.Config{Objects: objects})
	iceberg.Register(core, iceberg.Config{Objects: objects})
	lance.Register(core, lance.Config{Objects: objects})
	transactions.Register(core)
	srv := httptest.NewServer(core.Handler())
	defer srv.Close()
	testcluster.CreateManaged(f, srv.URL, srv.URL, "unity", "default", "sweep")
	created := testcluster.Do(f, http.MethodPost, srv.URL+icebergPrefix+"/v1/unity/namespaces/default/tables",
		strings.Replace(routeCases["POST "+icebergPrefix+"/v1/:prefix/namespaces/:namespace/tables"].body, "sweep_i", icebergSweep, 1))
	if created.Status != http.StatusOK {
		f.Fatalf("create Iceberg table %s: %d %s", icebergSweep, created.Status, created.Text())
	}
	declared := testcluster.Do(f, http.MethodPost, srv.URL+lancePrefix+"/v1/table/"+lanceSweep+"/declare", map[string]any{})
	if declared.Status != http.StatusOK {
		f.Fatalf("declare Lance table: %d %s", declared.Status, declared.Text())
	}
	return &fuzzServer{node: node, h: core.Handler()}
}

// check sends body to one route: the answer is never a 5xx, and one that
// refuses the request leaves the state as it was.
func (s *fuzzServer) check(t *testing.T, method, path string, body []byte) {
	before, _ := s.node.StaleState()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s %q: %d %s", method, path, body, rec.Code, rec.Body.String())
	}
	if after, _ := s.node.StaleState(); rec.Code >= 400 && after != before {
		t.Fatalf("%s %s %q: refused with %d but the state changed", method, path, body, rec.Code)
	}
}

// fuzzRoutes fuzzes the bodies of the given routes (keys of routeCases),
// seeded with each route's valid request and the sweep's bad ones.
func fuzzRoutes(f *testing.F, routes ...string) {
	for i, route := range routes {
		rc := routeCases[route]
		f.Add(uint8(i), []byte(rc.body))
		for _, bad := range badBodies(rc) {
			f.Add(uint8(i), []byte(bad))
		}
	}
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, pick uint8, body []byte) {
		method, path, _ := strings.Cut(routes[int(pick)%len(routes)], " ")
		path = fill(path, "", "")
		if strings.HasPrefix(path, icebergPrefix) {
			path = strings.Replace(path, "/tables/sweep", "/tables/"+icebergSweep, 1)
		}
		path = strings.Replace(path, "/table/x/", "/table/"+lanceSweep+"/", 1)
		s.check(t, method, path, body)
	})
}

func FuzzUCRESTCreate(f *testing.F) {
	fuzzRoutes(f, "POST "+apiPrefix+"/catalogs", "POST "+apiPrefix+"/schemas", "POST "+apiPrefix+"/tables")
}

func FuzzUCRESTUpdate(f *testing.F) {
	fuzzRoutes(f, "PATCH "+apiPrefix+"/catalogs/:name", "PATCH "+apiPrefix+"/schemas/:full_name")
}

func FuzzDeltaCreate(f *testing.F) {
	fuzzRoutes(f, "POST "+deltaPrefix+"/catalogs/:catalog/schemas/:schema/staging-tables",
		"POST "+deltaPrefix+"/catalogs/:catalog/schemas/:schema/tables")
}

func FuzzDeltaUpdate(f *testing.F) {
	fuzzRoutes(f, "POST "+deltaPrefix+"/catalogs/:catalog/schemas/:schema/tables/:table",
		"POST "+deltaPrefix+"/catalogs/:catalog/schemas/:schema/tables/:table/rename",
		"POST "+deltaPrefix+"/catalogs/:catalog/schemas/:schema/tables/:table/metrics")
}

// icebergSweep is the Iceberg table the fuzzed Iceberg table routes aim at.
const icebergSweep = "isweep"

func FuzzIcebergCreate(f *testing.F) {
	fuzzRoutes(f, "POST "+icebergPrefix+"/v1/:prefix/namespaces",
		"POST "+icebergPrefix+"/v1/:prefix/namespaces/:namespace/tables",
		"POST "+icebergPrefix+"/v1/:prefix/namespaces/:namespace/views")
}

func FuzzIcebergCommit(f *testing.F) {
	fuzzRoutes(f, "POST "+icebergPrefix+"/v1/:prefix/namespaces/:namespace/tables/:table",
		"POST "+icebergPrefix+"/v1/:prefix/transactions/commit",
		"POST "+icebergPrefix+"/v1/:prefix/namespaces/:namespace/properties")
}

// lanceSweep is the Lance table (unity.default.lsweep) the fuzzed Lance
// table routes aim at.
const lanceSweep = "unity%24default%24lsweep"

func FuzzLanceTable(f *testing.F) {
	fuzzRoutes(f, "POST "+lancePrefix+"/v1/table/:id/version/create",
		"POST "+lancePrefix+"/v1/table/:id/version/delete",
		"POST "+lancePrefix+"/v1/table/:id/declare",
		"POST "+lancePrefix+"/v1/table/:id/rename")
}

func FuzzLanceBatch(f *testing.F) {
	fuzzRoutes(f, "POST "+lancePrefix+"/v1/table/batch-commit",
		"POST "+lancePrefix+"/v1/table/version/batch-create",
		"POST "+lancePrefix+"/v1/namespace/:id/create")
}

func FuzzTransaction(f *testing.F) {
	fuzzRoutes(f, "POST "+apiPrefix+"/transactions/commit")
}

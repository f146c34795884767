// Package lance serves the Lance Namespace REST API under Prefix, so that
// LanceDB and Lance clients connect with uri=http://<node>/lance and use
// the catalog as their namespace and manifest store.
//
// # Namespaces and tables
//
// Lance's namespace tree is the catalog's: the root lists catalogs,
// [catalog] and [catalog, schema, ...] are namespaces, and a table lives
// in a schema or below one. Lance tables are tables of format LANCE, so
// UC REST lists them too.
//
// # Versions: the client writes, the catalog finalizes
//
// Every table is declared with managed_versioning: the client writes its
// data files and a staging manifest in the table's _versions/ directory
// and asks for version/create. The leader then reads the staging manifest,
// writes it create-only at the version's final name (V1 {version}.manifest
// or V2 {u64::MAX - version:020}.manifest), records the version in one
// raft entry, and removes the staging file. A final manifest that already
// exists, or a version already recorded, is a conflict (409, code 14) and
// nothing changes; the exact same request again is answered with the
// recorded version.
//
// # Batches
//
// batch-create and batch-commit plan their operations in order on one
// working copy of the state (httpapi.Plan), so a later operation sees
// what the earlier ones did, then propose them as ONE entry
// (fsm.Transaction): all land or none do. When the batch fails, the final
// manifests written for it are deleted and the error names the failed
// operation's index in "detail". The same planning takes part in
// transactions across formats (package transactions) as the operation
// kind "lance".
//
// # Callers and credentials
//
// Every route declares in the route table what its caller needs, in
// Unity Catalog's privileges on the ids it names (access.go); a batch
// needs what each of its operations does. A caller's credential is
// where the Lance Namespace spec carries it: Authorization: Bearer, the
// x-api-key header, or the body's identity, headers first. Describe and
// declare answers carry storage_options, the vended credential for the
// table's location (READ_WRITE for a caller that may change the table,
// else READ), when the node has credentials to vend.
package lance

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

// Prefix is the path the Lance Namespace REST API is served under.
const Prefix = "/lance"

// ObjectStore is what the catalog reads and writes in table storage: the
// manifests it finalizes, and the files a drop deletes. storage.Blobs is
// one.
type ObjectStore interface {
	Stat(ctx context.Context, loc string) (storage.ObjectInfo, error)
	Read(ctx context.Context, loc string) ([]byte, error)
	Write(ctx context.Context, loc string, data []byte) error
	Delete(ctx context.Context, loc string) error
	List(ctx context.Context, prefix string) ([]storage.ObjectInfo, error)
}

// Config configures the Lance Namespace API.
type Config struct {
	// Objects holds the tables' manifests (nil: versions cannot be
	// created; those requests answer 503).
	Objects ObjectStore
	// Credentials vend what clients get, as storage_options, to reach a
	// table's location themselves (nil: nothing is vended).
	Credentials CredentialVendor
}

// Server serves the Lance Namespace API on a core.
type Server struct {
	core *httpapi.Server
	cfg  Config
	log  *slog.Logger
}

// Register mounts the API on the core and makes Lance operations part
// of transactions across formats. Every request goes to the leader.
func Register(core *httpapi.Server, cfg Config) *Server {
	s := &Server{core: core, cfg: cfg, log: core.Logger().With("protocol", "lance")}
	g := core.Mount(httpapi.Group{Name: "lance", Prefix: Prefix, Errors: errorMapping{}, ToLeader: true, Relay: true,
		Credential: credential})
	for _, rt := range routes {
		g.Add(rt.method, rt.path, rt.rule, rt.handler(s))
	}
	g.Any("/*", httpapi.AnyCaller(), notServed)
	core.AddTxPlanner("lance", s.planTxOp)
	return s
}

// notServed answers what no route takes: a route's path with another
// method is a 405 naming the methods it takes in Allow, as every other
// protocol answers; any other path is an operation this catalog does not
// serve.
func notServed(c echo.Context) error {
	path := strings.TrimPrefix(c.Request().URL.Path, Prefix)
	var allow []string
	for _, rt := range routes {
		if pathMatches(rt.path, path) && !slices.Contains(allow, rt.method) {
			allow = append(allow, rt.method)
		}
	}
	if len(allow) == 0 {
		return unsupported("This operation is not served by this catalog (it serves namespaces, tables and versions)")
	}
	c.Response().Header().Set(echo.HeaderAllow, strings.Join(allow, ", "))
	return &httpapi.KindError{Status: http.StatusMethodNotAllowed, Kind: fmt.Sprint(codeUnsupported),
		Message: fmt.Sprintf("%s is not allowed on %s: use %s", c.Request().Method, c.Request().URL.Path, strings.Join(allow, " or "))}
}

// pathMatches reports whether path fits a route's pattern, whose :name
// segments match any one segment.
func pathMatches(pattern, path string) bool {
	want, got := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if !strings.HasPrefix(want[i], ":") && want[i] != got[i] {
			return false
		}
	}
	return true
}

type route struct {
	method, path string
	rule         httpapi.Rule
	handler      func(*Server) echo.HandlerFunc
}

func h(f func(*Server, echo.Context) error) func(*Server) echo.HandlerFunc {
	return func(s *Server) echo.HandlerFunc { return func(c echo.Context) error { return f(s, c) } }
}

var routes = []route{
	{http.MethodPost, "/v1/namespace/:id/create", namespaceCreateRule, h((*Server).createNamespace)},
	{http.MethodGet, "/v1/namespace/:id/list", namespaceUseRule, h((*Server).listNamespaces)},
	{http.MethodPost, "/v1/namespace/:id/describe", namespaceUseRule, h((*Server).describeNamespace)},
	{http.MethodPost, "/v1/namespace/:id/exists", namespaceUseRule, h((*Server).namespaceExists)},
	{http.MethodPost, "/v1/namespace/:id/drop", httpapi.NeedOwner(false, pathOf), h((*Server).dropNamespace)},
	{http.MethodGet, "/v1/namespace/:id/table/list", namespaceUseRule, h((*Server).listTables)},
	{http.MethodGet, "/v1/table", httpapi.AnyCaller(), h((*Server).listAllTables)},
	{http.MethodPost, "/v1/table/:id/declare", httpapi.NeedOn(fsm.PrivCreateTable, namespaceOfTable), h((*Server).declareTable)},
	{http.MethodPost, "/v1/table/:id/describe", httpapi.NeedOnTable(fsm.PrivSelect, tablePath), h((*Server).describeTable)},
	{http.MethodPost, "/v1/table/:id/exists", httpapi.NeedOnTable(fsm.PrivSelect, tablePath), h((*Server).tableExists)},
	{http.MethodPost, "/v1/table/:id/register", httpapi.Needs(registerNeeds), h((*Server).registerTable)},
	{http.MethodPost, "/v1/table/:id/deregister", httpapi.NeedOwner(true, tablePath), h((*Server).deregisterTable)},
	{http.MethodPost, "/v1/table/:id/drop", httpapi.NeedOwner(true, tablePath), h((*Server).dropTable)},
	{http.MethodPost, "/v1/table/:id/rename", httpapi.Needs(renameNeeds), h((*Server).renameTable)},
	{http.MethodPost, "/v1/table/:id/version/list", httpapi.NeedOnTable(fsm.PrivSelect, tablePath), h((*Server).listVersions)},
	{http.MethodPost, "/v1/table/:id/version/create", httpapi.NeedOnTable(fsm.PrivModify, tablePath), h((*Server).createVersion)},
	{http.MethodPost, "/v1/table/:id/version/describe", httpapi.NeedOnTable(fsm.PrivSelect, tablePath), h((*Server).describeVersion)},
	{http.MethodPost, "/v1/table/:id/version/delete", httpapi.NeedOnTable(fsm.PrivModify, tablePath), h((*Server).deleteVersions)},
	{http.MethodPost, "/v1/table/version/batch-create", httpapi.Needs(batchCreateNeeds), h((*Server).batchCreateVersions)},
	{http.MethodPost, "/v1/table/batch-commit", httpapi.Needs(batchCommitNeeds), h((*Server).batchCommit)},
}

// bind decodes the body into v; an empty body or JSON null leaves v zero.
func bind(c echo.Context, v any) error {
	_, err := httpapi.BindJSON(c, v)
	return err
}

// write plans one request's operations with plan, commits them as one
// entry and answers with answer's value.
func (s *Server) write(c echo.Context, plan func(p *httpapi.Plan) (httpapi.OpRender, error)) error {
	p, err := s.core.NewPlan(c)
	if err != nil {
		return err
	}
	render, err := plan(p)
	if err != nil {
		p.Abort()
		return err
	}
	results, err := s.core.Commit(p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, render(p.ResultOf(results, 0)))
}

// state is the linearizable state reads answer from.
func (s *Server) state(c echo.Context) (*fsm.State, error) { return s.core.State(c) }

func empty(*fsm.Result) any { return struct{}{} }

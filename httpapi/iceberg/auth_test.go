package iceberg_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/internal/testcluster"
)

const adminToken = "iceberg-test-admin-token"

// startAuth starts three nodes that need credentials; the admin has made
// namespaces db and other, tables t1 and t2 in db and view v1 in db.
func startAuth(t *testing.T) []*testcluster.Node {
	nodes := testcluster.Start(t, 3, testcluster.Options{AdminToken: adminToken})
	testcluster.Leader(t, nodes)
	admin := bearer(adminToken)
	for _, ns := range []string{"db", "other"} {
		ok(t, http.StatusOK, http.MethodPost, base(nodes[0])+"/namespaces", `{"namespace":["`+ns+`"]}`, admin...)
	}
	for _, name := range []string{"t1", "t2"} {
		ok(t, http.StatusOK, http.MethodPost, base(nodes[1])+"/namespaces/db/tables", createBody(name), admin...)
	}
	ok(t, http.StatusOK, http.MethodPost, base(nodes[2])+"/namespaces/db/views", viewBody("v1"), admin...)
	return nodes
}

func bearer(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

// as sends a request with a bearer token ("" for none).
func as(t *testing.T, tok, method, u string, body any) testcluster.Response {
	t.Helper()
	if tok == "" {
		return testcluster.Do(t, method, u, body)
	}
	return testcluster.Do(t, method, u, body, bearer(tok)...)
}

func expectDenied(t *testing.T, r testcluster.Response) {
	t.Helper()
	expectError(t, r, http.StatusForbidden, "ForbiddenException")
}

// newUser makes a user and waits until every node knows it (the node a
// request enters at authenticates it).
func newUser(t *testing.T, nodes []*testcluster.Node, name string) string {
	t.Helper()
	tok := testcluster.NewUser(t, nodes, name)
	waitPrincipal(t, nodes, name)
	return tok
}

func waitPrincipal(t *testing.T, nodes []*testcluster.Node, name string) {
	t.Helper()
	for _, nd := range nodes {
		testcluster.WaitFor(t, 10*time.Second, nd.ID()+" knows "+name, func() bool {
			st, _ := nd.StaleState()
			_, ok := st.Principal(name)
			return ok
		})
	}
}

func grant(t *testing.T, nodes []*testcluster.Node, typ string, path []string, privs ...string) {
	t.Helper()
	testcluster.Grant(t, nodes, typ, path, "alice", privs...)
}

// Every kind of route refuses a request without a credential with 401,
// WWW-Authenticate and the Iceberg envelope, on any node.
func TestAuthNeedsACredential(t *testing.T) {
	nodes := startAuth(t)
	tbl := "/namespaces/db/tables/t1"
	for i, rq := range []struct{ method, path, body string }{
		{http.MethodGet, "/namespaces", ""},
		{http.MethodGet, tbl, ""},
		{http.MethodPost, tbl, `{"requirements":[],"updates":[]}`},
		{http.MethodPost, "/namespaces/db/tables", createBody("x")},
		{http.MethodDelete, tbl, ""},
		{http.MethodPost, "/transactions/commit", `{"table-changes":[]}`},
		{http.MethodGet, "/namespaces/db/views/v1", ""},
	} {
		nd := nodes[i%len(nodes)]
		var body any
		if rq.body != "" {
			body = rq.body
		}
		r := testcluster.Do(t, rq.method, base(nd)+rq.path, body)
		expectError(t, r, http.StatusUnauthorized, "NotAuthorizedException")
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%s %s: WWW-Authenticate %q", rq.method, rq.path, r.Header.Get("WWW-Authenticate"))
		}
	}
	r := testcluster.Do(t, http.MethodGet, nodes[1].URL+iceberg.Prefix+"/v1/config", nil, bearer("not-a-token")...)
	expectError(t, r, http.StatusUnauthorized, "NotAuthorizedException")
	if !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("a wrong token's WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
	}
}

// A user holds what the privilege table says each route needs: refused
// with 403 until granted; lists show only what the user may see.
func TestAuthPrivileges(t *testing.T) {
	nodes := startAuth(t)
	alice := newUser(t, nodes, "alice")
	at := func(i int) string { return base(nodes[i%len(nodes)]) }
	unity, db, other := []string{"unity"}, []string{"unity", "db"}, []string{"unity", "other"}

	cfg := ok(t, http.StatusOK, http.MethodGet, nodes[2].URL+iceberg.Prefix+"/v1/config", nil, bearer(alice)...)
	if !slices.Contains(cfg.Body["endpoints"].([]any), any("POST /v1/oauth/tokens")) {
		t.Fatalf("config does not advertise the token endpoint: %s", cfg.Raw)
	}

	// Listing namespaces takes USE CATALOG and shows those the user may use.
	expectDenied(t, as(t, alice, http.MethodGet, at(1)+"/namespaces", nil))
	grant(t, nodes, fsm.SecurableCatalog, unity, fsm.PrivUseCatalog)
	if got := namespaceNames(ok(t, http.StatusOK, http.MethodGet, at(1)+"/namespaces", nil, bearer(alice)...)); len(got) != 0 {
		t.Fatalf("namespaces shown without USE SCHEMA: %v", got)
	}
	expectDenied(t, as(t, alice, http.MethodGet, at(2)+"/namespaces/db", nil))
	expectDenied(t, as(t, alice, http.MethodGet, at(2)+"/namespaces/db/tables", nil))
	grant(t, nodes, fsm.SecurableSchema, db, fsm.PrivUseSchema)
	if got := namespaceNames(ok(t, http.StatusOK, http.MethodGet, at(1)+"/namespaces", nil, bearer(alice)...)); !slices.Equal(got, []string{"db"}) {
		t.Fatalf("namespaces shown %v, want [db]", got)
	}
	ok(t, http.StatusOK, http.MethodGet, at(2)+"/namespaces/db", nil, bearer(alice)...)

	// Tables: listed and read with SELECT; the rest stays hidden.
	if got := tableNames(ok(t, http.StatusOK, http.MethodGet, at(0)+"/namespaces/db/tables", nil, bearer(alice)...)); len(got) != 0 {
		t.Fatalf("tables shown without privileges: %v", got)
	}
	expectDenied(t, as(t, alice, http.MethodGet, at(1)+"/namespaces/db/tables/t1", nil))
	grant(t, nodes, fsm.SecurableTable, []string{"unity", "db", "t1"}, fsm.PrivSelect)
	ok(t, http.StatusOK, http.MethodGet, at(1)+"/namespaces/db/tables/t1", nil, bearer(alice)...)
	ok(t, http.StatusOK, http.MethodGet, at(2)+"/namespaces/db/tables/t1/credentials", nil, bearer(alice)...)
	if got := tableNames(ok(t, http.StatusOK, http.MethodGet, at(0)+"/namespaces/db/tables", nil, bearer(alice)...)); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("tables shown %v, want [t1]", got)
	}
	if r := as(t, alice, http.MethodHead, at(0)+"/namespaces/db/tables/t2", nil); r.Status != http.StatusForbidden {
		t.Fatalf("HEAD of an unreadable table: %d", r.Status)
	}
	expectDenied(t, as(t, alice, http.MethodPost, at(0)+"/namespaces/db/tables/t2/metrics", `{"report-type":"scan-report"}`))

	// Commits take MODIFY on every table they change.
	commit := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"by":"alice"}}]}`
	expectDenied(t, as(t, alice, http.MethodPost, at(1)+"/namespaces/db/tables/t1", commit))
	grant(t, nodes, fsm.SecurableTable, []string{"unity", "db", "t1"}, fsm.PrivModify)
	ok(t, http.StatusOK, http.MethodPost, at(1)+"/namespaces/db/tables/t1", commit, bearer(alice)...)
	tx := `{"table-changes":[{"identifier":{"namespace":["db"],"name":"t1"},"requirements":[],"updates":[{"action":"set-properties","updates":{"tx":"1"}}]},` +
		`{"identifier":{"namespace":["db"],"name":"t2"},"requirements":[],"updates":[{"action":"set-properties","updates":{"tx":"1"}}]}]}`
	expectDenied(t, as(t, alice, http.MethodPost, at(2)+"/transactions/commit", tx))
	grant(t, nodes, fsm.SecurableTable, []string{"unity", "db", "t2"}, fsm.PrivModify)
	ok(t, http.StatusNoContent, http.MethodPost, at(2)+"/transactions/commit", tx, bearer(alice)...)
	expectDenied(t, as(t, alice, http.MethodGet, at(2)+"/namespaces/db/tables/t2/credentials", nil))

	// Creates and registers take CREATE TABLE on the namespace; drops and
	// register overwrites take ownership.
	expectDenied(t, as(t, alice, http.MethodPost, at(0)+"/namespaces/db/tables", createBody("mine")))
	grant(t, nodes, fsm.SecurableSchema, db, fsm.PrivCreateTable)
	ok(t, http.StatusOK, http.MethodPost, at(0)+"/namespaces/db/tables", createBody("mine"), bearer(alice)...)
	scratch := ok(t, http.StatusOK, http.MethodPost, at(0)+"/namespaces/db/tables", createBody("scratch"), bearer(alice)...)
	loc := scratch.Body["metadata-location"].(string)
	expectDenied(t, as(t, alice, http.MethodDelete, at(2)+"/namespaces/db/tables/t1", nil))
	ok(t, http.StatusNoContent, http.MethodDelete, at(2)+"/namespaces/db/tables/scratch", nil, bearer(alice)...)
	expectDenied(t, as(t, alice, http.MethodPost, at(1)+"/namespaces/db/register", `{"name":"t1","metadata-location":"`+loc+`","overwrite":true}`))
	ok(t, http.StatusOK, http.MethodPost, at(1)+"/namespaces/db/register", `{"name":"copy","metadata-location":"`+loc+`"}`, bearer(alice)...)

	// A rename takes ownership, and CREATE TABLE where the table moves to.
	ok(t, http.StatusNoContent, http.MethodPost, at(0)+"/tables/rename",
		`{"source":{"namespace":["db"],"name":"mine"},"destination":{"namespace":["db"],"name":"mine2"}}`, bearer(alice)...)
	move := `{"source":{"namespace":["db"],"name":"mine2"},"destination":{"namespace":["other"],"name":"mine2"}}`
	expectDenied(t, as(t, alice, http.MethodPost, at(1)+"/tables/rename", move))
	grant(t, nodes, fsm.SecurableSchema, other, fsm.PrivUseSchema, fsm.PrivCreateTable)
	ok(t, http.StatusNoContent, http.MethodPost, at(1)+"/tables/rename", move, bearer(alice)...)
	expectDenied(t, as(t, alice, http.MethodPost, at(1)+"/tables/rename",
		`{"source":{"namespace":["db"],"name":"t2"},"destination":{"namespace":["db"],"name":"t3"}}`))

	// Namespaces: CREATE SCHEMA on the parent to create; the owner alone
	// changes or drops one.
	expectDenied(t, as(t, alice, http.MethodPost, at(2)+"/namespaces", `{"namespace":["db","sub"]}`))
	grant(t, nodes, fsm.SecurableSchema, db, fsm.PrivCreateSchema)
	ok(t, http.StatusOK, http.MethodPost, at(2)+"/namespaces", `{"namespace":["db","sub"]}`, bearer(alice)...)
	props := `{"updates":{"k":"v"}}`
	ok(t, http.StatusOK, http.MethodPost, at(0)+"/namespaces/db%1Fsub/properties", props, bearer(alice)...)
	expectDenied(t, as(t, alice, http.MethodPost, at(0)+"/namespaces/db/properties", props))
	expectDenied(t, as(t, alice, http.MethodDelete, at(1)+"/namespaces/other", nil))
	ok(t, http.StatusNoContent, http.MethodDelete, at(1)+"/namespaces/db%1Fsub", nil, bearer(alice)...)
	expectDenied(t, as(t, alice, http.MethodPost, at(1)+"/namespaces", `{"namespace":["top"]}`))

	// Views are tables.
	expectDenied(t, as(t, alice, http.MethodGet, at(2)+"/namespaces/db/views/v1", nil))
	if got := tableNames(ok(t, http.StatusOK, http.MethodGet, at(2)+"/namespaces/db/views", nil, bearer(alice)...)); len(got) != 0 {
		t.Fatalf("views shown without privileges: %v", got)
	}
	grant(t, nodes, fsm.SecurableTable, []string{"unity", "db", "v1"}, fsm.PrivSelect)
	ok(t, http.StatusOK, http.MethodGet, at(2)+"/namespaces/db/views/v1", nil, bearer(alice)...)
	if got := tableNames(ok(t, http.StatusOK, http.MethodGet, at(2)+"/namespaces/db/views", nil, bearer(alice)...)); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("views shown %v, want [v1]", got)
	}
	expectDenied(t, as(t, alice, http.MethodPost, at(0)+"/namespaces/db/views/v1", newVersionUpdates("select 2")))
	expectDenied(t, as(t, alice, http.MethodDelete, at(0)+"/namespaces/db/views/v1", nil))
	ok(t, http.StatusOK, http.MethodPost, at(0)+"/namespaces/db/views", viewBody("v2"), bearer(alice)...)
	ok(t, http.StatusOK, http.MethodPost, at(1)+"/namespaces/db/views/v2", newVersionUpdates("select 2"), bearer(alice)...)
	ok(t, http.StatusNoContent, http.MethodDelete, at(2)+"/namespaces/db/views/v2", nil, bearer(alice)...)
}

// namespaceNames are the first levels of a namespace listing.
func namespaceNames(r testcluster.Response) []string {
	var out []string
	for _, n := range r.Body["namespaces"].([]any) {
		out = append(out, n.([]any)[0].(string))
	}
	return out
}

package lance_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi/lance"
	"github.com/raftcat/raftcat/internal/testcluster"
)

const lanceAdminToken = "lance-test-admin-token-0123456789"

// authLake is a cluster running with authentication, whose admin made
// catalog lake with schemas a, ns and other, catalog hidden, and the
// tables lake.ns.t and lake.ns.secret.
type authLake struct {
	t     *testing.T
	nodes []*testcluster.Node
	w     *warehouse
	n     int
}

func startAuthLake(t *testing.T) *authLake {
	t.Helper()
	w := fileWarehouse(t)
	nodes := testcluster.Start(t, 3, testcluster.Options{AdminToken: lanceAdminToken, Objects: w.opts})
	testcluster.Leader(t, nodes)
	l := &authLake{t: t, nodes: nodes, w: w}
	l.waitPrincipal(fsm.AdminPrincipal)
	for _, ns := range [][]string{{"lake"}, {"lake", "a"}, {"lake", "ns"}, {"lake", "other"}, {"hidden"}} {
		l.ok(l.as(lanceAdminToken, "POST", "/v1/namespace/"+esc(ns...)+"/create", nil))
	}
	for _, name := range []string{"t", "secret"} {
		l.ok(l.as(lanceAdminToken, "POST", "/v1/table/"+esc("lake", "ns", name)+"/declare", map[string]any{"location": w.table(name)}))
	}
	return l
}

// user makes a principal and waits until every node knows its token
// (the node a request enters at authenticates it).
func (l *authLake) user(name string) string {
	l.t.Helper()
	tok := testcluster.NewUser(l.t, l.nodes, name)
	l.waitPrincipal(name)
	return tok
}

func (l *authLake) waitPrincipal(name string) {
	l.t.Helper()
	testcluster.WaitFor(l.t, 10*time.Second, "principal "+name+" on every node", func() bool {
		for _, nd := range l.nodes {
			if st, _ := nd.StaleState(); st == nil {
				return false
			} else if _, ok := st.Principal(name); !ok {
				return false
			}
		}
		return true
	})
}

func (l *authLake) grant(typ string, path []string, principal string, privs ...string) {
	l.t.Helper()
	testcluster.Grant(l.t, l.nodes, typ, path, principal, privs...)
}

// as sends a request with a bearer token ("" for none) to the next node,
// so that followers forward many of them to the leader.
func (l *authLake) as(token, method, path string, body any, headers ...string) testcluster.Response {
	l.t.Helper()
	nd := l.nodes[l.n%len(l.nodes)]
	l.n++
	return l.at(nd, token, method, path, body, headers...)
}

// at sends a request to one node; paths get ?delimiter=%24.
func (l *authLake) at(nd *testcluster.Node, token, method, path string, body any, headers ...string) testcluster.Response {
	l.t.Helper()
	if !strings.Contains(path, "delimiter=") {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "delimiter=%24"
	}
	if token != "" {
		headers = append(headers, "Authorization", "Bearer "+token)
	}
	return testcluster.Do(l.t, method, nd.URL+lance.Prefix+path, body, headers...)
}

func (l *authLake) ok(r testcluster.Response) testcluster.Response {
	l.t.Helper()
	if r.Status != 200 {
		l.t.Fatalf("status %d, want 200: %s", r.Status, r.Raw)
	}
	return r
}

// refused checks a Lance error: status, code and a message.
func refused(t *testing.T, r testcluster.Response, status, code int) {
	t.Helper()
	if msg, _ := r.Body["error"].(string); r.Status != status || r.Body["code"] != float64(code) || msg == "" {
		t.Fatalf("got %d %s, want %d with {error, code: %d}", r.Status, r.Raw, status, code)
	}
}

// unauthenticated checks the 401 of a request without a valid credential.
func unauthenticated(t *testing.T, r testcluster.Response) {
	t.Helper()
	refused(t, r, 401, 16)
	if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("401 without WWW-Authenticate: %v", r.Header)
	}
}

func denied(t *testing.T, r testcluster.Response) {
	t.Helper()
	refused(t, r, 403, 15)
}

// Without a credential every route answers 401 in Lance's envelope,
// from leader and followers alike; an unknown operation too.
func TestLanceAuthNoCredential(t *testing.T) {
	l := startAuthLake(t)
	for _, rt := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/namespace/" + esc("lake", "x") + "/create", nil},
		{"GET", "/v1/namespace/%24/list", nil},
		{"POST", "/v1/namespace/lake/describe", nil},
		{"POST", "/v1/namespace/" + esc("lake", "ns") + "/drop", nil},
		{"GET", "/v1/namespace/" + esc("lake", "ns") + "/table/list", nil},
		{"GET", "/v1/table", nil},
		{"POST", "/v1/table/" + esc("lake", "ns", "t") + "/describe", nil},
		{"POST", "/v1/table/" + esc("lake", "ns", "n") + "/declare", map[string]any{"location": l.w.table("n")}},
		{"POST", "/v1/table/" + esc("lake", "ns", "t") + "/drop", nil},
		{"POST", "/v1/table/" + esc("lake", "ns", "t") + "/version/list", "null"},
		{"POST", "/v1/table/" + esc("lake", "ns", "t") + "/version/create", map[string]any{"version": 1, "manifest_path": "x"}},
		{"POST", "/v1/table/version/batch-create", map[string]any{"entries": []any{}}},
		{"POST", "/v1/table/batch-commit", map[string]any{"operations": []any{}}},
		{"POST", "/v1/table/" + esc("lake", "ns", "t") + "/count_rows", nil},
	} {
		for _, nd := range l.nodes {
			unauthenticated(t, l.at(nd, "", rt.method, rt.path, rt.body))
		}
	}
	// A wrong token is refused the same way.
	unauthenticated(t, l.as("rc_wrong.token", "POST", "/v1/table/"+esc("lake", "ns", "t")+"/describe", nil))
	// With one, the unknown operation is Lance's 406.
	refused(t, l.as(l.user("alice"), "POST", "/v1/table/"+esc("lake", "ns", "t")+"/count_rows", nil), 406, 0)
}

// Reads need SELECT, commits MODIFY, creates CREATE TABLE on the
// namespace, drops ownership; lists show what the caller may see.
func TestLanceAuthTables(t *testing.T) {
	l := startAuthLake(t)
	alice, bob := l.user("alice"), l.user("bob")
	tbl := "/v1/table/" + esc("lake", "ns", "t")

	// A read: nothing without USE on the way down and SELECT on the table.
	denied(t, l.as(alice, "POST", tbl+"/describe", nil))
	l.grant(fsm.SecurableCatalog, []string{"lake"}, "alice", fsm.PrivUseCatalog)
	l.grant(fsm.SecurableSchema, []string{"lake", "ns"}, "alice", fsm.PrivUseSchema)
	denied(t, l.as(alice, "POST", tbl+"/describe", nil))
	denied(t, l.as(alice, "POST", tbl+"/exists", nil))
	denied(t, l.as(alice, "POST", tbl+"/version/list", "null"))
	l.grant(fsm.SecurableTable, []string{"lake", "ns", "t"}, "alice", fsm.PrivSelect)
	for range l.nodes {
		if r := l.ok(l.as(alice, "POST", tbl+"/describe", nil)); r.Body["location"] != l.w.table("t") || r.Body["storage_options"] != nil {
			t.Fatalf("describe: %s", r.Raw)
		}
		l.ok(l.as(alice, "POST", tbl+"/exists", nil))
		l.ok(l.as(alice, "POST", tbl+"/version/list", "null"))
	}

	// A commit: SELECT is not enough.
	staged := l.w.stage(t, l.w.table("t"), 1, "manifest 1")
	create := map[string]any{"version": 1, "manifest_path": staged, "naming_scheme": "V2"}
	denied(t, l.as(alice, "POST", tbl+"/version/create", create))
	denied(t, l.as(alice, "POST", tbl+"/version/delete", map[string]any{"ranges": []any{map[string]any{"start_version": 0, "end_version": -1}}}))
	l.grant(fsm.SecurableTable, []string{"lake", "ns", "t"}, "alice", fsm.PrivModify)
	l.ok(l.as(alice, "POST", tbl+"/version/create", create))
	l.ok(l.as(alice, "POST", tbl+"/version/describe", map[string]any{"version": 1}))

	// A create: CREATE TABLE on the schema; the creator owns the table.
	hers := "/v1/table/" + esc("lake", "ns", "hers")
	declare := map[string]any{"location": l.w.table("hers")}
	denied(t, l.as(alice, "POST", hers+"/declare", declare))
	denied(t, l.as(alice, "POST", hers+"/register", declare))
	l.grant(fsm.SecurableSchema, []string{"lake", "ns"}, "alice", fsm.PrivCreateTable)
	l.ok(l.as(alice, "POST", hers+"/declare", declare))
	l.ok(l.as(alice, "POST", hers+"/version/list", "null"))

	// Lists: alice sees t (SELECT) and hers (hers), not secret.
	if got := strs(l.ok(l.as(alice, "GET", "/v1/namespace/"+esc("lake", "ns")+"/table/list", nil)).Body["tables"]); !slices.Equal(got, []string{"hers", "t"}) {
		t.Fatalf("alice's tables of lake.ns: %v", got)
	}
	if got := strs(l.ok(l.as(alice, "GET", "/v1/namespace/"+esc("lake", "ns")+"/table/list?limit=1", nil)).Body["tables"]); !slices.Equal(got, []string{"hers"}) {
		t.Fatalf("alice's first page of lake.ns: %v", got)
	}
	if got := strs(l.ok(l.as(alice, "GET", "/v1/table", nil)).Body["tables"]); !slices.Equal(got, []string{"lake$ns$hers", "lake$ns$t"}) {
		t.Fatalf("alice's tables: %v", got)
	}
	if got := strs(l.ok(l.as(lanceAdminToken, "GET", "/v1/table", nil)).Body["tables"]); !slices.Equal(got, []string{"lake$ns$hers", "lake$ns$secret", "lake$ns$t"}) {
		t.Fatalf("the admin's tables: %v", got)
	}
	denied(t, l.as(bob, "GET", "/v1/namespace/"+esc("lake", "ns")+"/table/list", nil))
	if got := strs(l.ok(l.as(bob, "GET", "/v1/table", nil)).Body["tables"]); len(got) != 0 {
		t.Fatalf("bob's tables: %v", got)
	}

	// A rename: ownership, and CREATE TABLE where the table moves.
	denied(t, l.as(alice, "POST", tbl+"/rename", map[string]any{"new_table_name": "t2"}))
	l.ok(l.as(alice, "POST", hers+"/rename", map[string]any{"new_table_name": "hers2"}))
	hers = "/v1/table/" + esc("lake", "ns", "hers2")
	move := map[string]any{"new_table_name": "hers", "new_namespace_id": []string{"lake", "other"}}
	denied(t, l.as(alice, "POST", hers+"/rename", move))
	l.grant(fsm.SecurableSchema, []string{"lake", "other"}, "alice", fsm.PrivUseSchema, fsm.PrivCreateTable)
	l.ok(l.as(alice, "POST", hers+"/rename", move))
	hers = "/v1/table/" + esc("lake", "other", "hers")

	// A drop: ownership. MODIFY on t does not let alice drop it.
	denied(t, l.as(alice, "POST", tbl+"/drop", nil))
	denied(t, l.as(alice, "POST", tbl+"/deregister", nil))
	denied(t, l.as(alice, "POST", tbl+"/register", map[string]any{"location": l.w.table("t"), "mode": "overwrite"}))
	l.ok(l.as(alice, "POST", hers+"/deregister", nil))
	l.ok(l.as(lanceAdminToken, "POST", tbl+"/drop", nil))
}

// Namespaces: creating one takes CREATE SCHEMA on its parent (CREATE
// CATALOG for a catalog), reading one USE, dropping one ownership;
// lists show the namespaces the caller may use, page by page.
func TestLanceAuthNamespaces(t *testing.T) {
	l := startAuthLake(t)
	alice := l.user("alice")
	mine := "/v1/namespace/" + esc("lake", "mine")

	if got := strs(l.ok(l.as(alice, "GET", "/v1/namespace/%24/list", nil)).Body["namespaces"]); len(got) != 0 {
		t.Fatalf("alice's catalogs: %v", got)
	}
	denied(t, l.as(alice, "POST", "/v1/namespace/lake/describe", nil))
	denied(t, l.as(alice, "GET", "/v1/namespace/lake/list", nil))
	l.grant(fsm.SecurableCatalog, []string{"lake"}, "alice", fsm.PrivUseCatalog)
	l.ok(l.as(alice, "POST", "/v1/namespace/lake/describe", nil))
	l.ok(l.as(alice, "POST", "/v1/namespace/lake/exists", nil))
	if got := strs(l.ok(l.as(alice, "GET", "/v1/namespace/%24/list", nil)).Body["namespaces"]); !slices.Equal(got, []string{"lake"}) {
		t.Fatalf("alice's catalogs: %v", got)
	}
	if got := strs(l.ok(l.as(lanceAdminToken, "GET", "/v1/namespace/%24/list", nil)).Body["namespaces"]); !slices.Contains(got, "hidden") {
		t.Fatalf("the admin's catalogs: %v", got)
	}

	denied(t, l.as(alice, "POST", mine+"/create", nil))
	denied(t, l.as(alice, "POST", "/v1/namespace/hers/create", nil))
	l.grant(fsm.SecurableCatalog, []string{"lake"}, "alice", fsm.PrivCreateSchema)
	l.grant(fsm.SecurableMetastore, nil, "alice", fsm.PrivCreateCatalog)
	l.ok(l.as(alice, "POST", mine+"/create", map[string]any{"properties": map[string]string{"k": "v"}}))
	l.ok(l.as(alice, "POST", "/v1/namespace/hers/create", nil))
	l.ok(l.as(alice, "POST", "/v1/namespace/"+esc("lake", "mine", "deep")+"/create", nil))
	// Overwriting a namespace's properties takes its ownership.
	denied(t, l.as(alice, "POST", "/v1/namespace/"+esc("lake", "ns")+"/create", map[string]any{"mode": "Overwrite"}))
	l.ok(l.as(alice, "POST", mine+"/create", map[string]any{"mode": "Overwrite", "properties": map[string]string{"k": "w"}}))

	// lake holds a, mine, ns and other; alice may use mine (hers) and ns
	// (granted): pages read on past what she may not see.
	l.grant(fsm.SecurableSchema, []string{"lake", "ns"}, "alice", fsm.PrivUseSchema)
	var got []string
	for tok := ""; ; {
		q := "/v1/namespace/lake/list?limit=1"
		if tok != "" {
			q += "&page_token=" + tok
		}
		r := l.ok(l.as(alice, "GET", q, nil))
		got = append(got, strs(r.Body["namespaces"])...)
		if tok, _ = r.Body["page_token"].(string); tok == "" {
			break
		}
	}
	if !slices.Equal(got, []string{"mine", "ns"}) {
		t.Fatalf("alice's schemas of lake, page by page: %v", got)
	}

	denied(t, l.as(alice, "POST", "/v1/namespace/"+esc("lake", "ns")+"/drop", nil))
	denied(t, l.as(alice, "POST", "/v1/namespace/"+esc("lake", "other")+"/describe", nil))
	l.ok(l.as(alice, "POST", mine+"/drop", map[string]any{"behavior": "Cascade"}))
	l.ok(l.as(alice, "POST", "/v1/namespace/hers/drop", nil))
}

// A batch needs what each of its operations does.
func TestLanceAuthBatches(t *testing.T) {
	l := startAuthLake(t)
	alice, bob := l.user("alice"), l.user("bob")
	l.grant(fsm.SecurableCatalog, []string{"lake"}, "alice", fsm.PrivUseCatalog)
	l.grant(fsm.SecurableSchema, []string{"lake", "ns"}, "alice", fsm.PrivUseSchema, fsm.PrivCreateTable)
	l.grant(fsm.SecurableTable, []string{"lake", "ns", "t"}, "alice", fsm.PrivModify)
	id := func(name string) []string { return []string{"lake", "ns", name} }
	version := func(name string, v int64) map[string]any {
		return map[string]any{"id": id(name), "version": v, "naming_scheme": "V2",
			"manifest_path": l.w.stage(t, l.w.table(name), v, "manifest of "+name)}
	}
	commit := func(ops ...map[string]any) map[string]any { return map[string]any{"operations": ops} }
	versions := func(name string) []int64 {
		return versionsOf(l.ok(l.as(lanceAdminToken, "POST", "/v1/table/"+esc(id(name)...)+"/version/list", "null")))
	}

	// Declaring a table and its first version: CREATE TABLE is enough,
	// since the caller owns the table the batch declared.
	newTable := commit(map[string]any{"declare_table": map[string]any{"id": id("b1"), "location": l.w.table("b1")}},
		map[string]any{"create_table_version": version("b1", 1)})
	denied(t, l.as(bob, "POST", "/v1/table/batch-commit", newTable))
	l.ok(l.as(alice, "POST", "/v1/table/batch-commit", newTable))
	if vs := versions("b1"); !slices.Equal(vs, []int64{1}) {
		t.Fatalf("b1's versions: %v", vs)
	}

	// MODIFY on t lets alice add a version, not deregister t; a refused
	// batch changes nothing.
	denied(t, l.as(alice, "POST", "/v1/table/batch-commit", commit(
		map[string]any{"create_table_version": version("t", 1)},
		map[string]any{"deregister_table": map[string]any{"id": id("t")}})))
	denied(t, l.as(alice, "POST", "/v1/table/batch-commit", commit(
		map[string]any{"delete_table_versions": map[string]any{"id": id("secret"), "ranges": []any{map[string]any{"start_version": 0, "end_version": -1}}}})))
	if vs := versions("t"); len(vs) != 0 {
		t.Fatalf("a refused batch added versions to t: %v", vs)
	}
	l.ok(l.as(alice, "POST", "/v1/table/batch-commit", commit(
		map[string]any{"create_table_version": version("t", 1)},
		map[string]any{"deregister_table": map[string]any{"id": id("b1")}})))

	// batch-create: MODIFY on the table of every entry.
	denied(t, l.as(alice, "POST", "/v1/table/version/batch-create",
		map[string]any{"entries": []any{version("t", 2), version("secret", 1)}}))
	denied(t, l.as(bob, "POST", "/v1/table/version/batch-create", map[string]any{"entries": []any{version("t", 2)}}))
	l.ok(l.as(alice, "POST", "/v1/table/version/batch-create", map[string]any{"entries": []any{version("t", 2)}}))
	if vs := versions("t"); !slices.Equal(vs, []int64{1, 2}) {
		t.Fatalf("t's versions: %v", vs)
	}
	if vs := versions("secret"); len(vs) != 0 {
		t.Fatalf("secret's versions: %v", vs)
	}
}

// The admin token and requests through followers: every node answers
// alike, the leader deciding.
func TestLanceAuthThroughFollowers(t *testing.T) {
	l := startAuthLake(t)
	alice := l.user("alice")
	leader := testcluster.Leader(t, l.nodes)
	for _, nd := range testcluster.Followers(l.nodes, leader) {
		denied(t, l.at(nd, alice, http.MethodPost, "/v1/table/"+esc("lake", "ns", "t")+"/describe", nil))
	}
	l.grant(fsm.SecurableCatalog, []string{"lake"}, "alice", fsm.PrivUseCatalog)
	l.grant(fsm.SecurableSchema, []string{"lake", "ns"}, "alice", fsm.PrivUseSchema)
	l.grant(fsm.SecurableTable, []string{"lake", "ns", "t"}, "alice", fsm.PrivSelect)
	for _, nd := range testcluster.Followers(l.nodes, leader) {
		l.ok(l.at(nd, alice, http.MethodPost, "/v1/table/"+esc("lake", "ns", "t")+"/describe", nil))
	}
	testcluster.Revoke(t, l.nodes, fsm.SecurableTable, []string{"lake", "ns", "t"}, "alice", fsm.PrivSelect)
	for _, nd := range l.nodes {
		denied(t, l.at(nd, alice, http.MethodPost, "/v1/table/"+esc("lake", "ns", "t")+"/describe", nil))
	}
}

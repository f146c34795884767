package deltaapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/testcluster"
)

const authAdminToken = "delta-test-admin-token-0123456789"

// authDelta is a cluster running with authentication and the users alice,
// bob and carol, who may all use catalog unity and its schema default and
// hold nothing else until a test grants it.
type authDelta struct {
	t     *testing.T
	nodes []*testcluster.Node
	token map[string]string // bearer token by principal ("" sends none)
}

func startAuthDelta(t *testing.T) *authDelta {
	t.Helper()
	nodes := testcluster.Start(t, 3, testcluster.Options{AdminToken: authAdminToken})
	testcluster.Leader(t, nodes)
	d := &authDelta{t: t, nodes: nodes, token: map[string]string{"admin": authAdminToken}}
	for _, u := range []string{"alice", "bob", "carol"} {
		d.token[u] = testcluster.NewUser(t, nodes, u)
		d.grant(fsm.SecurableCatalog, []string{"unity"}, u, fsm.PrivUseCatalog)
		d.grant(fsm.SecurableSchema, []string{"unity", "default"}, u, fsm.PrivUseSchema)
	}
	return d
}

// grant grants privileges and waits until every node has applied them:
// a node that authenticates a request, or a new leader that decides it,
// then knows them.
func (d *authDelta) grant(typ string, path []string, who string, privs ...string) {
	d.t.Helper()
	testcluster.Grant(d.t, d.nodes, typ, path, who, privs...)
	_, index := testcluster.Leader(d.t, d.nodes).StaleState()
	for _, nd := range d.nodes {
		testcluster.WaitFor(d.t, 10*time.Second, nd.ID()+" applied the grant", func() bool {
			_, i := nd.StaleState()
			return i >= index
		})
	}
}

// do sends a request as who to node i (0 the first node; the others are
// mostly followers, which forward it to the leader).
func (d *authDelta) do(who string, i int, method, path string, body any) testcluster.Response {
	d.t.Helper()
	var headers []string
	if tok := d.token[who]; tok != "" {
		headers = []string{"Authorization", "Bearer " + tok}
	}
	return testcluster.Do(d.t, method, d.nodes[i%len(d.nodes)].URL+path, body, headers...)
}

// want sends a request and checks its status; a failure must come in the
// Delta API's envelope with the given error type.
func (d *authDelta) want(status int, typ, who string, i int, method, path string, body any) testcluster.Response {
	d.t.Helper()
	r := d.do(who, i, method, path, body)
	if r.Status != status {
		d.t.Fatalf("%s %s as %q: %d, want %d: %s", method, path, who, r.Status, status, r.Raw)
	}
	if status >= 400 && method != http.MethodHead {
		e, _ := r.Body["error"].(map[string]any)
		if e == nil || e["type"] != typ || e["code"] != float64(status) {
			d.t.Fatalf("%s %s as %q: error %s, want type %s in the Delta envelope", method, path, who, r.Raw, typ)
		}
	}
	return r
}

func (d *authDelta) denied(who string, i int, method, path string, body any) testcluster.Response {
	d.t.Helper()
	return d.want(http.StatusForbidden, "PermissionDeniedException", who, i, method, path, body)
}

const (
	schemaPath = testcluster.DeltaBase + "/catalogs/unity/schemas/default"
	stagePath  = schemaPath + "/staging-tables"
	createPath = schemaPath + "/tables"
)

func stagingCredentials(id string) string {
	return testcluster.DeltaBase + "/staging-tables/" + id + "/credentials"
}

func TestDeltaAuthUnauthenticated(t *testing.T) {
	d := startAuthDelta(t)
	config := testcluster.DeltaBase + "/config?catalog=unity&protocol-versions=1.0"
	for i, rt := range []struct{ method, path string }{
		{http.MethodGet, config},
		{http.MethodGet, testcluster.TablePath("unity", "default", "t")},
		{http.MethodPost, testcluster.TablePath("unity", "default", "t")},
		{http.MethodPost, stagePath},
		{http.MethodDelete, testcluster.TablePath("unity", "default", "t")},
		{http.MethodGet, stagingCredentials(uuid.NewString())},
	} {
		r := d.want(http.StatusUnauthorized, "NotAuthorizedException", "", i, rt.method, rt.path, map[string]any{})
		if r.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("%s %s: 401 without WWW-Authenticate", rt.method, rt.path)
		}
	}
	// Config is any caller's, privileges or not.
	d.want(http.StatusOK, "", "carol", 1, http.MethodGet, config, nil)
}

// TestDeltaAuthCommitFlow runs the Delta commit flow as a principal that
// may create tables and change them, and refuses each step to whoever
// lacks its privilege.
func TestDeltaAuthCommitFlow(t *testing.T) {
	d := startAuthDelta(t)
	schema := []string{"unity", "default"}
	table := testcluster.TablePath("unity", "default", "t")

	d.denied("alice", 1, http.MethodPost, stagePath, map[string]any{"name": "t"})
	d.grant(fsm.SecurableSchema, schema, "alice", fsm.PrivCreateTable, fsm.PrivModify)
	st := d.want(http.StatusOK, "", "alice", 1, http.MethodPost, stagePath, map[string]any{"name": "t"})
	d.want(http.StatusOK, "", "alice", 2, http.MethodGet, stagingCredentials(st.Body["table-id"].(string)), nil)
	d.want(http.StatusOK, "", "alice", 2, http.MethodPost, createPath, testcluster.CreateManagedBody("t", st))
	id := st.Body["table-id"].(string)
	d.want(http.StatusOK, "", "alice", 0, http.MethodPost, table, testcluster.CommitBody(id, 1, testcluster.StagedName(1, "a")))
	if v := d.want(http.StatusOK, "", "alice", 1, http.MethodGet, table, nil).Body["latest-table-version"]; v != float64(1) {
		t.Fatalf("alice loads version %v, want 1", v)
	}

	// carol holds nothing on the table: she cannot even read it.
	d.denied("carol", 2, http.MethodGet, table, nil)
	d.want(http.StatusForbidden, "", "carol", 1, http.MethodHead, table, nil)

	// bob may read the table, not change it.
	d.grant(fsm.SecurableTable, []string{"unity", "default", "t"}, "bob", fsm.PrivSelect)
	d.want(http.StatusOK, "", "bob", 2, http.MethodGet, table, nil)
	d.want(http.StatusNoContent, "", "bob", 1, http.MethodHead, table, nil)
	d.want(http.StatusNoContent, "", "bob", 2, http.MethodPost, table+"/metrics", map[string]any{"table-id": id, "report": map[string]any{}})
	d.want(http.StatusOK, "", "bob", 1, http.MethodGet, table+"/credentials?operation=READ", nil)
	d.denied("bob", 2, http.MethodGet, table+"/credentials?operation=READ_WRITE", nil)
	commit2 := testcluster.CommitBody(id, 2, testcluster.StagedName(2, "b"))
	d.denied("bob", 1, http.MethodPost, table, commit2)
	if v := d.want(http.StatusOK, "", "admin", 0, http.MethodGet, table, nil).Body["latest-table-version"]; v != float64(1) {
		t.Fatalf("a refused commit moved the table to version %v", v)
	}

	// With MODIFY, the same requests pass.
	d.grant(fsm.SecurableTable, []string{"unity", "default", "t"}, "bob", fsm.PrivModify)
	d.want(http.StatusOK, "", "bob", 2, http.MethodGet, table+"/credentials?operation=READ_WRITE", nil)
	d.want(http.StatusOK, "", "bob", 1, http.MethodPost, table, commit2)

	// Renaming and dropping take ownership, which MODIFY does not give.
	d.denied("bob", 2, http.MethodPost, table+"/rename", map[string]any{"new-name": "t2"})
	d.denied("bob", 1, http.MethodDelete, table, nil)
	d.want(http.StatusNoContent, "", "alice", 2, http.MethodPost, table+"/rename", map[string]any{"new-name": "t2"})
	d.want(http.StatusNoContent, "", "alice", 1, http.MethodDelete, testcluster.TablePath("unity", "default", "t2"), nil)
}

// TestDeltaAuthStagingOwnership: only the principal that staged a table
// creates it or gets the staging location's credentials, whatever else
// the others may do in the schema.
func TestDeltaAuthStagingOwnership(t *testing.T) {
	d := startAuthDelta(t)
	for _, u := range []string{"alice", "bob"} {
		d.grant(fsm.SecurableSchema, []string{"unity", "default"}, u, fsm.PrivCreateTable)
	}
	st := d.want(http.StatusOK, "", "alice", 0, http.MethodPost, stagePath, map[string]any{"name": "t"})
	creds := stagingCredentials(st.Body["table-id"].(string))

	d.denied("bob", 1, http.MethodGet, creds, nil)
	d.denied("bob", 2, http.MethodPost, createPath, testcluster.CreateManagedBody("t", st))
	d.want(http.StatusNotFound, "NoSuchTableException", "admin", 1, http.MethodGet, testcluster.TablePath("unity", "default", "t"), nil)
	d.want(http.StatusOK, "", "admin", 2, http.MethodGet, creds, nil)
	d.want(http.StatusOK, "", "alice", 1, http.MethodGet, creds, nil)
	d.want(http.StatusOK, "", "alice", 2, http.MethodPost, createPath, testcluster.CreateManagedBody("t", st))

	// A missing staging table is a 404 to anyone who asks.
	d.want(http.StatusNotFound, "NoSuchTableException", "carol", 1, http.MethodGet, stagingCredentials(uuid.NewString()), nil)
}

// A staging table staged without authentication has no creator: its
// credentials take CREATE TABLE on its schema.
func TestDeltaAuthStagingWithoutCreator(t *testing.T) {
	d := startAuthDelta(t)
	id := uuid.NewString()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, _, err := testcluster.Leader(t, d.nodes).Propose(ctx, &fsm.CreateStagingTable{Stamp: fsm.Stamp{Time: time.Now().UnixMilli()},
		ID: id, CatalogName: "unity", SchemaName: "default", Name: "anon"})
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("stage without a caller: %v", err)
	}
	d.denied("carol", 1, http.MethodGet, stagingCredentials(id), nil)
	d.grant(fsm.SecurableSchema, []string{"unity", "default"}, "carol", fsm.PrivCreateTable)
	d.want(http.StatusOK, "", "carol", 2, http.MethodGet, stagingCredentials(id), nil)
}

package transactions_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/testcluster"
)

const authAdminToken = "transactions-test-admin-token-0123456789"

const commitPath = ucPrefix + "/transactions/commit"

// as sends a transaction as the holder of token (none for "") to node i.
func (e *etl) as(token string, i int, body any) testcluster.Response {
	e.t.Helper()
	var headers []string
	if token != "" {
		headers = []string{"Authorization", "Bearer " + token}
	}
	return testcluster.Do(e.t, http.MethodPost, e.nodes[i%len(e.nodes)].URL+commitPath, body, headers...)
}

// refused checks a failure in UC REST's envelope.
func refused(t *testing.T, r testcluster.Response, status int, code, mentions string) {
	t.Helper()
	if r.Status != status || r.Body["error_code"] != code || !strings.Contains(r.Text(), mentions) {
		t.Fatalf("%d %s, want %d %s mentioning %q", r.Status, r.Raw, status, code, mentions)
	}
}

// settle waits until every node has applied what the leader has: a node
// that authenticates a request, or a new leader that decides it, then
// knows every principal and grant made so far.
func settle(t *testing.T, nodes []*testcluster.Node) {
	t.Helper()
	_, index := testcluster.Leader(t, nodes).StaleState()
	for _, nd := range nodes {
		testcluster.WaitFor(t, 10*time.Second, nd.ID()+" caught up", func() bool {
			_, i := nd.StaleState()
			return i >= index
		})
	}
}

// A transaction across formats takes MODIFY on every table it changes:
// without it on one, it is refused naming that table and nothing lands.
func TestTransactionAuth(t *testing.T) {
	e := startETL(t, testcluster.Options{AdminToken: authAdminToken}, "Authorization", "Bearer "+authAdminToken)
	bob := testcluster.NewUser(t, e.nodes, "bob")
	grant := func(typ string, path []string, privs ...string) {
		testcluster.Grant(t, e.nodes, typ, path, "bob", privs...)
		settle(t, e.nodes)
	}
	grant(fsm.SecurableCatalog, []string{"unity"}, fsm.PrivUseCatalog)
	grant(fsm.SecurableSchema, []string{"unity", "default"}, fsm.PrivUseSchema)
	grant(fsm.SecurableTable, []string{"unity", "default", "fact"}, fsm.PrivModify)
	grant(fsm.SecurableTable, []string{"unity", "default", "emb"}, fsm.PrivModify)
	grant(fsm.SecurableTable, []string{"unity", "default", "dim"}, fsm.PrivSelect)
	before := e.read()
	tx := map[string]any{"operations": e.ops(1, 1)}

	r := e.as("", 1, tx)
	refused(t, r, http.StatusUnauthorized, "UNAUTHENTICATED", "")
	if r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("401 without WWW-Authenticate: %v", r.Header)
	}
	refused(t, e.as(bob, 2, tx), http.StatusForbidden, "PERMISSION_DENIED", "MODIFY on table unity.default.dim")
	if got := e.read(); got != before {
		t.Fatalf("a refused transaction changed the tables: %+v, was %+v", got, before)
	}

	// Deregistering a table takes its ownership, which MODIFY does not give.
	drop := map[string]any{"lance": map[string]any{"deregister_table": map[string]any{"id": []string{"unity", "default", "emb"}}}}
	refused(t, e.as(bob, 1, map[string]any{"operations": []any{drop}}), http.StatusForbidden, "PERMISSION_DENIED", "ownership of table unity.default.emb")

	grant(fsm.SecurableTable, []string{"unity", "default", "dim"}, fsm.PrivModify)
	if r := e.as(bob, 2, tx); r.Status != http.StatusOK {
		t.Fatalf("with MODIFY on every table: %d %s", r.Status, r.Raw)
	}
	if got := e.read(); got.deltaVersion != 1 || got.icebergBatch != "1" || got.lanceVersions != before.lanceVersions+1 {
		t.Fatalf("after the transaction: %+v, was %+v", got, before)
	}
}

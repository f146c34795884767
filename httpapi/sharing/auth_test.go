package sharing_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi/sharing"
	"github.com/raftcat/raftcat/internal/testcluster"
)

const authAdminToken = "sharing-test-admin-token-0123456789"

// authLake is a cluster running with authentication: the admin shares
// unity.s.a in share "lake" with recipient "analyst"; unity.s.b is not
// shared.
type authLake struct {
	nodes []*testcluster.Node
	admin provider
	prof  profile
}

func startAuthLake(t *testing.T) *authLake {
	t.Helper()
	nodes := testcluster.Start(t, 3, testcluster.Options{AdminToken: authAdminToken})
	testcluster.Leader(t, nodes)
	p := provider{t: t, url: nodes[1].URL, headers: bearerOf(authAdminToken)}
	p.schema("s")
	for _, name := range []string{"a", "b"} {
		p.registerExternal("s", name, copyTable(t, "simple_table"))
	}
	p.share("lake")
	p.add("lake", "unity.s.a", "s.a", false)
	prof := p.recipient("analyst") // the activation link needs no credential
	p.grant("lake", "analyst")
	return &authLake{nodes: nodes, admin: p, prof: prof}
}

func bearerOf(token string) []string { return []string{"Authorization", "Bearer " + token} }

// newUser makes a user principal and waits until every node knows it:
// the node a request enters at authenticates its caller from its own
// state.
func (l *authLake) newUser(t *testing.T, name string) string {
	t.Helper()
	token := testcluster.NewUser(t, l.nodes, name)
	for _, nd := range l.nodes {
		testcluster.WaitFor(t, 10*time.Second, nd.ID()+" knows "+name, func() bool {
			st, _ := nd.StaleState()
			_, ok := st.Principal(name)
			return ok
		})
	}
	return token
}

// ucURL is UC REST on node i.
func (l *authLake) ucURL(i int) string { return l.nodes[i%3].URL + uc }

// propose applies a command as caller, through the leader, as if caller
// had sent it: the way to make a principal other than the admin own a
// share or a recipient, which only the admin may create.
func (l *authLake) propose(t *testing.T, cmd fsm.Command) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, _, err := testcluster.Leader(t, l.nodes).Propose(ctx, cmd)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("propose %T: %v", cmd, err)
	}
}

func (l *authLake) shareOwnedBy(t *testing.T, owner, name string) {
	t.Helper()
	l.propose(t, &fsm.CreateShare{Stamp: fsm.Stamp{Time: time.Now().UnixMilli(), Caller: owner}, ID: uuid.NewString(), Name: name})
}

func (l *authLake) recipientOwnedBy(t *testing.T, owner, name string) {
	t.Helper()
	l.propose(t, &fsm.CreateRecipient{Stamp: fsm.Stamp{Time: time.Now().UnixMilli(), Caller: owner}, ID: uuid.NewString(),
		Name: name, AuthenticationType: "TOKEN", TokenID: uuid.NewString(), ActivationHash: sharing.HashSecret(uuid.NewString())})
}

// names lists the names of a UC REST listing.
func names(r testcluster.Response, key string) string {
	var out []string
	items, _ := r.Body[key].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)["name"].(string))
	}
	return strings.Join(out, ",")
}

// A recipient reads with its own token through every node, whether or
// not it is a principal's; the file URLs it gets need no credential. A
// principal's token is no recipient's, and a recipient's no principal's.
func TestRecipientsReadUnderAuth(t *testing.T) {
	l := startAuthLake(t)
	for i := range l.nodes {
		p := l.prof
		p.Endpoint = strings.Replace(p.Endpoint, l.nodes[1].URL, l.nodes[i].URL, 1)
		c := p.client(t)
		if r := c.get("/shares"); r.Status != 200 || fmt.Sprint(r.Body["items"]) != "[map[id:"+idOf(r, 0)+" name:lake]]" {
			t.Fatalf("node %d: list shares: %d %s", i, r.Status, r.Raw)
		}
		a := c.query(tablePath("lake", "s", "a"), map[string]any{}).mustOK(t)
		files := a.of("file")
		if len(files) == 0 {
			t.Fatalf("node %d: query has no files: %s", i, a.raw)
		}
		if status, raw := fetch(t, files[0]["url"].(string)); status != 200 {
			t.Fatalf("node %d: file URL: %d %s", i, status, raw)
		}
		a = c.query(tablePath("lake", "s", "b"), map[string]any{})
		expectError(t, 404, "RESOURCE_DOES_NOT_EXIST", a.status, a.raw)
	}

	alice := l.newUser(t, "alice")
	r := testcluster.Do(t, http.MethodGet, l.nodes[2].URL+sharing.Prefix+"/shares", nil, bearerOf(alice)...)
	expectError(t, 401, "UNAUTHENTICATED", r.Status, string(r.Raw))
	r = testcluster.Do(t, http.MethodGet, l.nodes[0].URL+sharing.Prefix+"/shares", nil)
	expectError(t, 401, "UNAUTHENTICATED", r.Status, string(r.Raw))

	r = testcluster.Do(t, http.MethodGet, l.ucURL(0)+"/shares", nil, bearerOf(l.prof.BearerToken)...)
	expectUCError(t, r, 401, "UNAUTHENTICATED")
	if r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("a recipient's token on a provider route: no WWW-Authenticate: %v", r.Header)
	}
}

// The provider's routes need a principal: the admin creates shares and
// recipients, their owners manage them, and lists show each caller what
// it owns.
func TestManagingSharesUnderAuth(t *testing.T) {
	l := startAuthLake(t)
	alice, bob := l.newUser(t, "alice"), l.newUser(t, "bob")
	as := func(token string, i int, method, path string, body any) testcluster.Response {
		return testcluster.Do(t, method, l.ucURL(i)+path, body, bearerOf(token)...)
	}
	addB := map[string]any{"updates": []any{map[string]any{"action": "ADD", "data_object": map[string]any{"name": "unity.s.b"}}}}
	grantR := map[string]any{"changes": []any{map[string]any{"principal": "mine-r", "add": []string{"SELECT"}}}}

	// No credential: 401 in UC REST's envelope, from leader and followers alike.
	for i, route := range [][2]string{{http.MethodGet, "/shares"}, {http.MethodPost, "/shares"}, {http.MethodGet, "/shares/lake"},
		{http.MethodDelete, "/shares/lake"}, {http.MethodGet, "/recipients"}, {http.MethodPost, "/recipients/analyst/rotate-token"},
		{http.MethodPost, "/delta-sharing/url-signing-key/rotate"}} {
		r := testcluster.Do(t, route[0], l.ucURL(i)+route[1], map[string]any{})
		expectUCError(t, r, 401, "UNAUTHENTICATED")
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%s %s: WWW-Authenticate %q", route[0], route[1], r.Header.Get("WWW-Authenticate"))
		}
	}

	// Creating needs the admin; so does rotating the URL signing key.
	expectUCError(t, as(alice, 0, http.MethodPost, "/shares", map[string]any{"name": "hers"}), 403, "PERMISSION_DENIED")
	expectUCError(t, as(alice, 2, http.MethodPost, "/recipients", map[string]any{"name": "hers"}), 403, "PERMISSION_DENIED")
	expectUCError(t, as(alice, 1, http.MethodPost, "/delta-sharing/url-signing-key/rotate", map[string]any{}), 403, "PERMISSION_DENIED")
	ok(t, 200, http.MethodPost, l.ucURL(2)+"/delta-sharing/url-signing-key/rotate", map[string]any{}, l.admin.headers...)

	// The admin's share and recipient are not alice's.
	for i, route := range [][2]string{{http.MethodGet, "/shares/lake"}, {http.MethodGet, "/shares/lake/permissions"},
		{http.MethodPatch, "/shares/lake/permissions"}, {http.MethodPatch, "/shares/lake"}, {http.MethodDelete, "/shares/lake"},
		{http.MethodGet, "/recipients/analyst"}, {http.MethodDelete, "/recipients/analyst"}} {
		expectUCError(t, as(alice, i, route[0], route[1], map[string]any{}), 403, "PERMISSION_DENIED")
	}
	if r := ok(t, 200, http.MethodGet, l.ucURL(0)+"/shares", nil, bearerOf(alice)...); names(r, "shares") != "" {
		t.Fatalf("alice lists shares she does not own: %s", r.Raw)
	}

	// What alice owns, she manages; bob may not.
	l.shareOwnedBy(t, "alice", "mine")
	l.recipientOwnedBy(t, "alice", "mine-r")
	if r := ok(t, 200, http.MethodGet, l.ucURL(1)+"/shares", nil, bearerOf(alice)...); names(r, "shares") != "mine" {
		t.Fatalf("alice's shares: %s", r.Raw)
	}
	if r := ok(t, 200, http.MethodGet, l.ucURL(2)+"/shares?max_results=1", nil, bearerOf(alice)...); names(r, "shares") != "mine" {
		t.Fatalf("alice's first page of shares: %s", r.Raw)
	}
	if r := ok(t, 200, http.MethodGet, l.ucURL(0)+"/shares", nil, l.admin.headers...); names(r, "shares") != "lake,mine" {
		t.Fatalf("the admin's shares: %s", r.Raw)
	}
	if r := ok(t, 200, http.MethodGet, l.ucURL(2)+"/recipients", nil, bearerOf(alice)...); names(r, "recipients") != "mine-r" {
		t.Fatalf("alice's recipients: %s", r.Raw)
	}
	if r := ok(t, 200, http.MethodGet, l.ucURL(1)+"/recipients", nil, bearerOf(bob)...); names(r, "recipients") != "" {
		t.Fatalf("bob's recipients: %s", r.Raw)
	}
	ok(t, 200, http.MethodGet, l.ucURL(0)+"/shares/mine", nil, bearerOf(alice)...)
	ok(t, 200, http.MethodGet, l.ucURL(1)+"/recipients/mine-r", nil, bearerOf(alice)...)
	ok(t, 200, http.MethodPatch, l.ucURL(2)+"/shares/mine/permissions", grantR, bearerOf(alice)...)
	expectUCError(t, as(bob, 0, http.MethodGet, "/shares/mine", nil), 403, "PERMISSION_DENIED")
	expectUCError(t, as(bob, 1, http.MethodPost, "/recipients/mine-r/rotate-token", map[string]any{"existing_token_expire_in_seconds": 0}), 403, "PERMISSION_DENIED")
	ok(t, 200, http.MethodPost, l.ucURL(1)+"/recipients/mine-r/rotate-token", map[string]any{"existing_token_expire_in_seconds": 0}, bearerOf(alice)...)

	// Adding a table takes SELECT on it, which alice gets by grants.
	expectUCError(t, as(alice, 2, http.MethodPatch, "/shares/mine", addB), 403, "PERMISSION_DENIED")
	testcluster.Grant(t, l.nodes, fsm.SecurableCatalog, []string{"unity"}, "alice", fsm.PrivUseCatalog)
	testcluster.Grant(t, l.nodes, fsm.SecurableSchema, []string{"unity", "s"}, "alice", fsm.PrivUseSchema)
	expectUCError(t, as(alice, 0, http.MethodPatch, "/shares/mine", addB), 403, "PERMISSION_DENIED")
	testcluster.Grant(t, l.nodes, fsm.SecurableTable, []string{"unity", "s", "b"}, "alice", fsm.PrivSelect)
	if r := ok(t, 200, http.MethodPatch, l.ucURL(1)+"/shares/mine", addB, bearerOf(alice)...); !strings.Contains(string(r.Raw), `"name":"unity.s.b"`) {
		t.Fatalf("alice's add: %s", r.Raw)
	}
	// A comment alone needs no table privilege; bob still owns nothing.
	ok(t, 200, http.MethodPatch, l.ucURL(2)+"/shares/mine", map[string]any{"comment": "hers"}, bearerOf(alice)...)
	expectUCError(t, as(bob, 2, http.MethodPatch, "/shares/mine", map[string]any{"comment": "his"}), 403, "PERMISSION_DENIED")
	expectUCError(t, as(bob, 0, http.MethodDelete, "/shares/mine", nil), 403, "PERMISSION_DENIED")
	ok(t, 200, http.MethodDelete, l.ucURL(0)+"/shares/mine", nil, bearerOf(alice)...)
	ok(t, 200, http.MethodDelete, l.ucURL(2)+"/recipients/mine-r", nil, bearerOf(alice)...)
	if r := ok(t, 200, http.MethodGet, l.ucURL(1)+"/shares", nil, l.admin.headers...); names(r, "shares") != "lake" {
		t.Fatalf("shares after alice's delete: %s", r.Raw)
	}
}

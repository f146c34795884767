package httpapi_test

import (
	"bufio"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/auth"
	"github.com/raftcat/raftcat/internal/testcluster"
)

const adminToken = "admin-token-for-tests-0123456789"

// authCluster is a three-node cluster run with --auth=token, whose
// audit logs and node logs are kept.
type authCluster struct {
	nodes      []*testcluster.Node
	audit, log map[string]*logBuffer
}

func startAuthCluster(t *testing.T) *authCluster {
	t.Helper()
	return startAuthClusterWith(t, testcluster.Options{})
}

// startAuthClusterWith is startAuthCluster with more options.
func startAuthClusterWith(t *testing.T, opts testcluster.Options) *authCluster {
	t.Helper()
	ac := &authCluster{audit: map[string]*logBuffer{}, log: map[string]*logBuffer{}}
	for _, id := range []string{"node1", "node2", "node3"} {
		ac.audit[id], ac.log[id] = &logBuffer{}, &logBuffer{}
	}
	opts.AdminToken = adminToken
	opts.Audit = func(id string) io.Writer { return ac.audit[id] }
	opts.Logger = func(id string) *slog.Logger {
		return slog.New(slog.NewTextHandler(ac.log[id], &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ac.nodes = testcluster.Start(t, 3, opts)
	return ac
}

// as is a client of one node sending a bearer token ("" for none).
func as(t testing.TB, nd *testcluster.Node, token string) *authed {
	return &authed{api: &api{t: t, base: nd.URL}, token: token}
}

type authed struct {
	*api
	token string
}

func (a *authed) call(method, path string, body any, hdr ...string) reply {
	a.t.Helper()
	if a.token != "" {
		hdr = append(hdr, "Authorization", "Bearer "+a.token)
	}
	return a.do(method, path, body, hdr...)
}

func (a *authed) must(status int, method, path string, body any) reply {
	a.t.Helper()
	r := a.call(method, path, body)
	if r.status != status {
		a.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.raw)
	}
	return r
}

// newUser creates a user through the API and a token for it.
func (ac *authCluster) newUser(t *testing.T, name string) (token, id string) {
	t.Helper()
	adm := as(t, ac.nodes[1], adminToken)
	adm.must(200, http.MethodPost, "/v1/auth/principals", map[string]any{"name": name, "type": "user"})
	r := adm.must(200, http.MethodPost, "/v1/auth/tokens", map[string]any{"principal": name, "ttl_seconds": 3600})
	return str(t, r.obj(t)["token"]), str(t, r.obj(t)["id"])
}

func TestAuthTokensPrincipalsAndRevocation(t *testing.T) {
	ac := startAuthCluster(t)
	n1, n2, n3 := ac.nodes[0], ac.nodes[1], ac.nodes[2]

	r := as(t, n2, "").call(http.MethodGet, apiPrefix+"/catalogs", nil)
	ucErr(t, r, 401, "UNAUTHENTICATED", "credential")
	if got := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Fatalf("WWW-Authenticate = %q", got)
	}
	r = as(t, n3, "rct_nope.wrong").call(http.MethodGet, apiPrefix+"/catalogs", nil)
	ucErr(t, r, 401, "UNAUTHENTICATED", "refused")
	if got := r.header.Get("WWW-Authenticate"); !strings.Contains(got, "invalid_token") {
		t.Fatalf("WWW-Authenticate = %q, want invalid_token", got)
	}
	for _, nd := range ac.nodes {
		for _, open := range []string{"/healthz", "/readyz"} {
			as(t, nd, "").must(200, http.MethodGet, open, nil)
		}
	}
	if who := as(t, n3, adminToken).must(200, http.MethodGet, "/v1/auth/whoami", nil).obj(t); who["principal"] != "admin" || who["admin"] != true {
		t.Fatalf("whoami as admin: %v", who)
	}

	alice, aliceID := ac.newUser(t, "alice")
	if who := as(t, n1, alice).must(200, http.MethodGet, "/v1/auth/whoami", nil).obj(t); who["principal"] != "alice" || who["admin"] != false {
		t.Fatalf("whoami as alice: %v", who)
	}
	ac.newUser(t, "bob")
	adminErr(t, as(t, n2, alice).call(http.MethodPost, "/v1/auth/tokens", map[string]any{"principal": "bob"}), 403, "bob")
	adminErr(t, as(t, n2, alice).call(http.MethodGet, "/v1/auth/principals", nil), 403, "admin")
	own := as(t, n2, alice).must(200, http.MethodPost, "/v1/auth/tokens", map[string]any{"ttl_seconds": 60}).obj(t)
	if own["principal"] != "alice" || own["expires_at"] == nil {
		t.Fatalf("alice's own token: %v", own)
	}

	svc := as(t, n3, adminToken).must(200, http.MethodPost, "/v1/auth/principals", map[string]any{"name": "etl", "type": "service"}).obj(t)
	if svc["client_id"] == nil || svc["client_secret"] == nil {
		t.Fatalf("a service principal's answer has no client credentials: %v", svc)
	}
	if listed := as(t, n1, adminToken).must(200, http.MethodGet, "/v1/auth/principals/etl", nil).obj(t); listed["client_secret"] != nil {
		t.Fatalf("the client secret is shown again: %v", listed)
	}

	// A revoked token is refused at once on every node.
	as(t, n3, alice).must(200, http.MethodDelete, "/v1/auth/tokens/"+aliceID, nil)
	for _, nd := range ac.nodes {
		ucErr(t, as(t, nd, alice).call(http.MethodGet, apiPrefix+"/catalogs", nil), 401, "UNAUTHENTICATED")
	}
	adminErr(t, as(t, n1, adminToken).call(http.MethodDelete, "/v1/auth/tokens/"+aliceID, nil), 404, "Token not found")
	ac.checkNoSecrets(t, adminToken, alice, str(t, own["token"]), str(t, svc["client_secret"]))
}

// checkNoSecrets greps every node's log, audit log and data directory
// (the raft log, snapshots) for the secrets.
func (ac *authCluster) checkNoSecrets(t *testing.T, secrets ...string) {
	t.Helper()
	var hay []string
	for id := range ac.log {
		hay = append(hay, ac.log[id].String(), ac.audit[id].String())
	}
	for _, nd := range ac.nodes {
		_ = filepath.WalkDir(nd.Dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if raw, rerr := os.ReadFile(path); rerr == nil {
					hay = append(hay, string(raw))
				}
			}
			return nil
		})
	}
	for _, s := range secrets {
		secret := s
		if _, rest, ok := strings.Cut(s, "."); ok && strings.HasPrefix(s, auth.TokenPrefix) {
			secret = rest // the id part of a token is public
		}
		for _, h := range hay {
			if strings.Contains(h, secret) {
				t.Fatalf("a secret (%.6s…) appears in a log or a data file", secret)
			}
		}
	}
}

func TestGrantsTakeEffectOnEveryNode(t *testing.T) {
	ac := startAuthCluster(t)
	adm := as(t, ac.nodes[0], adminToken)
	testcluster.CreateManaged(t, ac.nodes[0].URL, ac.nodes[0].URL, "unity", "default", "events", testcluster.Bearer(adminToken)...)
	alice, _ := ac.newUser(t, "alice")
	get := apiPrefix + "/tables/unity.default.events"
	for _, nd := range ac.nodes {
		ucErr(t, as(t, nd, alice).call(http.MethodGet, get, nil), 403, "PERMISSION_DENIED", "USE CATALOG")
	}
	perms := apiPrefix + "/permissions/"
	adm.must(200, http.MethodPatch, perms+"catalog/unity", map[string]any{"changes": []any{
		map[string]any{"principal": "alice", "add": []string{"USE_CATALOG", "use schema"}}}})
	for _, nd := range ac.nodes {
		ucErr(t, as(t, nd, alice).call(http.MethodGet, get, nil), 403, "PERMISSION_DENIED", "SELECT on table unity.default.events")
	}
	got := adm.must(200, http.MethodPatch, perms+"table/unity.default.events", map[string]any{"changes": []any{
		map[string]any{"principal": "alice", "add": []string{"SELECT"}}}}).obj(t)
	if s, _ := json.Marshal(got); string(s) != `{"privilege_assignments":[{"principal":"alice","privileges":["SELECT"]}]}` {
		t.Fatalf("PATCH answered %s", s)
	}
	for _, nd := range ac.nodes {
		as(t, nd, alice).must(200, http.MethodGet, get, nil)
	}
	cat := as(t, ac.nodes[2], adminToken).must(200, http.MethodGet, perms+"catalog/unity", nil).obj(t)
	if s, _ := json.Marshal(cat); string(s) != `{"privilege_assignments":[{"principal":"alice","privileges":["USE CATALOG","USE SCHEMA"]}]}` {
		t.Fatalf("GET permissions answered %s", s)
	}
	ucErr(t, as(t, ac.nodes[1], alice).call(http.MethodGet, perms+"catalog/unity", nil), 403, "PERMISSION_DENIED", "ownership")
	ucErr(t, adm.call(http.MethodPatch, perms+"catalog/unity", map[string]any{"changes": []any{
		map[string]any{"principal": "alice", "add": []string{"SELECT", "CREATE CATALOG"}}}}), 400, "INVALID_ARGUMENT", "CREATE CATALOG")
	adm.must(200, http.MethodPatch, perms+"table/unity.default.events", map[string]any{"changes": []any{
		map[string]any{"principal": "alice", "remove": []string{"SELECT"}}}})
	for _, nd := range ac.nodes {
		ucErr(t, as(t, nd, alice).call(http.MethodGet, get, nil), 403, "PERMISSION_DENIED")
	}
	// Lists show only what the caller may see.
	testcluster.CreateManaged(t, ac.nodes[0].URL, ac.nodes[0].URL, "unity", "default", "other", testcluster.Bearer(adminToken)...)
	adm.must(200, http.MethodPatch, perms+"table/unity.default.other", map[string]any{"changes": []any{
		map[string]any{"principal": "alice", "add": []string{"MODIFY"}}}})
	list := as(t, ac.nodes[1], alice).must(200, http.MethodGet, apiPrefix+"/tables?catalog_name=unity&schema_name=default", nil).obj(t)
	if names := tableNames(t, list); strings.Join(names, ",") != "other" {
		t.Fatalf("alice lists %v, want only other", names)
	}
	if names := tableNames(t, adm.must(200, http.MethodGet, apiPrefix+"/tables?catalog_name=unity&schema_name=default", nil).obj(t)); len(names) != 2 {
		t.Fatalf("admin lists %v, want both tables", names)
	}
}

func tableNames(t *testing.T, list map[string]any) []string {
	var out []string
	for _, tb := range arr(t, list["tables"]) {
		out = append(out, str(t, objOf(t, tb)["name"]))
	}
	return out
}

func TestForgedPeerRequestsAreRefused(t *testing.T) {
	ac := startAuthCluster(t)
	leader := testcluster.Leader(t, ac.nodes)
	forged := auth.Signed{Node: "node2", Method: http.MethodGet, URI: "/v1/cluster",
		Identity: &auth.Identity{Principal: "node:node2", Kind: auth.KindPeer}}
	cases := map[string]*auth.Peer{
		"no signature":     nil,
		"another key":      auth.NewPeer([]byte("not-the-cluster-key-0123456789")),
		"right key, stale": auth.NewPeer(auth.DeriveClusterKey(adminToken)),
	}
	for name, key := range cases {
		t.Run(name, func(t *testing.T) {
			hdr := []string{"X-Raftcat-Forwarded", forged.Node, "X-Raftcat-Identity", forged.Envelope()}
			if key != nil {
				at := time.Now()
				if name == "right key, stale" {
					at = at.Add(-10 * time.Minute)
				}
				hdr = append(hdr, "X-Raftcat-Peer-Signature", key.Sign(forged, at))
			}
			r := as(t, leader, "").call(http.MethodGet, "/v1/cluster", nil, hdr...)
			adminErr(t, r, 403, "cluster peer")
		})
	}
	// The same request signed with the cluster's key now is believed:
	// the refusals above come from the signature, not the headers.
	good := auth.NewPeer(auth.DeriveClusterKey(adminToken)).Sign(forged, time.Now())
	adminErr(t, as(t, leader, "").call(http.MethodGet, "/v1/cluster", nil), 401, "credential")
	r := as(t, leader, "").call(http.MethodGet, "/v1/cluster", nil, "X-Raftcat-Forwarded", forged.Node,
		"X-Raftcat-Identity", forged.Envelope(), "X-Raftcat-Peer-Signature", good)
	if r.status == 403 || r.status == 401 {
		t.Fatalf("a request signed with the cluster key was refused: %d %s", r.status, r.raw)
	}
	// An identity header alone, from a client, is refused too.
	adminErr(t, as(t, leader, "").call(http.MethodGet, "/v1/cluster", nil, "X-Raftcat-Identity", forged.Envelope()), 403, "cluster peer")
	// A relay connection from a non-peer is refused before it is upgraded.
	rr := rawExchangeStatus(t, leader.URL, "GET /v1/cluster/relay HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: raftcat-relay/1\r\n\r\n")
	if rr != http.StatusForbidden {
		t.Fatalf("relay upgrade from a non-peer: status %d, want 403", rr)
	}
	if !strings.Contains(ac.log[leader.ID()].String(), "cannot prove it is a cluster peer") {
		t.Fatal("the refused relay connection was not logged")
	}
}

// rawExchangeStatus writes raw to the node and returns the answer's status.
func rawExchangeStatus(t *testing.T, base, raw string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAuditLogRecordsWritesAndDenials(t *testing.T) {
	ac := startAuthCluster(t)
	alice, _ := ac.newUser(t, "alice")
	follower := testcluster.Followers(ac.nodes, testcluster.Leader(t, ac.nodes))[0]
	as(t, follower, alice).call(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": "nope"})
	as(t, follower, "").call(http.MethodGet, apiPrefix+"/catalogs", nil)
	w := as(t, follower, adminToken).must(200, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": "sales"})
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(ac.audit[follower.ID()].String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		recs = append(recs, m)
	}
	find := func(principal, result string, status float64) map[string]any {
		for _, m := range recs {
			if m["principal"] == principal && m["result"] == result && m["status"] == status && m["action"] == "POST /api/2.1/unity-catalog/catalogs" ||
				principal == "" && m["principal"] == "" && m["status"] == status {
				return m
			}
		}
		t.Fatalf("no audit line for %q %s %v in %v", principal, result, status, recs)
		return nil
	}
	find("alice", "denied", 403)
	find("", "denied", 401)
	ok := find("admin", "ok", 200)
	if ok["protocol"] != "ucrest" || ok["request_id"] != w.header.Get("X-Request-Id") || ok["raft_index"] == nil || ok["time"] == nil {
		t.Fatalf("audit line of the write: %v (answer index %s)", ok, w.header.Get(headerIndex))
	}
	for id, buf := range ac.audit {
		if id != follower.ID() && strings.Contains(buf.String(), "sales") {
			t.Fatalf("%s, which only served the relayed request, also audited it", id)
		}
	}
	ac.checkNoSecrets(t, adminToken, alice)
}

func TestFailedAuthenticationsAreThrottled(t *testing.T) {
	ac := startAuthCluster(t)
	var r reply
	for i := 0; i < 40; i++ {
		r = as(t, ac.nodes[0], "rct_bad.token").call(http.MethodGet, deltaPrefix+"/config?catalog=unity&protocol-versions=1.0", nil)
		if r.status == http.StatusTooManyRequests {
			break
		}
		deltaErr(t, r, 401, "NotAuthorizedException")
	}
	deltaErr(t, r, 429, "TooManyRequestsException", "failed authentications")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// A valid token from the same address is throttled as well until then,
	// but another node keeps its own count.
	as(t, ac.nodes[1], adminToken).must(200, http.MethodGet, "/v1/auth/whoami", nil)
}

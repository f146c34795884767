package iceberg_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	goiceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi/iceberg"
	"github.com/raftcat/raftcat/internal/auth"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// newService makes a service principal with OAuth2 client credentials
// and waits until every node knows it.
func newService(t *testing.T, nodes []*testcluster.Node, name, clientID, secret string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := auth.HashSecret(secret)
	res, _, err := testcluster.Leader(t, nodes).Propose(ctx, &fsm.CreatePrincipal{Stamp: fsm.Stamp{Time: time.Now().UnixMilli()},
		Principal: fsm.Principal{Name: name, Type: fsm.PrincipalService, ClientID: clientID, Secret: &h}})
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("create service principal %s: %v", name, err)
	}
	waitPrincipal(t, nodes, name)
}

func tokenURL(nd *testcluster.Node) string { return nd.URL + iceberg.Prefix + "/v1/oauth/tokens" }

// postForm posts a form to the token endpoint, with extra headers.
func postForm(t *testing.T, nd *testcluster.Node, form url.Values, headers ...string) testcluster.Response {
	t.Helper()
	return testcluster.Do(t, http.MethodPost, tokenURL(nd), form.Encode(),
		append([]string{"Content-Type", "application/x-www-form-urlencoded"}, headers...)...)
}

func clientForm(id, secret string) url.Values {
	return url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}}
}

// expectOAuthError checks an error of the token endpoint: status and
// OAuth's {"error", "error_description"}.
func expectOAuthError(t *testing.T, r testcluster.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.Body["error"] != code || r.Body["error_description"] == "" || len(r.Body) != 2 {
		t.Fatalf("want %d %s, got %d %s", status, code, r.Status, r.Raw)
	}
	if status == http.StatusUnauthorized && r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("a 401 without WWW-Authenticate: %s", r.Raw)
	}
}

// expectToken checks a token answer and returns the access token.
func expectToken(t *testing.T, r testcluster.Response) string {
	t.Helper()
	tok, _ := r.Body["access_token"].(string)
	if r.Status != http.StatusOK || tok == "" || r.Body["token_type"] != "bearer" || r.Body["expires_in"] != 3600.0 ||
		r.Body["issued_token_type"] != "urn:ietf:params:oauth:token-type:access_token" {
		t.Fatalf("token answer %d %s", r.Status, r.Raw)
	}
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token answer Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	return tok
}

// The token endpoint issues a service principal an access token for its
// client credentials, in the form or as HTTP Basic, on any node; it
// refuses what RFC 6749 says with OAuth's error shape.
func TestOAuthTokenEndpoint(t *testing.T) {
	nodes := startAuth(t)
	newService(t, nodes, "etl", "etl-client", "s3cr3t")
	testcluster.Grant(t, nodes, fsm.SecurableCatalog, []string{"unity"}, "etl", fsm.PrivUseCatalog)

	tok := expectToken(t, postForm(t, nodes[1], clientForm("etl-client", "s3cr3t")))
	if got := namespaceNames(ok(t, http.StatusOK, http.MethodGet, base(nodes[2])+"/namespaces", nil, bearer(tok)...)); len(got) != 0 {
		t.Fatalf("the service sees namespaces it may not use: %v", got)
	}
	expectDenied(t, as(t, tok, http.MethodGet, base(nodes[0])+"/namespaces/db", nil))
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("etl-client:s3cr3t"))
	expectToken(t, postForm(t, nodes[2], url.Values{"grant_type": {"client_credentials"}}, "Authorization", basic))

	expectOAuthError(t, postForm(t, nodes[0], clientForm("etl-client", "wrong")), http.StatusUnauthorized, "invalid_client")
	expectOAuthError(t, postForm(t, nodes[1], clientForm("nobody", "s3cr3t")), http.StatusUnauthorized, "invalid_client")
	expectOAuthError(t, postForm(t, nodes[2], url.Values{"grant_type": {"client_credentials"}}), http.StatusUnauthorized, "invalid_client")
	password := clientForm("etl-client", "s3cr3t")
	password.Set("grant_type", "password")
	expectOAuthError(t, postForm(t, nodes[0], password), http.StatusBadRequest, "unsupported_grant_type")
	expectOAuthError(t, postForm(t, nodes[1], url.Values{"client_id": {"etl-client"}, "client_secret": {"s3cr3t"}}), http.StatusBadRequest, "invalid_request")
	twice := clientForm("etl-client", "s3cr3t")
	twice.Add("scope", "more")
	expectOAuthError(t, postForm(t, nodes[2], twice), http.StatusBadRequest, "invalid_request")
	expectOAuthError(t, postForm(t, nodes[0], clientForm("etl-client", "s3cr3t"), "Authorization", basic), http.StatusBadRequest, "invalid_request")
	asJSON := testcluster.Do(t, http.MethodPost, tokenURL(nodes[1]), `{"grant_type":"client_credentials"}`)
	expectOAuthError(t, asJSON, http.StatusBadRequest, "invalid_request")
}

// iceberg-go, configured with a service principal's client credentials,
// gets its token from the catalog and writes a table with it; a wrong
// secret fails as an OAuth error, and no credential as unauthorized.
func TestOAuthIcebergGoClient(t *testing.T) {
	nodes := startAuth(t)
	newService(t, nodes, "etl", "etl-client", "s3cr3t")
	testcluster.Grant(t, nodes, fsm.SecurableCatalog, []string{"unity"}, "etl", fsm.PrivUseCatalog)
	testcluster.Grant(t, nodes, fsm.SecurableSchema, []string{"unity", "db"}, "etl", fsm.PrivUseSchema, fsm.PrivCreateTable)
	ctx := context.Background()

	cat, err := rest.NewCatalog(ctx, "raftcat", nodes[1].URL+iceberg.Prefix, rest.WithCredential("etl-client:s3cr3t"))
	if err != nil {
		t.Fatalf("connect with client credentials: %v", err)
	}
	sc := goiceberg.NewSchema(0, goiceberg.NestedField{ID: 1, Name: "id", Type: goiceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", "events"}, sc)
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	if _, err := tbl.AppendTable(ctx, rows(t, 1, 2, 3), 10, nil); err != nil {
		t.Fatalf("append: %v", err)
	}
	loaded, err := cat.LoadTable(ctx, table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := loaded.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.NumRows() != 3 || len(loaded.Metadata().Snapshots()) != 1 {
		t.Fatalf("after the append: %d rows, %d snapshots", got.NumRows(), len(loaded.Metadata().Snapshots()))
	}
	if _, err := cat.LoadTable(ctx, table.Identifier{"db", "t1"}); !errors.Is(err, rest.ErrForbidden) {
		t.Fatalf("loading a table the service may not read: %v", err)
	}

	_, err = rest.NewCatalog(ctx, "raftcat", nodes[2].URL+iceberg.Prefix, rest.WithCredential("etl-client:wrong"))
	if !errors.Is(err, rest.ErrOAuthError) || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("a wrong secret: %v, want an OAuth invalid_client error", err)
	}
	if _, err := rest.NewCatalog(ctx, "raftcat", nodes[0].URL+iceberg.Prefix); !errors.Is(err, rest.ErrUnauthorized) {
		t.Fatalf("no credential: %v, want unauthorized", err)
	}
}

// Without authentication the endpoint still issues tokens to the service
// principals that exist (the first one makes the signing key), so
// clients configured with credentials keep working.
func TestOAuthWithoutAuth(t *testing.T) {
	nodes := testcluster.Start(t, 1, testcluster.Options{})
	newService(t, nodes, "etl", "etl-client", "s3cr3t")
	expectToken(t, postForm(t, nodes[0], clientForm("etl-client", "s3cr3t")))
	expectOAuthError(t, postForm(t, nodes[0], clientForm("etl-client", "wrong")), http.StatusUnauthorized, "invalid_client")
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "raftcat", nodes[0].URL+iceberg.Prefix, rest.WithCredential("etl-client:s3cr3t"))
	if err != nil {
		t.Fatalf("connect with client credentials: %v", err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"open"}, nil); err != nil {
		t.Fatal(err)
	}
}

// Rotating the signing key retires the tokens of the old one once its
// grace period ends, on every node; a grace period keeps them meanwhile.
func TestOAuthTokensOfARotatedKey(t *testing.T) {
	nodes := startAuth(t)
	newService(t, nodes, "etl", "etl-client", "s3cr3t")
	testcluster.Grant(t, nodes, fsm.SecurableCatalog, []string{"unity"}, "etl", fsm.PrivUseCatalog)
	old := expectToken(t, postForm(t, nodes[0], clientForm("etl-client", "s3cr3t")))
	rotate := func(grace int) {
		t.Helper()
		r := testcluster.Do(t, http.MethodPost, nodes[1].URL+"/v1/auth/signing-keys/rotate", map[string]any{"grace_seconds": grace},
			testcluster.Bearer(adminToken)...)
		if r.Status != http.StatusOK {
			t.Fatalf("rotate: %d %s", r.Status, r.Raw)
		}
	}
	rotate(3600)
	for _, nd := range nodes {
		ok(t, http.StatusOK, http.MethodGet, base(nd)+"/namespaces", nil, bearer(old)...)
	}
	fresh := expectToken(t, postForm(t, nodes[2], clientForm("etl-client", "s3cr3t")))
	rotate(0) // the first key is past its grace now, the second retires at once
	for _, nd := range nodes {
		for _, tok := range []string{old, fresh} {
			r := testcluster.Do(t, http.MethodGet, base(nd)+"/namespaces", nil, bearer(tok)...)
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("a token of a retired key on %s: %d %s", nd.ID(), r.Status, r.Raw)
			}
		}
	}
	ok(t, http.StatusOK, http.MethodGet, base(nodes[0])+"/namespaces", nil,
		bearer(expectToken(t, postForm(t, nodes[0], clientForm("etl-client", "s3cr3t"))))...)
}

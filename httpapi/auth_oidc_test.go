package httpapi_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/auth"
	"github.com/raftcat/raftcat/internal/testcluster"
)

const (
	oidcIssuer   = "https://idp.example.com"
	oidcAudience = "raftcat"
)

// oidcKey makes a key pair and writes its public half as a JWKS file.
func oidcKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}}
	raw, _ := json.Marshal(set)
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return key, path
}

func oidcToken(t *testing.T, key *rsa.PrivateKey, iss, aud, sub string, exp time.Time) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: iss, Audience: jwt.Audience{aud}, Subject: sub,
		IssuedAt: jwt.NewNumericDate(time.Now()), Expiry: jwt.NewNumericDate(exp)}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A node run with --oidc-* takes the issuer's JWTs: the subject is the
// principal grants name, and wrong issuers, audiences, expired tokens,
// unknown keys and unsigned tokens are refused.
func TestOIDCTokensAuthenticate(t *testing.T) {
	key, jwks := oidcKey(t)
	nodes := testcluster.Start(t, 3, testcluster.Options{AdminToken: adminToken,
		OIDC: &auth.OIDC{Issuer: oidcIssuer, Audience: oidcAudience, JWKSFile: jwks}})
	follower := testcluster.Followers(nodes, testcluster.Leader(t, nodes))[0]
	good := oidcToken(t, key, oidcIssuer, oidcAudience, "carol", time.Now().Add(time.Hour))
	who := as(t, follower, good).must(200, http.MethodGet, "/v1/auth/whoami", nil).obj(t)
	if who["principal"] != "carol" || who["kind"] != "oidc" {
		t.Fatalf("whoami: %v", who)
	}
	ucErr(t, as(t, follower, good).call(http.MethodGet, apiPrefix+"/catalogs/unity", nil), 403, "PERMISSION_DENIED", "USE CATALOG")
	testcluster.Grant(t, nodes, fsm.SecurableCatalog, []string{"unity"}, "carol", fsm.PrivUseCatalog)
	as(t, follower, good).must(200, http.MethodGet, apiPrefix+"/catalogs/unity", nil)

	other, _ := oidcKey(t)
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]any{"iss": oidcIssuer, "aud": oidcAudience, "sub": "carol", "exp": time.Now().Add(time.Hour).Unix()})
	for name, tok := range map[string]string{
		"wrong issuer":   oidcToken(t, key, "https://evil.example.com", oidcAudience, "carol", time.Now().Add(time.Hour)),
		"wrong audience": oidcToken(t, key, oidcIssuer, "someone-else", "carol", time.Now().Add(time.Hour)),
		"expired":        oidcToken(t, key, oidcIssuer, oidcAudience, "carol", time.Now().Add(-time.Minute)),
		"unknown key":    oidcToken(t, other, oidcIssuer, oidcAudience, "carol", time.Now().Add(time.Hour)),
		"alg none":       header + "." + base64.RawURLEncoding.EncodeToString(claims) + ".",
	} {
		t.Run(name, func(t *testing.T) {
			ucErr(t, as(t, follower, tok).call(http.MethodGet, apiPrefix+"/catalogs/unity", nil), 401, "UNAUTHENTICATED")
		})
	}
}

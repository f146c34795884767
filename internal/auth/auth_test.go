package auth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/raftcat/raftcat/fsm"
)

// t0 is the time the test states start at (a whole second).
var t0 = time.UnixMilli(1_700_000_000_000)

// machine applies commands to an fsm.Machine the way the cluster does:
// encoded, decoded, at consecutive raft indexes.
type machine struct {
	t    testing.TB
	m    *fsm.Machine
	next uint64
}

// newMachine returns a machine with the metastore initialised at t0.
func newMachine(t testing.TB) *machine {
	t.Helper()
	m := &machine{t: t, m: fsm.NewMachine(), next: 1}
	m.apply(&fsm.Init{Stamp: stamp(t0), MetastoreID: "ms-1", StorageRoot: "s3://bucket/root",
		CatalogID: "cat-unity", SchemaID: "sch-default"})
	return m
}

// stamp is a stamp at the time given, by the admin, under the current rules.
func stamp(at time.Time) fsm.Stamp {
	return fsm.Stamp{Time: at.UnixMilli(), Caller: fsm.AdminPrincipal, Rules: fsm.CurrentRules}
}

// result applies one command and returns its result, failing the test
// when it cannot be applied at all.
func (m *machine) result(cmd fsm.Command) fsm.Result {
	m.t.Helper()
	b, err := fsm.Encode(cmd)
	if err != nil {
		m.t.Fatalf("encode %T: %v", cmd, err)
	}
	res, err := m.m.Apply(m.next, b)
	m.next++
	if err != nil {
		m.t.Fatalf("apply %T: %v", cmd, err)
	}
	return res
}

// apply applies commands in order, each of which must succeed, and
// returns the state after them.
func (m *machine) apply(cmds ...fsm.Command) *fsm.State {
	m.t.Helper()
	for _, cmd := range cmds {
		if res := m.result(cmd); res.Err != nil {
			m.t.Fatalf("%T: %v: %s", cmd, res.Err.Code, res.Err.Message)
		}
	}
	return m.m.State()
}

func (m *machine) state() *fsm.State { return m.m.State() }

func user(name string) *fsm.CreatePrincipal {
	return &fsm.CreatePrincipal{Stamp: stamp(t0), Principal: fsm.Principal{Name: name, Type: fsm.PrincipalUser}}
}

func service(name, clientID, secret string) *fsm.CreatePrincipal {
	h := HashSecret(secret)
	return &fsm.CreatePrincipal{Stamp: stamp(t0), Principal: fsm.Principal{Name: name, Type: fsm.PrincipalService,
		ClientID: clientID, Secret: &h}}
}

// signingKey is the command setting a signing key at the time given.
func signingKey(at time.Time, grace time.Duration) *fsm.SetAuthSigningKey {
	c := NewSigningKey(grace, false)
	c.Stamp = stamp(at)
	return c
}

// mustNew builds an Authenticator or fails the test.
func mustNew(t testing.TB, cfg Config) *Authenticator {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return a
}

// signJWT signs claims with key under alg, with kid in the header when
// not empty.
func signJWT(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatalf("signer %s: %v", alg, err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	raw, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// unsignedJWT is a JWT with header {"alg":"none"} (plus the header fields
// given) and no signature.
func unsignedJWT(t testing.TB, header map[string]any, claims any) string {
	t.Helper()
	h := map[string]any{"alg": "none", "typ": "JWT"}
	for k, v := range header {
		h[k] = v
	}
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc(hb) + "." + enc(cb) + "."
}

// unix is the NumericDate of a time, for hand-made claims.
func unix(at time.Time) int64 { return at.Unix() }

var ctx = context.Background()

// checkIdentity compares an authentication's outcome with the one wanted:
// the identity when wantErr is nil, else an error that is wantErr.
func checkIdentity(t *testing.T, got Identity, err error, want Identity, wantErr error) {
	t.Helper()
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("err = %v, want %v (identity %+v)", err, wantErr, got)
		}
		if got != (Identity{}) {
			t.Fatalf("refused, yet identity %+v", got)
		}
		return
	}
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if got != want {
		t.Fatalf("identity = %+v, want %+v", got, want)
	}
}

func checkErr(t *testing.T, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func TestNewToken(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ttl     time.Duration
		expires int64
	}{
		{"no ttl never expires", 0, 0},
		{"negative ttl never expires", -time.Hour, 0},
		{"one hour", time.Hour, t0.Add(time.Hour).UnixMilli()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, k := NewToken("alice", tc.ttl, t0)
			id, secret, ok := splitToken(text)
			if !ok || !strings.HasPrefix(text, TokenPrefix) || id != k.ID || secret == "" {
				t.Fatalf("token %q does not split into id %q and a secret", text, k.ID)
			}
			if strings.ContainsAny(id+secret, ".+/=") {
				t.Fatalf("token %q holds characters outside URL-safe base64", text)
			}
			if k.Principal != "alice" || k.ExpiresAt != tc.expires {
				t.Fatalf("record = %+v, want principal alice expiring at %d", k, tc.expires)
			}
			if !Matches(k.Secret, secret) {
				t.Fatal("the secret does not match its own hash")
			}
			if Matches(k.Secret, text) || Matches(k.Secret, id) {
				t.Fatal("the hash matches more than the secret")
			}
			if strings.Contains(k.Secret.Hash, secret) || strings.Contains(k.Secret.Salt, secret) {
				t.Fatal("the record holds the secret")
			}
		})
	}
	a, ka := NewToken("alice", 0, t0)
	b, kb := NewToken("alice", 0, t0)
	if a == b || ka.ID == kb.ID {
		t.Fatalf("two tokens are alike: %q %q", a, b)
	}
}

func TestHashSecret(t *testing.T) {
	h1, h2 := HashSecret("s3cret"), HashSecret("s3cret")
	if h1.Salt == h2.Salt || h1.Hash == h2.Hash {
		t.Fatalf("two hashes of one secret share a salt or a hash: %+v %+v", h1, h2)
	}
	if len(h1.Salt) != 32 || len(h1.Hash) != 64 {
		t.Fatalf("salt %q and hash %q are not 16 and 32 bytes of hex", h1.Salt, h1.Hash)
	}
	flip := func(s string) string {
		last := s[len(s)-1]
		if last == '0' {
			return s[:len(s)-1] + "1"
		}
		return s[:len(s)-1] + "0"
	}
	for _, tc := range []struct {
		name   string
		h      fsm.SecretHash
		secret string
		want   bool
	}{
		{"first hash", h1, "s3cret", true},
		{"second hash", h2, "s3cret", true},
		{"wrong secret", h1, "s3cret!", false},
		{"prefix of the secret", h1, "s3cre", false},
		{"empty secret", h1, "", false},
		{"tampered hash", fsm.SecretHash{Salt: h1.Salt, Hash: flip(h1.Hash)}, "s3cret", false},
		{"tampered salt", fsm.SecretHash{Salt: flip(h1.Salt), Hash: h1.Hash}, "s3cret", false},
		{"another hash's salt", fsm.SecretHash{Salt: h2.Salt, Hash: h1.Hash}, "s3cret", false},
		{"upper-case hash", fsm.SecretHash{Salt: h1.Salt, Hash: strings.ToUpper(h1.Hash)}, "s3cret", strings.ToUpper(h1.Hash) == h1.Hash},
		{"truncated hash", fsm.SecretHash{Salt: h1.Salt, Hash: h1.Hash[:63]}, "s3cret", false},
		{"empty hash", fsm.SecretHash{Salt: h1.Salt}, "s3cret", false},
		{"salt not hex", fsm.SecretHash{Salt: "zz" + h1.Salt[2:], Hash: h1.Hash}, "s3cret", false},
		{"zero value", fsm.SecretHash{}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches(tc.h, tc.secret); got != tc.want {
				t.Fatalf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAPITokens(t *testing.T) {
	m := newMachine(t)
	aliceText, aliceTok := NewToken("alice", time.Hour, t0)
	bobText, bobTok := NewToken("bob", 0, t0)
	st := m.apply(user("alice"), user("bob"),
		&fsm.CreateAuthToken{Stamp: stamp(t0), Token: aliceTok}, &fsm.CreateAuthToken{Stamp: stamp(t0), Token: bobTok})
	_, bobSecret, _ := splitToken(bobText)
	alice := Identity{Principal: "alice", Kind: KindToken, ID: aliceTok.ID, Expires: aliceTok.ExpiresAt}
	bob := Identity{Principal: "bob", Kind: KindToken, ID: bobTok.ID}
	a := mustNew(t, Config{Mode: ModeToken})
	for _, tc := range []struct {
		name string
		cred string
		at   time.Time
		want Identity
		err  error
	}{
		{"alice", aliceText, t0.Add(time.Minute), alice, nil},
		{"alice just before expiry", aliceText, t0.Add(time.Hour - time.Millisecond), alice, nil},
		{"alice at expiry", aliceText, t0.Add(time.Hour), Identity{}, errExpired},
		{"alice a day on", aliceText, t0.Add(24 * time.Hour), Identity{}, errExpired},
		{"bob never expires", bobText, t0.Add(10 * 365 * 24 * time.Hour), bob, nil},
		{"wrong secret", TokenPrefix + aliceTok.ID + "." + NewSecret(32), t0, Identity{}, errInvalid},
		{"bob's secret under alice's id", TokenPrefix + aliceTok.ID + "." + bobSecret, t0, Identity{}, errInvalid},
		{"unknown id", TokenPrefix + "nope." + bobSecret, t0, Identity{}, errInvalid},
		{"no secret", TokenPrefix + aliceTok.ID + ".", t0, Identity{}, errInvalid},
		{"no dot", TokenPrefix + aliceTok.ID, t0, Identity{}, errInvalid},
		{"secret with a character more", aliceText + "x", t0, Identity{}, errInvalid},
		{"secret with a character less", aliceText[:len(aliceText)-1], t0, Identity{}, errInvalid},
		{"without the prefix", strings.TrimPrefix(aliceText, TokenPrefix), t0, Identity{}, errInvalid},
		{"the secret alone", bobSecret, t0, Identity{}, errInvalid},
		{"prefix only", TokenPrefix, t0, Identity{}, errInvalid},
		{"empty", "", t0, Identity{}, errInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.Authenticate(ctx, st, tc.cred, tc.at)
			checkIdentity(t, got, err, tc.want, tc.err)
		})
	}

	revoked := m.apply(&fsm.RevokeAuthToken{Stamp: stamp(t0.Add(2 * time.Minute)), ID: aliceTok.ID})
	deleted := m.apply(&fsm.DeletePrincipal{Stamp: stamp(t0.Add(3 * time.Minute)), Name: "bob"})
	if _, err := a.Authenticate(ctx, revoked, aliceText, t0.Add(2*time.Minute)); !errors.Is(err, errInvalid) {
		t.Fatalf("a revoked token authenticates: %v", err)
	}
	if _, err := a.Authenticate(ctx, deleted, bobText, t0.Add(3*time.Minute)); !errors.Is(err, errInvalid) {
		t.Fatalf("the token of a deleted principal authenticates: %v", err)
	}
	for _, tc := range []struct {
		name string
		st   *fsm.State
		id   Identity
		at   time.Time
		err  error
	}{
		{"alice before revocation", st, alice, t0.Add(2 * time.Minute), nil},
		{"alice after RevokeAuthToken", revoked, alice, t0.Add(2 * time.Minute), ErrRevoked},
		{"alice at expiry", st, alice, t0.Add(time.Hour), errExpired},
		{"bob after alice's revocation", revoked, bob, t0.Add(3 * time.Minute), nil},
		{"bob after DeletePrincipal", deleted, bob, t0.Add(3 * time.Minute), ErrRevoked},
		{"alice's token claimed for another principal", st, Identity{Principal: "mallory", Kind: KindToken, ID: aliceTok.ID}, t0, ErrRevoked},
		{"unknown token id", st, Identity{Principal: "alice", Kind: KindToken, ID: "nope"}, t0, ErrRevoked},
		{"an expiry set in the identity", st, Identity{Principal: "bob", Kind: KindToken, ID: bobTok.ID, Expires: t0.UnixMilli()}, t0, errExpired},
	} {
		t.Run("Still/"+tc.name, func(t *testing.T) { checkErr(t, Still(tc.st, tc.id, tc.at), tc.err) })
	}
}

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errExpired, "expired"},
		{fmt.Errorf("%w: its signing key was retired", errExpired), "expired"},
		{ErrRevoked, "revoked"},
		{fmt.Errorf("wrapped: %w", ErrRevoked), "revoked"},
		{errInvalid, "invalid"},
		{errors.New("something else"), "invalid"},
		{nil, "invalid"},
	} {
		if got := Reason(tc.err); got != tc.want {
			t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := testIdP(t).jwksFile(t)
	oct, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "hmac"}}})
	for _, tc := range []struct {
		name     string
		cfg      Config
		mode     Mode
		required bool
		ttl      time.Duration
		err      string
	}{
		{"default mode", Config{}, ModeNone, false, time.Hour, ""},
		{"none", Config{Mode: ModeNone}, ModeNone, false, time.Hour, ""},
		{"token", Config{Mode: ModeToken, AccessTokenTTL: 5 * time.Minute}, ModeToken, true, 5 * time.Minute, ""},
		{"negative ttl", Config{Mode: ModeToken, AccessTokenTTL: -time.Minute}, ModeToken, true, time.Hour, ""},
		{"unknown mode", Config{Mode: "basic"}, "", false, 0, "unknown auth mode"},
		{"OIDC", Config{OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSFile: good}}, ModeNone, false, time.Hour, ""},
		{"OIDC by URL", Config{OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSURL: "http://127.0.0.1:1/jwks"}}, ModeNone, false, time.Hour, ""},
		{"OIDC without issuer", Config{OIDC: &OIDC{Audience: idpAudience, JWKSFile: good}}, "", false, 0, "issuer and an audience"},
		{"OIDC without audience", Config{OIDC: &OIDC{Issuer: idpIssuer, JWKSFile: good}}, "", false, 0, "issuer and an audience"},
		{"OIDC without keys", Config{OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience}}, "", false, 0, "JWKS file or URL"},
		{"missing JWKS file", Config{OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSFile: filepath.Join(dir, "nope")}}, "", false, 0, "read OIDC JWKS file"},
		{"JWKS file not JSON", Config{OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSFile: write("bad.json", "{keys")}}, "", false, 0, "OIDC JWKS file"},
		{"empty JWKS", Config{OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSFile: write("empty.json", `{"keys":[]}`)}}, "", false, 0, "holds no key"},
		{"JWKS of a symmetric key only", Config{OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSFile: write("oct.json", string(oct))}}, "", false, 0, "holds no key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(tc.cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Mode() != tc.mode || a.Required() != tc.required || a.AccessTokenTTL() != tc.ttl {
				t.Fatalf("mode %q required %v ttl %v, want %q %v %v", a.Mode(), a.Required(), a.AccessTokenTTL(), tc.mode, tc.required, tc.ttl)
			}
		})
	}
}

const adminToken = "operator-admin-token-0123456789"

func TestBootstrapAdminToken(t *testing.T) {
	m := newMachine(t)
	before := m.apply(user("alice"))
	const otherToken = "another-operator-token-0123456"
	a := mustNew(t, Config{Mode: ModeToken, AdminToken: adminToken})
	other := mustNew(t, Config{Mode: ModeToken, AdminToken: otherToken})
	unset := mustNew(t, Config{Mode: ModeToken})
	boot := BootstrapAdmin(adminToken)
	boot.Stamp = stamp(t0)
	after := m.apply(boot)
	again := BootstrapAdmin(otherToken)
	again.Stamp = stamp(t0.Add(time.Second))
	if res := m.result(again); res.Err != nil || !res.NoOp {
		t.Fatalf("a second bootstrap = %+v, want a NoOp", res)
	}
	if before.HasAdmin() || !after.HasAdmin() || m.state().HasAdmin() != true {
		t.Fatal("HasAdmin does not follow the bootstrap")
	}
	if k, ok := after.AuthToken(OpaqueTokenID); !ok || k.Principal != fsm.AdminPrincipal || Matches(k.Secret, otherToken) {
		t.Fatalf("bootstrap token = %+v, %v", k, ok)
	}
	bootID := Identity{Principal: fsm.AdminPrincipal, Kind: KindBootstrap}
	tokenID := Identity{Principal: fsm.AdminPrincipal, Kind: KindToken, ID: OpaqueTokenID}
	for _, tc := range []struct {
		name string
		a    *Authenticator
		st   *fsm.State
		cred string
		want Identity
		err  error
	}{
		{"admin token before the admin exists", a, before, adminToken, bootID, nil},
		{"another node's admin token before the admin exists", other, before, otherToken, bootID, nil},
		{"no admin token configured", unset, before, adminToken, Identity{}, errInvalid},
		{"wrong token before the admin exists", a, before, adminToken + "x", Identity{}, errInvalid},
		{"prefix of the admin token", a, before, adminToken[:16], Identity{}, errInvalid},
		{"empty credential", a, before, "", Identity{}, errInvalid},
		{"admin token once the admin exists", a, after, adminToken, tokenID, nil},
		{"admin token without the file once the admin exists", unset, after, adminToken, tokenID, nil},
		{"another admin token once the admin exists", other, after, otherToken, Identity{}, errInvalid},
		{"wrong token once the admin exists", a, after, "x" + adminToken, Identity{}, errInvalid},
		{"admin token under the opaque id", a, after, TokenPrefix + OpaqueTokenID + "." + adminToken, Identity{}, errInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.a.Authenticate(ctx, tc.st, tc.cred, t0)
			checkIdentity(t, got, err, tc.want, tc.err)
		})
	}
	for _, tc := range []struct {
		name string
		st   *fsm.State
		id   Identity
		err  error
	}{
		{"bootstrap identity before the admin exists", before, bootID, nil},
		{"bootstrap identity once the admin exists", after, bootID, ErrRevoked},
		{"admin's token once the admin exists", after, tokenID, nil},
	} {
		t.Run("Still/"+tc.name, func(t *testing.T) { checkErr(t, Still(tc.st, tc.id, t0), tc.err) })
	}
}

// An admin token is the operator's own text: one that looks like an API
// token or a JWT still works as the admin token.
func TestAdminTokenShapedLikeAnotherCredential(t *testing.T) {
	idp := testIdP(t)
	withOIDC := &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSFile: idp.jwksFile(t)}
	for _, token := range []string{"rct_operator-chosen.admin-token", "operator.chosen.admin-token", "rct_operator.chosen.admin-token"} {
		for _, o := range []*OIDC{nil, withOIDC} {
			t.Run(fmt.Sprintf("%s/oidc=%v", token, o != nil), func(t *testing.T) {
				m := newMachine(t)
				a := mustNew(t, Config{Mode: ModeToken, AdminToken: token, OIDC: o})
				got, err := a.Authenticate(ctx, m.state(), token, t0)
				checkIdentity(t, got, err, Identity{Principal: fsm.AdminPrincipal, Kind: KindBootstrap}, nil)
				boot := BootstrapAdmin(token)
				boot.Stamp = stamp(t0)
				st := m.apply(boot)
				got, err = a.Authenticate(ctx, st, token, t0)
				checkIdentity(t, got, err, Identity{Principal: fsm.AdminPrincipal, Kind: KindToken, ID: OpaqueTokenID}, nil)
				_, err = a.Authenticate(ctx, st, token+"x", t0)
				checkErr(t, err, errInvalid)
			})
		}
	}
}

// accessClaimsAt are the claims IssueAccessToken writes for etl at t0,
// changed by mod.
func accessClaimsAt(mod func(map[string]any)) map[string]any {
	c := map[string]any{"iss": Issuer, "sub": "etl", "aud": []string{Issuer}, "iat": unix(t0),
		"nbf": unix(t0.Add(-time.Minute)), "exp": unix(t0.Add(time.Hour)), "jti": "x"}
	if mod != nil {
		mod(c)
	}
	return c
}

func TestAccessTokens(t *testing.T) {
	m := newMachine(t)
	noKey := m.apply(service("etl", "client-1", "client-secret"), user("alice"))
	if tok, err := IssueAccessToken(noKey, "etl", "", time.Hour, t0); err == nil {
		t.Fatalf("issued %q without a signing key", tok)
	}
	st := m.apply(signingKey(t0, 0))
	k1 := st.AuthSigningKeys()[0]
	secret, err := k1.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := IssueAccessToken(st, "etl", "catalog", time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	if iss, ok := unverifiedIssuer(tok); !ok || iss != Issuer {
		t.Fatalf("issuer of an issued token = %q, %v", iss, ok)
	}
	etl := Identity{Principal: "etl", Kind: KindOAuth, ID: k1.ID, Expires: t0.Add(time.Hour).UnixMilli()}
	hs := func(key []byte, kid string, mod func(map[string]any)) string {
		return signJWT(t, jose.HS256, key, kid, accessClaimsAt(mod))
	}
	parts := strings.Split(tok, ".")
	forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString(mustJSON(t, accessClaimsAt(func(c map[string]any) { c["sub"] = "alice" }))) + "." + parts[2]
	a := mustNew(t, Config{Mode: ModeToken})
	for _, tc := range []struct {
		name string
		cred string
		at   time.Time
		want Identity
		err  error
	}{
		{"issued", tok, t0, etl, nil},
		{"a minute on", tok, t0.Add(time.Minute), etl, nil},
		{"just before expiry", tok, t0.Add(time.Hour - time.Millisecond), etl, nil},
		{"at expiry", tok, t0.Add(time.Hour), Identity{}, errExpired},
		{"after expiry", tok, t0.Add(2 * time.Hour), Identity{}, errExpired},
		{"verifier's clock seconds behind the issuer's", tok, t0.Add(-5 * time.Second), etl, nil},
		{"verifier's clock minutes behind the issuer's", tok, t0.Add(-3 * time.Minute), Identity{}, errInvalid},
		{"signed by hand with the key", hs(secret, k1.ID, nil), t0, etl, nil},
		{"unknown kid", hs(secret, "nope", nil), t0, Identity{}, errInvalid},
		{"no kid", hs(secret, "", nil), t0, Identity{}, errInvalid},
		{"iss raftcat signed with another key", hs([]byte(strings.Repeat("k", 32)), k1.ID, nil), t0, Identity{}, errInvalid},
		{"HS384", signJWT(t, jose.HS384, append(slices.Clone(secret), secret...), k1.ID, accessClaimsAt(nil)), t0, Identity{}, errInvalid},
		{"RS256 with iss raftcat", signJWT(t, jose.RS256, testIdP(t).rsa, k1.ID, accessClaimsAt(nil)), t0, Identity{}, errInvalid},
		{"alg none", unsignedJWT(t, map[string]any{"kid": k1.ID}, accessClaimsAt(nil)), t0, Identity{}, errInvalid},
		{"alg none without kid", unsignedJWT(t, nil, accessClaimsAt(nil)), t0, Identity{}, errInvalid},
		{"alg none with the issued signature", strings.Join([]string{base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"` + k1.ID + `"}`)), parts[1], parts[2]}, "."), t0, Identity{}, errInvalid},
		{"payload swapped under the signature", forged, t0, Identity{}, errInvalid},
		{"truncated signature", tok[:len(tok)-3], t0, Identity{}, errInvalid},
		{"wrong audience", hs(secret, k1.ID, func(c map[string]any) { c["aud"] = []string{"other"} }), t0, Identity{}, errInvalid},
		{"no audience", hs(secret, k1.ID, func(c map[string]any) { delete(c, "aud") }), t0, Identity{}, errInvalid},
		{"no expiry", hs(secret, k1.ID, func(c map[string]any) { delete(c, "exp") }), t0, Identity{}, errInvalid},
		{"expired claims", hs(secret, k1.ID, func(c map[string]any) { c["exp"] = unix(t0.Add(-time.Second)) }), t0, Identity{}, errExpired},
		{"not yet valid", hs(secret, k1.ID, func(c map[string]any) { c["nbf"] = unix(t0.Add(10 * time.Minute)) }), t0, Identity{}, errInvalid},
		{"issued in the future", hs(secret, k1.ID, func(c map[string]any) { c["iat"] = unix(t0.Add(10 * time.Minute)) }), t0, Identity{}, errInvalid},
		{"unknown principal", hs(secret, k1.ID, func(c map[string]any) { c["sub"] = "ghost" }), t0, Identity{}, ErrRevoked},
		{"another principal", hs(secret, k1.ID, func(c map[string]any) { c["sub"] = "alice" }), t0,
			Identity{Principal: "alice", Kind: KindOAuth, ID: k1.ID, Expires: etl.Expires}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.Authenticate(ctx, st, tc.cred, tc.at)
			checkIdentity(t, got, err, tc.want, tc.err)
		})
	}

	deleted := m.apply(&fsm.DeletePrincipal{Stamp: stamp(t0.Add(time.Minute)), Name: "etl"})
	_, err = a.Authenticate(ctx, deleted, tok, t0.Add(time.Minute))
	checkErr(t, err, ErrRevoked)
	if Reason(err) != "revoked" {
		t.Fatalf("Reason = %q", Reason(err))
	}
	checkErr(t, Still(st, etl, t0.Add(time.Minute)), nil)
	checkErr(t, Still(deleted, etl, t0.Add(time.Minute)), ErrRevoked)
	checkErr(t, Still(st, Identity{Principal: "etl", Kind: KindOAuth, ID: "nope"}, t0), ErrRevoked)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAccessTokenKeyRotation(t *testing.T) {
	m := newMachine(t)
	first := m.apply(service("etl", "client-1", "client-secret"), signingKey(t0, 0))
	k1 := first.AuthSigningKeys()[0]
	old, err := IssueAccessToken(first, "etl", "", 2*time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	// k1 retires at t0+5m and is refused from t0+15m.
	rotated := m.apply(signingKey(t0.Add(5*time.Minute), 10*time.Minute))
	keys := rotated.AuthSigningKeys()
	if len(keys) != 2 || keys[0].ID != k1.ID {
		t.Fatalf("keys after rotation = %+v", keys)
	}
	k2 := keys[1]
	fresh, err := IssueAccessToken(rotated, "etl", "", 2*time.Hour, t0.Add(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// k1 is dropped; k2 retires at t0+20m and is refused from t0+30m.
	dropped := m.apply(signingKey(t0.Add(20*time.Minute), 10*time.Minute))
	if _, ok := dropped.AuthSigningKey(k1.ID); ok {
		t.Fatal("a key past its grace was kept")
	}
	a := mustNew(t, Config{Mode: ModeToken})
	for _, tc := range []struct {
		name string
		st   *fsm.State
		cred string
		at   time.Time
		kid  string
		err  error
	}{
		{"old token before rotation", first, old, t0.Add(time.Minute), k1.ID, nil},
		{"old token within the grace", rotated, old, t0.Add(6 * time.Minute), k1.ID, nil},
		{"old token at the grace's last moment", rotated, old, t0.Add(15*time.Minute - time.Millisecond), k1.ID, nil},
		{"old token after the grace", rotated, old, t0.Add(15 * time.Minute), "", errExpired},
		{"new token signed with the new key", rotated, fresh, t0.Add(15 * time.Minute), k2.ID, nil},
		{"new token on a state before its key", first, fresh, t0.Add(6 * time.Minute), "", errInvalid},
		{"old token once its key is dropped", dropped, old, t0.Add(21 * time.Minute), "", errInvalid},
		{"new token within its key's grace", dropped, fresh, t0.Add(21 * time.Minute), k2.ID, nil},
		{"new token after its key's grace", dropped, fresh, t0.Add(30 * time.Minute), "", errExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.Authenticate(ctx, tc.st, tc.cred, tc.at)
			checkErr(t, err, tc.err)
			if got.ID != tc.kid || tc.err == nil && (got.Kind != KindOAuth || got.Principal != "etl") {
				t.Fatalf("identity = %+v, want one of etl by key %q", got, tc.kid)
			}
		})
	}
	oldID := Identity{Principal: "etl", Kind: KindOAuth, ID: k1.ID, Expires: t0.Add(2 * time.Hour).UnixMilli()}
	for _, tc := range []struct {
		name string
		st   *fsm.State
		at   time.Time
		err  error
	}{
		{"before rotation", first, t0.Add(time.Minute), nil},
		{"within the grace", rotated, t0.Add(14 * time.Minute), nil},
		{"after the grace", rotated, t0.Add(15 * time.Minute), ErrRevoked},
		{"key dropped", dropped, t0.Add(21 * time.Minute), ErrRevoked},
		{"expired", first, t0.Add(2 * time.Hour), errExpired},
	} {
		t.Run("Still/"+tc.name, func(t *testing.T) { checkErr(t, Still(tc.st, oldID, tc.at), tc.err) })
	}
}

const (
	idpIssuer   = "https://idp.example.com"
	idpAudience = "raftcat-api"
)

// idp is an OIDC issuer's key pairs and its public JWKS.
type idp struct {
	rsa      *rsa.PrivateKey
	ec       *ecdsa.PrivateKey
	otherRSA *rsa.PrivateKey
	otherEC  *ecdsa.PrivateKey
	jwks     jose.JSONWebKeySet
}

var sharedIdP = sync.OnceValues(func() (*idp, error) {
	var (
		i   idp
		err error
	)
	if i.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, err
	}
	if i.otherRSA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, err
	}
	if i.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	if i.otherEC, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	i.jwks = jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &i.rsa.PublicKey, KeyID: "rsa-1", Algorithm: "RS256", Use: "sig"},
		{Key: &i.ec.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"},
	}}
	return &i, nil
})

func testIdP(t testing.TB) *idp {
	t.Helper()
	i, err := sharedIdP()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// jwksFile writes the issuer's JWKS to a file, with the keys given first.
func (i *idp) jwksFile(t testing.TB, first ...jose.JSONWebKey) string {
	t.Helper()
	set := jose.JSONWebKeySet{Keys: append(first, i.jwks.Keys...)}
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, mustJSON(t, set), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// claims are an ID token's claims for alice at t0, changed by mod.
func oidcClaims(mod func(map[string]any)) map[string]any {
	c := map[string]any{"iss": idpIssuer, "sub": "alice", "email": "carol@example.com", "aud": idpAudience,
		"iat": unix(t0), "exp": unix(t0.Add(time.Hour))}
	if mod != nil {
		mod(c)
	}
	return c
}

func TestOIDC(t *testing.T) {
	idp := testIdP(t)
	st := newMachine(t).state()
	file := idp.jwksFile(t)
	bySub := mustNew(t, Config{Mode: ModeToken, OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSFile: file}})
	byEmail := mustNew(t, Config{Mode: ModeToken, OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSFile: file, PrincipalClaim: "email"}})
	der, err := x509.MarshalPKIXPublicKey(&idp.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	rs := func(mod func(map[string]any)) string {
		return signJWT(t, jose.RS256, idp.rsa, "rsa-1", oidcClaims(mod))
	}
	expires := t0.Add(time.Hour).UnixMilli()
	alice := Identity{Principal: "alice", Kind: KindOIDC, Expires: expires}
	now := t0.Add(time.Minute)
	for _, tc := range []struct {
		name string
		a    *Authenticator
		cred string
		want Identity
		err  error
	}{
		{"RS256", bySub, rs(nil), alice, nil},
		{"ES256", bySub, signJWT(t, jose.ES256, idp.ec, "ec-1", oidcClaims(nil)), alice, nil},
		{"PS256 with the RSA key", bySub, signJWT(t, jose.PS256, idp.rsa, "rsa-1", oidcClaims(nil)), alice, nil},
		{"RS256 without kid", bySub, signJWT(t, jose.RS256, idp.rsa, "", oidcClaims(nil)), alice, nil},
		{"audience among several", bySub, rs(func(c map[string]any) { c["aud"] = []string{"other", idpAudience} }), alice, nil},
		{"not yet valid within the leeway", bySub, rs(func(c map[string]any) { c["nbf"] = unix(now.Add(time.Minute)) }), alice, nil},
		{"wrong issuer", bySub, rs(func(c map[string]any) { c["iss"] = "https://evil.example.com" }), Identity{}, errInvalid},
		{"no issuer", bySub, rs(func(c map[string]any) { delete(c, "iss") }), Identity{}, errInvalid},
		{"issuer raftcat", bySub, rs(func(c map[string]any) { c["iss"] = Issuer }), Identity{}, errInvalid},
		{"wrong audience", bySub, rs(func(c map[string]any) { c["aud"] = "other" }), Identity{}, errInvalid},
		{"no audience", bySub, rs(func(c map[string]any) { delete(c, "aud") }), Identity{}, errInvalid},
		{"expired", bySub, rs(func(c map[string]any) { c["exp"] = unix(t0) }), Identity{}, errExpired},
		{"no expiry", bySub, rs(func(c map[string]any) { delete(c, "exp") }), Identity{}, errExpired},
		{"not yet valid", bySub, rs(func(c map[string]any) { c["nbf"] = unix(now.Add(time.Hour)) }), Identity{}, errInvalid},
		{"unknown RSA key", bySub, signJWT(t, jose.RS256, idp.otherRSA, "rsa-1", oidcClaims(nil)), Identity{}, errInvalid},
		{"unknown RSA key without kid", bySub, signJWT(t, jose.RS256, idp.otherRSA, "", oidcClaims(nil)), Identity{}, errInvalid},
		{"unknown EC key", bySub, signJWT(t, jose.ES256, idp.otherEC, "ec-1", oidcClaims(nil)), Identity{}, errInvalid},
		{"alg none", bySub, unsignedJWT(t, map[string]any{"kid": "rsa-1"}, oidcClaims(nil)), Identity{}, errInvalid},
		{"HS256 with the public key's DER", bySub, signJWT(t, jose.HS256, der, "rsa-1", oidcClaims(nil)), Identity{}, errInvalid},
		{"HS256 with the public key's PEM", bySub, signJWT(t, jose.HS256, pemKey, "rsa-1", oidcClaims(nil)), Identity{}, errInvalid},
		{"HS256 with the JWKS document", bySub, signJWT(t, jose.HS256, mustJSON(t, idp.jwks), "", oidcClaims(nil)), Identity{}, errInvalid},
		{"payload swapped under the signature", bySub, swapPayload(t, rs(nil), oidcClaims(func(c map[string]any) { c["sub"] = "admin" })), Identity{}, errInvalid},
		{"no subject", bySub, rs(func(c map[string]any) { delete(c, "sub") }), Identity{}, errInvalid},
		{"empty subject", bySub, rs(func(c map[string]any) { c["sub"] = "" }), Identity{}, errInvalid},
		{"subject with a slash", bySub, rs(func(c map[string]any) { c["sub"] = "a/b" }), Identity{}, errInvalid},
		{"subject too long", bySub, rs(func(c map[string]any) { c["sub"] = strings.Repeat("s", 256) }), Identity{}, errInvalid},
		{"email claim names the principal", byEmail, rs(nil), Identity{Principal: "carol@example.com", Kind: KindOIDC, Expires: expires}, nil},
		{"email claim missing", byEmail, rs(func(c map[string]any) { delete(c, "email") }), Identity{}, errInvalid},
		{"email claim not a string", byEmail, rs(func(c map[string]any) { c["email"] = 42 }), Identity{}, errInvalid},
		{"email claim missing, sub present", byEmail, rs(func(c map[string]any) { delete(c, "email"); c["sub"] = "carol" }), Identity{}, errInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.a.Authenticate(ctx, st, tc.cred, now)
			checkIdentity(t, got, err, tc.want, tc.err)
		})
	}
	// Without OIDC configured a JWT of the issuer is no credential.
	_, err = mustNew(t, Config{Mode: ModeToken}).Authenticate(ctx, st, rs(nil), now)
	checkErr(t, err, errInvalid)
	// Expiry is judged at the time given, not the wall clock.
	_, err = bySub.Authenticate(ctx, st, rs(nil), t0.Add(time.Hour+time.Second))
	checkErr(t, err, errExpired)
	checkErr(t, Still(st, alice, t0.Add(time.Hour-time.Millisecond)), nil)
	checkErr(t, Still(st, alice, t0.Add(time.Hour)), errExpired)
}

// swapPayload puts claims under raw's header and signature.
func swapPayload(t testing.TB, raw string, claims any) string {
	parts := strings.Split(raw, ".")
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(mustJSON(t, claims)) + "." + parts[2]
}

func TestOIDCKeyFiles(t *testing.T) {
	idp := testIdP(t)
	st := newMachine(t).state()
	now := t0.Add(time.Minute)
	for _, tc := range []struct {
		name string
		file string
	}{
		{"public keys", idp.jwksFile(t)},
		{"symmetric key first", idp.jwksFile(t, jose.JSONWebKey{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "hmac", Algorithm: "HS256"})},
		{"private RSA key", idp.jwksFile(t, jose.JSONWebKey{Key: idp.rsa, KeyID: "rsa-private", Algorithm: "RS256"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, Config{Mode: ModeToken, OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSFile: tc.file}})
			for _, cred := range []string{
				signJWT(t, jose.RS256, idp.rsa, "rsa-1", oidcClaims(nil)),
				signJWT(t, jose.ES256, idp.ec, "ec-1", oidcClaims(nil)),
			} {
				got, err := a.Authenticate(ctx, st, cred, now)
				checkIdentity(t, got, err, Identity{Principal: "alice", Kind: KindOIDC, Expires: t0.Add(time.Hour).UnixMilli()}, nil)
			}
			_, err := a.Authenticate(ctx, st, signJWT(t, jose.RS256, idp.otherRSA, "rsa-1", oidcClaims(nil)), now)
			checkErr(t, err, errInvalid)
		})
	}
}

func TestOIDCKeysByURL(t *testing.T) {
	idp := testIdP(t)
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(mustJSON(t, idp.jwks))
	}))
	defer srv.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer down.Close()
	st := newMachine(t).state()
	now := t0.Add(time.Minute)
	a := mustNew(t, Config{Mode: ModeToken, OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSURL: srv.URL + "/jwks"}})
	broken := mustNew(t, Config{Mode: ModeToken, OIDC: &OIDC{Issuer: idpIssuer, Audience: idpAudience, JWKSURL: down.URL + "/jwks"}})
	alice := Identity{Principal: "alice", Kind: KindOIDC, Expires: t0.Add(time.Hour).UnixMilli()}
	for _, tc := range []struct {
		name string
		a    *Authenticator
		cred string
		want Identity
		err  error
	}{
		{"RS256", a, signJWT(t, jose.RS256, idp.rsa, "rsa-1", oidcClaims(nil)), alice, nil},
		{"ES256", a, signJWT(t, jose.ES256, idp.ec, "ec-1", oidcClaims(nil)), alice, nil},
		{"unknown key", a, signJWT(t, jose.RS256, idp.otherRSA, "rsa-1", oidcClaims(nil)), Identity{}, errInvalid},
		{"unknown kid", a, signJWT(t, jose.RS256, idp.otherRSA, "rsa-2", oidcClaims(nil)), Identity{}, errInvalid},
		{"wrong audience", a, signJWT(t, jose.RS256, idp.rsa, "rsa-1", oidcClaims(func(c map[string]any) { c["aud"] = "x" })), Identity{}, errInvalid},
		{"expired", a, signJWT(t, jose.RS256, idp.rsa, "rsa-1", oidcClaims(func(c map[string]any) { c["exp"] = unix(t0) })), Identity{}, errExpired},
		{"alg none", a, unsignedJWT(t, map[string]any{"kid": "rsa-1"}, oidcClaims(nil)), Identity{}, errInvalid},
		{"keys unavailable", broken, signJWT(t, jose.RS256, idp.rsa, "rsa-1", oidcClaims(nil)), Identity{}, errInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.a.Authenticate(ctx, st, tc.cred, now)
			checkIdentity(t, got, err, tc.want, tc.err)
		})
	}
	if fetches.Load() == 0 {
		t.Fatal("the JWKS URL was never fetched")
	}
}

func TestPeerSignatures(t *testing.T) {
	p := NewPeer([]byte("cluster-key-0123456789"))
	base := Signed{Node: "node-1", Method: http.MethodPost, URI: "/api/2.1/unity-catalog/tables?x=1",
		Identity: &Identity{Principal: "alice", Kind: KindToken, ID: "tok-1", Expires: 123}, Client: "10.0.0.7"}
	sig := p.Sign(base, t0)
	if err := p.Verify(base, sig, t0); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	// What the receiving node sees: the envelope header parsed back.
	var parsed Signed
	if err := parsed.ParseEnvelope(base.Envelope()); err != nil {
		t.Fatal(err)
	}
	parsed.Node, parsed.Method, parsed.URI = base.Node, base.Method, base.URI
	if *parsed.Identity != *base.Identity || parsed.Client != base.Client {
		t.Fatalf("envelope round trip = %+v", parsed)
	}
	if err := p.Verify(parsed, sig, t0); err != nil {
		t.Fatalf("verify after the envelope round trip: %v", err)
	}
	change := func(f func(s *Signed)) Signed {
		s := base
		id := *base.Identity
		s.Identity = &id
		f(&s)
		return s
	}
	restamp := func(ts string) string { _, mac, _ := strings.Cut(sig, "."); return ts + "." + mac }
	for _, tc := range []struct {
		name string
		p    *Peer
		s    Signed
		sig  string
		at   time.Time
		ok   bool
	}{
		{"same", p, base, sig, t0, true},
		{"at the skew ahead", p, base, sig, t0.Add(PeerSkew), true},
		{"at the skew behind", p, base, sig, t0.Add(-PeerSkew), true},
		{"beyond the skew ahead", p, base, sig, t0.Add(PeerSkew + time.Second), false},
		{"beyond the skew behind", p, base, sig, t0.Add(-PeerSkew - time.Second), false},
		{"an hour later", p, base, sig, t0.Add(time.Hour), false},
		{"node", p, change(func(s *Signed) { s.Node = "node-2" }), sig, t0, false},
		{"method", p, change(func(s *Signed) { s.Method = http.MethodDelete }), sig, t0, false},
		{"URI path", p, change(func(s *Signed) { s.URI = "/api/2.1/unity-catalog/catalogs" }), sig, t0, false},
		{"URI query", p, change(func(s *Signed) { s.URI += "&y=2" }), sig, t0, false},
		{"identity principal", p, change(func(s *Signed) { s.Identity.Principal = "admin" }), sig, t0, false},
		{"identity kind", p, change(func(s *Signed) { s.Identity.Kind = KindPeer }), sig, t0, false},
		{"identity id", p, change(func(s *Signed) { s.Identity.ID = "tok-2" }), sig, t0, false},
		{"identity expiry", p, change(func(s *Signed) { s.Identity.Expires = 0 }), sig, t0, false},
		{"anonymous", p, change(func(s *Signed) { s.Identity = nil }), sig, t0, false},
		{"client", p, change(func(s *Signed) { s.Client = "10.0.0.8" }), sig, t0, false},
		{"fields shifted", p, change(func(s *Signed) { s.Node, s.Method = "node-1P", "OST" }), sig, t0, false},
		{"time changed", p, base, restamp(strconv.FormatInt(t0.Unix()+1, 10)), t0, false},
		{"time with a plus sign", p, base, restamp("+" + strconv.FormatInt(t0.Unix(), 10)), t0, false},
		{"no time", p, base, restamp(""), t0, false},
		{"no mac", p, base, strconv.FormatInt(t0.Unix(), 10) + ".", t0, false},
		{"no dot", p, base, strconv.FormatInt(t0.Unix(), 10), t0, false},
		{"mac not base64", p, base, restamp(strconv.FormatInt(t0.Unix(), 10)) + "!", t0, false},
		{"empty", p, base, "", t0, false},
		{"another key", NewPeer([]byte("cluster-key-9876543210")), base, sig, t0, false},
		{"nil peer", nil, base, sig, t0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Verify(tc.s, tc.sig, tc.at)
			if (err == nil) != tc.ok {
				t.Fatalf("Verify = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestPeerKeys(t *testing.T) {
	if NewPeer(nil) != nil || NewPeer([]byte{}) != nil {
		t.Fatal("an empty key makes a signer")
	}
	var none *Peer
	if sig := none.Sign(Signed{Node: "n"}, t0); sig != "" {
		t.Fatalf("a nil *Peer signed: %q", sig)
	}
	k1, k1again, k2 := DeriveClusterKey(adminToken), DeriveClusterKey(adminToken), DeriveClusterKey(adminToken+"x")
	if !bytes.Equal(k1, k1again) || bytes.Equal(k1, k2) || len(k1) != 32 {
		t.Fatal("DeriveClusterKey is not a deterministic 32-byte function of the token")
	}
	if bytes.Contains(k1, []byte(adminToken)) {
		t.Fatal("the derived key holds the token")
	}
	s := Signed{Node: "n1", Method: "GET", URI: "/x"}
	sig := NewPeer(k1).Sign(s, t0)
	if err := NewPeer(k1again).Verify(s, sig, t0); err != nil {
		t.Fatalf("nodes with the same admin token disagree: %v", err)
	}
	if err := NewPeer(k2).Verify(s, sig, t0); err == nil {
		t.Fatal("a node with another admin token verified")
	}
}

func TestEnvelope(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    string
		want Signed
		ok   bool
	}{
		{"empty", "", Signed{}, true},
		{"anonymous", Signed{Client: "1.2.3.4"}.Envelope(), Signed{Client: "1.2.3.4"}, true},
		{"identity", Signed{Identity: &Identity{Principal: "p", Kind: KindOIDC}}.Envelope(), Signed{Identity: &Identity{Principal: "p", Kind: KindOIDC}}, true},
		{"not base64", "!!", Signed{}, false},
		{"not JSON", base64.RawURLEncoding.EncodeToString([]byte("{")), Signed{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Signed
			err := s.ParseEnvelope(tc.v)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseEnvelope = %v, want ok %v", err, tc.ok)
			}
			if s.Client != tc.want.Client || (s.Identity == nil) != (tc.want.Identity == nil) ||
				s.Identity != nil && *s.Identity != *tc.want.Identity {
				t.Fatalf("parsed %+v, want %+v", s, tc.want)
			}
		})
	}
}

func TestFailureLimiter(t *testing.T) {
	type step struct {
		fail    bool // spend an attempt, else ask whether blocked
		addr    string
		at      time.Duration // after t0
		blocked bool
		wait    time.Duration
	}
	for _, tc := range []struct {
		name      string
		perSecond float64
		burst     int
		steps     []step
	}{
		{"burst then blocked, back at the rate", 0.5, 3, []step{
			{addr: "a", blocked: false},
			{fail: true, addr: "a"}, {fail: true, addr: "a"},
			{addr: "a", blocked: false},
			{fail: true, addr: "a"},
			{addr: "a", blocked: true, wait: 2 * time.Second},
			{addr: "b", blocked: false},
			{addr: "a", at: time.Second, blocked: true, wait: time.Second},
			{addr: "a", at: 2*time.Second - time.Millisecond, blocked: true, wait: time.Second},
			{addr: "a", at: 2 * time.Second, blocked: false},
			{fail: true, addr: "a", at: 2 * time.Second},
			{addr: "a", at: 2 * time.Second, blocked: true, wait: 2 * time.Second},
			{addr: "a", at: 8 * time.Second, blocked: false},
		}},
		{"a slow rate waits long", 1.0 / 60, 1, []step{
			{fail: true, addr: "a"},
			{addr: "a", blocked: true, wait: time.Minute},
			{addr: "a", at: 30 * time.Second, blocked: true, wait: 30 * time.Second},
			{addr: "a", at: time.Minute, blocked: false},
		}},
		{"the wait is at least a second", 10, 2, []step{
			{fail: true, addr: "a"}, {fail: true, addr: "a"},
			{addr: "a", blocked: true, wait: time.Second},
			{addr: "a", at: 100 * time.Millisecond, blocked: false},
		}},
		{"addresses are counted apart", 1, 1, []step{
			{fail: true, addr: "a"},
			{addr: "a", blocked: true, wait: time.Second},
			{addr: "b", blocked: false},
			{fail: true, addr: "b"},
			{addr: "b", blocked: true, wait: time.Second},
			{addr: "a", at: time.Second, blocked: false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFailureLimiter(tc.perSecond, tc.burst)
			for i, s := range tc.steps {
				at := t0.Add(s.at)
				if s.fail {
					f.Failed(s.addr, at)
					continue
				}
				blocked, wait := f.Blocked(s.addr, at)
				if blocked != s.blocked || wait != s.wait {
					t.Fatalf("step %d: Blocked(%s, +%v) = %v, %v; want %v, %v", i, s.addr, s.at, blocked, wait, s.blocked, s.wait)
				}
			}
		})
	}
}

func TestFailureLimiterForgetsRecoveredAddresses(t *testing.T) {
	f := NewFailureLimiter(1, 2)
	for i := range maxAddrs {
		f.Failed(fmt.Sprintf("10.0.%d.%d", i/256, i%256), t0)
	}
	f.Failed("blocked", t0.Add(time.Hour))
	f.Failed("blocked", t0.Add(time.Hour))
	if len(f.addrs) != 1 {
		t.Fatalf("%d addresses remembered, want only the one still failing", len(f.addrs))
	}
	if blocked, _ := f.Blocked("blocked", t0.Add(time.Hour)); !blocked {
		t.Fatal("the address still failing was forgotten")
	}
	// Addresses that have not recovered are kept.
	g := NewFailureLimiter(1, 2)
	for i := range maxAddrs {
		g.Failed(fmt.Sprintf("10.0.%d.%d", i/256, i%256), t0)
	}
	g.Failed("new", t0)
	if len(g.addrs) != maxAddrs+1 {
		t.Fatalf("%d addresses remembered, want %d", len(g.addrs), maxAddrs+1)
	}
}

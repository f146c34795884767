package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/raftcat/raftcat/fsm"
)

// Mode is how a node treats callers.
type Mode string

// Modes.
const (
	// ModeNone lets anonymous callers do anything (a credential, when
	// valid, still names the caller).
	ModeNone Mode = "none"
	// ModeToken requires a credential on every API route.
	ModeToken Mode = "token"
)

// Kinds of identity, by the credential that proved it.
const (
	KindToken     = "token"     // an API token in the state
	KindOAuth     = "oauth"     // an access token raftcat issued
	KindOIDC      = "oidc"      // a JWT of the external issuer
	KindBootstrap = "bootstrap" // the admin token file, before the admin exists
	KindPeer      = "peer"      // a cluster peer's own request
)

// Identity is who a request was authenticated as.
type Identity struct {
	Principal string `json:"p"`
	Kind      string `json:"k"`
	// ID is the API token's id or the signing key's id: what must still
	// exist for the identity to hold.
	ID string `json:"i,omitempty"`
	// Expires is when the credential expires, epoch ms (0: never).
	Expires int64 `json:"e,omitempty"`
}

// Errors of authentication; each is a 401.
var (
	errInvalid = errors.New("the credential is not valid")
	errExpired = errors.New("the credential has expired")
	// ErrRevoked is a credential that was valid but is no longer.
	ErrRevoked = errors.New("the credential has been revoked")
)

// Reason is the metric label of an authentication failure.
func Reason(err error) string {
	switch {
	case errors.Is(err, errExpired):
		return "expired"
	case errors.Is(err, ErrRevoked):
		return "revoked"
	}
	return "invalid"
}

// OIDC configures an external identity provider.
type OIDC struct {
	Issuer   string
	Audience string
	// JWKSFile or JWKSURL gives the issuer's public keys.
	JWKSFile, JWKSURL string
	// PrincipalClaim names the claim that holds the principal (""/sub).
	PrincipalClaim string
}

// Config configures an Authenticator.
type Config struct {
	Mode Mode
	// AdminToken is the operator's admin token (the admin token file):
	// it names the admin until the bootstrap has made the admin.
	AdminToken string
	OIDC       *OIDC
	// AccessTokenTTL is how long issued OAuth2 access tokens live (0: 1h).
	AccessTokenTTL time.Duration
}

// Authenticator verifies credentials against a state.
type Authenticator struct {
	cfg Config
	// oidcKeys holds the OIDC issuer's keys (nil without OIDC).
	oidcKeys oidc.KeySet
}

// New builds an Authenticator; it reads the OIDC key file, if any.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeNone
	}
	if cfg.Mode != ModeNone && cfg.Mode != ModeToken {
		return nil, fmt.Errorf("unknown auth mode %q (none or token)", cfg.Mode)
	}
	if cfg.AccessTokenTTL <= 0 {
		cfg.AccessTokenTTL = time.Hour
	}
	a := &Authenticator{cfg: cfg}
	if cfg.OIDC != nil {
		keys, err := oidcKeySet(*cfg.OIDC)
		if err != nil {
			return nil, err
		}
		a.oidcKeys = keys
	}
	return a, nil
}

// Mode is the authenticator's mode.
func (a *Authenticator) Mode() Mode { return a.cfg.Mode }

// Required reports whether API routes need a credential.
func (a *Authenticator) Required() bool { return a.cfg.Mode == ModeToken }

// AccessTokenTTL is the lifetime of issued access tokens.
func (a *Authenticator) AccessTokenTTL() time.Duration { return a.cfg.AccessTokenTTL }

// oidcAlgs are the signature algorithms taken in OIDC JWTs: asymmetric
// ones only, so a public key can never serve as an HMAC secret.
var oidcAlgs = []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"}

func oidcKeySet(o OIDC) (oidc.KeySet, error) {
	if o.Issuer == "" || o.Audience == "" {
		return nil, errors.New("OIDC needs both an issuer and an audience")
	}
	switch {
	case o.JWKSFile != "":
		pub, err := readJWKS(o.JWKSFile)
		if err != nil {
			return nil, err
		}
		return &oidc.StaticKeySet{PublicKeys: pub}, nil
	case o.JWKSURL != "":
		return oidc.NewRemoteKeySet(context.Background(), o.JWKSURL), nil
	}
	return nil, errors.New("OIDC needs a JWKS file or URL")
}

// verifier is the OIDC verifier judging expiry at now (cheap: the key set,
// with its cache of remote keys, is shared).
func (a *Authenticator) verifier(now time.Time) *oidc.IDTokenVerifier {
	return oidc.NewVerifier(a.cfg.OIDC.Issuer, a.oidcKeys, &oidc.Config{ClientID: a.cfg.OIDC.Audience,
		SupportedSigningAlgs: oidcAlgs, Now: func() time.Time { return now }})
}

// readJWKS reads the public keys of a JWKS document.
func readJWKS(path string) ([]crypto.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read OIDC JWKS file: %w", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("OIDC JWKS file %s: %w", path, err)
	}
	var out []crypto.PublicKey
	for _, k := range set.Keys {
		// Only the key types a signature can be verified with: a symmetric
		// or unknown key (no public part) would make every verification
		// fail with "invalid public key type".
		switch pub := k.Public().Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
			out = append(out, pub)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("OIDC JWKS file %s holds no key", path)
	}
	return out, nil
}

// Authenticate says who a credential names at now, by the state st.
// The admin token is the operator's own text: when it looks like an API
// token or a JWT and is not one, it is still tried as the admin token.
func (a *Authenticator) Authenticate(ctx context.Context, st *fsm.State, cred string, now time.Time) (Identity, error) {
	var jwtErr error
	if !strings.HasPrefix(cred, TokenPrefix) && strings.Count(cred, ".") == 2 {
		var id Identity
		switch iss, ok := unverifiedIssuer(cred); {
		case ok && iss == Issuer:
			id, jwtErr = verifyAccessToken(st, cred, now)
		case a.oidcKeys != nil:
			id, jwtErr = a.oidc(ctx, cred, now)
		}
		if jwtErr == nil && id.Kind != "" {
			return id, nil
		}
	}
	id, err := a.apiToken(st, cred, now)
	if err == nil {
		return id, nil
	}
	if a.cfg.AdminToken != "" && !st.HasAdmin() && equalSecret(cred, a.cfg.AdminToken) {
		return Identity{Principal: fsm.AdminPrincipal, Kind: KindBootstrap}, nil
	}
	if jwtErr != nil {
		return Identity{}, jwtErr
	}
	return Identity{}, err
}

func (a *Authenticator) apiToken(st *fsm.State, cred string, now time.Time) (Identity, error) {
	k, err := verifyToken(st, cred, now)
	if err != nil {
		return Identity{}, err
	}
	return Identity{Principal: k.Principal, Kind: KindToken, ID: k.ID, Expires: k.ExpiresAt}, nil
}

func (a *Authenticator) oidc(ctx context.Context, raw string, now time.Time) (Identity, error) {
	tok, err := a.verifier(now).Verify(ctx, raw)
	if err != nil {
		var exp *oidc.TokenExpiredError
		if errors.As(err, &exp) {
			return Identity{}, fmt.Errorf("%w: %v", errExpired, err)
		}
		return Identity{}, fmt.Errorf("%w: %v", errInvalid, err)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: %v", errInvalid, err)
	}
	claim := a.cfg.OIDC.PrincipalClaim
	if claim == "" {
		claim = "sub"
	}
	p, _ := claims[claim].(string)
	if principalError(p) != nil {
		return Identity{}, fmt.Errorf("%w: claim %q names no principal", errInvalid, claim)
	}
	return Identity{Principal: p, Kind: KindOIDC, Expires: tok.Expiry.UnixMilli()}, nil
}

func principalError(p string) error {
	if p == "" || len(p) > 255 || strings.ContainsAny(p, "/\x00") {
		return errInvalid
	}
	return nil
}

// Still reports whether an identity proved earlier (on the node a request
// entered at) holds at now by st: its API token or signing key still
// exists (and, for an access token, its principal) and it has not
// expired.
func Still(st *fsm.State, id Identity, now time.Time) error {
	if id.Expires != 0 && now.UnixMilli() >= id.Expires {
		return errExpired
	}
	switch id.Kind {
	case KindToken:
		if k, ok := st.AuthToken(id.ID); !ok || k.Principal != id.Principal {
			return ErrRevoked
		}
	case KindOAuth:
		if k, ok := st.AuthSigningKey(id.ID); !ok || !k.Usable(now.UnixMilli()) {
			return ErrRevoked
		}
		if _, ok := st.Principal(id.Principal); !ok {
			return ErrRevoked
		}
	case KindBootstrap:
		if st.HasAdmin() {
			return ErrRevoked
		}
	}
	return nil
}

// Issuer is the "iss" of the access tokens raftcat issues.
const Issuer = "raftcat"

// accessTokenSkew is how far apart the clocks of the node that issued an
// access token and the node verifying it may be (issued tokens are valid
// from this long before their issue).
const accessTokenSkew = time.Minute

// accessClaims are the claims of an issued access token.
type accessClaims struct {
	jwt.Claims
	Scope string `json:"scope,omitempty"`
}

// IssueAccessToken signs an access token for principal with the current
// key of the state.
func IssueAccessToken(st *fsm.State, principal, scope string, ttl time.Duration, now time.Time) (string, error) {
	keys := st.AuthSigningKeys()
	if len(keys) == 0 {
		return "", errors.New("no token signing key yet")
	}
	k := keys[len(keys)-1]
	secret, err := k.Bytes()
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.ID))
	if err != nil {
		return "", err
	}
	c := accessClaims{Claims: jwt.Claims{Issuer: Issuer, Subject: principal, Audience: jwt.Audience{Issuer},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-accessTokenSkew)),
		Expiry: jwt.NewNumericDate(now.Add(ttl)), ID: NewSecret(12)}, Scope: scope}
	return jwt.Signed(signer).Claims(c).Serialize()
}

// unverifiedIssuer reads a JWT's "iss" without verifying it: only to pick
// the verifier.
func unverifiedIssuer(raw string) (string, bool) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.HS256, jose.RS256, jose.RS384, jose.RS512,
		jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA})
	if err != nil {
		return "", false
	}
	var c jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		return "", false
	}
	return c.Issuer, true
}

// verifyAccessToken verifies an access token raftcat issued.
func verifyAccessToken(st *fsm.State, raw string, now time.Time) (Identity, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.HS256})
	if err != nil || len(tok.Headers) != 1 {
		return Identity{}, errInvalid
	}
	k, ok := st.AuthSigningKey(tok.Headers[0].KeyID)
	if !ok {
		return Identity{}, fmt.Errorf("%w: unknown signing key", errInvalid)
	}
	if !k.Usable(now.UnixMilli()) {
		return Identity{}, fmt.Errorf("%w: its signing key was retired", errExpired)
	}
	secret, err := k.Bytes()
	if err != nil {
		return Identity{}, errInvalid
	}
	var c accessClaims
	if err := tok.Claims(secret, &c); err != nil {
		return Identity{}, errInvalid
	}
	if c.Expiry == nil {
		return Identity{}, fmt.Errorf("%w: no expiry", errInvalid)
	}
	if !now.Before(c.Expiry.Time()) {
		return Identity{}, errExpired
	}
	// The token may come from a node whose clock is ahead of this one's:
	// its iat and nbf are taken within accessTokenSkew (expiry was
	// checked exactly above).
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: Issuer, AnyAudience: jwt.Audience{Issuer}, Time: now}, accessTokenSkew); err != nil {
		return Identity{}, errInvalid
	}
	if _, ok := st.Principal(c.Subject); !ok {
		return Identity{}, fmt.Errorf("%w: its principal no longer exists", ErrRevoked)
	}
	return Identity{Principal: c.Subject, Kind: KindOAuth, ID: k.ID, Expires: c.Expiry.Time().UnixMilli()}, nil
}

// NewSigningKey is the command that makes a fresh token signing key
// current; the one it replaces verifies for grace more.
func NewSigningKey(grace time.Duration, ifAbsent bool) *fsm.SetAuthSigningKey {
	return &fsm.SetAuthSigningKey{ID: NewSecret(9), Key: NewSecret(32), GraceMs: grace.Milliseconds(), IfAbsent: ifAbsent}
}

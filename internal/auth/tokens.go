// Package auth authenticates callers: raftcat's own API tokens (hashed in
// the replicated state), the OAuth2 access tokens it issues to service
// principals (JWTs signed with keys from the state), JWTs of an external
// OIDC issuer, and the signatures cluster peers put on the requests they
// forward to each other. It decides who a credential names; what that
// principal may do is package access's.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/raftcat/raftcat/fsm"
)

// TokenPrefix starts every API token raftcat issues: "rct_", the token's
// id, '.', then its secret.
const TokenPrefix = "rct_"

// NewSecret draws size random bytes, URL-safe base64.
func NewSecret(size int) string {
	b := make([]byte, size)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// HashSecret hashes a secret with a fresh salt, for storing.
func HashSecret(secret string) fsm.SecretHash {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	return fsm.SecretHash{Salt: hex.EncodeToString(salt), Hash: hashWith(salt, secret)}
}

func hashWith(salt []byte, secret string) string {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(secret))
	return hex.EncodeToString(h.Sum(nil))
}

// Matches reports, in constant time, whether secret hashes to h.
func Matches(h fsm.SecretHash, secret string) bool {
	salt, err := hex.DecodeString(h.Salt)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashWith(salt, secret)), []byte(h.Hash)) == 1
}

// NewToken makes an API token for principal: its text, shown once, and
// the record the state keeps. ttl 0 makes a token that never expires.
func NewToken(principal string, ttl time.Duration, now time.Time) (string, fsm.AuthToken) {
	id := NewSecret(12)
	secret := NewSecret(32)
	k := fsm.AuthToken{ID: id, Principal: principal, Secret: HashSecret(secret)}
	if ttl > 0 {
		k.ExpiresAt = now.Add(ttl).UnixMilli()
	}
	return TokenPrefix + id + "." + secret, k
}

// OpaqueTokenID is the id the bootstrap admin token is kept under.
const OpaqueTokenID = fsm.OpaqueTokenPrefix + "bootstrap-admin"

// BootstrapAdmin is the command that makes the operator's admin token the
// token of the metastore admin, once: a NoOp when an admin exists.
func BootstrapAdmin(adminToken string) *fsm.CreatePrincipal {
	return &fsm.CreatePrincipal{Principal: fsm.Principal{Name: fsm.AdminPrincipal, Type: fsm.PrincipalUser, Admin: true},
		Token: &fsm.AuthToken{ID: OpaqueTokenID, Secret: HashSecret(adminToken)}, IfNoAdmin: true}
}

// splitToken parses an API token's text into id and secret.
func splitToken(text string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(text, TokenPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, ".")
}

// verifyToken finds the API token text is, valid at now.
func verifyToken(st *fsm.State, text string, now time.Time) (*fsm.AuthToken, error) {
	k := findToken(st, text)
	if k == nil {
		return nil, errInvalid
	}
	if k.ExpiredAt(now.UnixMilli()) {
		return nil, errExpired
	}
	return k, nil
}

// findToken finds the token text is: by the id in it, else among the
// opaque tokens (the admin token is the operator's text, which may start
// like an API token).
func findToken(st *fsm.State, text string) *fsm.AuthToken {
	if id, secret, ok := splitToken(text); ok {
		if k, found := st.AuthToken(id); found && !strings.HasPrefix(k.ID, fsm.OpaqueTokenPrefix) && Matches(k.Secret, secret) {
			return k
		}
	}
	for _, k := range st.OpaqueTokens() {
		if Matches(k.Secret, text) {
			return k
		}
	}
	return nil
}

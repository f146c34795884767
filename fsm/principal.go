package fsm

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Principals and their API tokens. A principal is a user or a service
// (which also has an OAuth2 client id and secret); the metastore admin is
// the principal marked Admin, created at first bootstrap from the
// operator's admin token. No secret is ever stored: the HTTP layer draws
// a salt, hashes the secret with it, and the commands carry salt and hash.
//
// A token is found by its id (the public part of the token string) and
// then verified against its salted hash. The bootstrap admin token is the
// operator's own text, with no id in it; it is kept under an id starting
// with OpaqueTokenPrefix, and the few such tokens are tried in turn.

// Principal is a user or service that authenticates to the catalog.
type Principal struct {
	Name  string `json:"name"`
	Type  string `json:"type"` // PrincipalUser or PrincipalService
	Admin bool   `json:"admin,omitempty"`
	// ClientID and Secret are a service principal's OAuth2 client
	// credentials; ClientID is unique across principals.
	ClientID  string      `json:"client_id,omitempty"`
	Secret    *SecretHash `json:"secret,omitempty"`
	CreatedAt int64       `json:"created_at"`
	CreatedBy string      `json:"created_by,omitempty"`
}

// SecretHash is a secret as stored: a random salt and the SHA-256 of the
// salt followed by the secret, both hex.
type SecretHash struct {
	Salt string `json:"salt"`
	Hash string `json:"hash"`
}

// AuthToken is an API token of a principal.
type AuthToken struct {
	ID        string     `json:"id"`
	Principal string     `json:"principal"`
	Secret    SecretHash `json:"secret"`
	ExpiresAt int64      `json:"expires_at,omitempty"` // epoch ms; 0: never
	CreatedAt int64      `json:"created_at"`
	CreatedBy string     `json:"created_by,omitempty"`
}

// Principal types.
const (
	PrincipalUser    = "user"
	PrincipalService = "service"
)

// AdminPrincipal is the name of the metastore admin made at bootstrap.
const AdminPrincipal = "admin"

// OpaqueTokenPrefix starts the ids of tokens whose text carries no id
// (the bootstrap admin token).
const OpaqueTokenPrefix = "opaque-"

// ExpiredAt reports whether the token has expired at nowMs.
func (k *AuthToken) ExpiredAt(nowMs int64) bool { return k.ExpiresAt != 0 && nowMs >= k.ExpiresAt }

// Command types of principals and tokens.
const (
	CmdCreatePrincipal CommandType = 39
	CmdDeletePrincipal CommandType = 40
	CmdCreateAuthToken CommandType = 41
	CmdRevokeAuthToken CommandType = 42
)

// Record kinds of principals and tokens.
const (
	RecordPrincipal byte = 11
	RecordAuthToken byte = 12
)

var (
	principalTree = newCountedTree("principals", "principal") // name -> *Principal
	authTokenTree = newTree("auth tokens")                    // token id -> *AuthToken
	clientIDTree  = newTree("oauth client ids")               // client id -> principal name (string)
)

func init() {
	registerCommand(CmdCreatePrincipal, applyCreatePrincipal)
	registerCommand(CmdDeletePrincipal, applyDeletePrincipal)
	registerCommand(CmdCreateAuthToken, applyCreateAuthToken)
	registerCommand(CmdRevokeAuthToken, applyRevokeAuthToken)
	registerRecord(RecordPrincipal, treeRecord(principalTree, nil, func(b *Builder, p *Principal) { b.t.putPrincipal(p) }))
	registerRecord(RecordAuthToken, treeRecord(authTokenTree, nil, func(b *Builder, k *AuthToken) {
		b.t.tree(authTokenTree).Insert([]byte(k.ID), k)
	}))
}

// CreatePrincipal creates a principal. With IfNoAdmin (the bootstrap) it
// applies only while no admin exists, and is a NoOp otherwise, so nodes
// racing to bootstrap agree on one admin. Token, if set, is the
// principal's first token.
type CreatePrincipal struct {
	Stamp
	Principal Principal  `json:"principal"`
	Token     *AuthToken `json:"token,omitempty"`
	IfNoAdmin bool       `json:"if_no_admin,omitempty"`
}

// DeletePrincipal deletes a principal, its tokens and its grants.
type DeletePrincipal struct {
	Stamp
	Name string `json:"name"`
}

// CreateAuthToken adds a token to an existing principal.
type CreateAuthToken struct {
	Stamp
	Token AuthToken `json:"token"`
}

// RevokeAuthToken deletes a token.
type RevokeAuthToken struct {
	Stamp
	ID string `json:"id"`
}

func (*CreatePrincipal) Type() CommandType { return CmdCreatePrincipal }
func (*DeletePrincipal) Type() CommandType { return CmdDeletePrincipal }
func (*CreateAuthToken) Type() CommandType { return CmdCreateAuthToken }
func (*RevokeAuthToken) Type() CommandType { return CmdRevokeAuthToken }

// Principal returns a principal by name.
func (s *State) Principal(name string) (*Principal, bool) {
	return get[*Principal](s.trees[principalTree], []byte(name))
}

// Principals lists principals in name order, paged like Catalogs.
func (s *State) Principals(after string, limit int) []*Principal {
	var out []*Principal
	walkAfter(s.trees[principalTree], nil, after, limit, func(v any) { out = append(out, v.(*Principal)) })
	return out
}

// PrincipalByClientID finds the service principal of an OAuth2 client id.
func (s *State) PrincipalByClientID(id string) (*Principal, bool) {
	name, ok := get[string](s.trees[clientIDTree], []byte(id))
	if !ok {
		return nil, false
	}
	return s.Principal(name)
}

// HasAdmin reports whether the metastore has an admin principal.
func (s *State) HasAdmin() bool {
	found := false
	s.trees[principalTree].Root().Walk(func(_ []byte, v any) bool {
		found = v.(*Principal).Admin
		return found
	})
	return found
}

// AuthToken returns a token by id.
func (s *State) AuthToken(id string) (*AuthToken, bool) {
	return get[*AuthToken](s.trees[authTokenTree], []byte(id))
}

// OpaqueTokens lists the tokens that carry no id, in id order.
func (s *State) OpaqueTokens() []*AuthToken {
	var out []*AuthToken
	s.trees[authTokenTree].Root().WalkPrefix([]byte(OpaqueTokenPrefix), func(_ []byte, v any) bool {
		out = append(out, v.(*AuthToken))
		return false
	})
	return out
}

func (t *tx) putPrincipal(p *Principal) {
	t.tree(principalTree).Insert([]byte(p.Name), p)
	if p.ClientID != "" {
		t.tree(clientIDTree).Insert([]byte(p.ClientID), p.Name)
	}
}

// checkPrincipal checks a new principal against the state.
func (t *tx) checkPrincipal(p *Principal) *Error {
	if err := principalNameError(p.Name); err != nil {
		return err
	}
	if p.Type != PrincipalUser && p.Type != PrincipalService {
		return Invalidf("Invalid principal type %q: it must be %q or %q", p.Type, PrincipalUser, PrincipalService)
	}
	// A service has both a client id and a secret (salt and hash); a user
	// has neither.
	service := p.ClientID != "" && p.Secret != nil && p.Secret.Salt != "" && p.Secret.Hash != ""
	user := p.ClientID == "" && p.Secret == nil
	if p.Type == PrincipalService && !service || p.Type == PrincipalUser && !user {
		return Invalidf("A service principal, and only one, has a client id and a client secret")
	}
	if _, ok := t.tree(principalTree).Get([]byte(p.Name)); ok {
		return Errf(CodePrincipalExists, "Principal already exists: %s", p.Name)
	}
	if _, ok := t.tree(clientIDTree).Get([]byte(p.ClientID)); ok && p.ClientID != "" {
		return Invalidf("The client id is already in use")
	}
	return nil
}

// principalNameError refuses names that are empty, too long, or hold
// control characters, '/' or leading and trailing spaces.
func principalNameError(name string) *Error {
	switch {
	case name == "" || strings.TrimSpace(name) != name:
		return Invalidf("A principal name is required and may not start or end with a space")
	case len(name) > 255:
		return Invalidf("A principal name may be at most 255 characters long")
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == '/' || r == utf8.RuneError }):
		return Invalidf("A principal name may not contain control characters or '/'")
	}
	return nil
}

func (t *tx) hasAdmin() bool {
	found := false
	t.tree(principalTree).Root().Walk(func(_ []byte, v any) bool {
		found = v.(*Principal).Admin
		return found
	})
	return found
}

func applyCreatePrincipal(t *tx, _ uint64, c *CreatePrincipal) Result {
	if c.IfNoAdmin && t.hasAdmin() {
		return Result{NoOp: true}
	}
	p := c.Principal
	p.CreatedAt, p.CreatedBy = c.Time, c.Caller
	if err := t.checkPrincipal(&p); err != nil {
		return failed(err)
	}
	t.putPrincipal(&p)
	if c.Token != nil {
		k := *c.Token
		k.Principal = p.Name
		if err := t.addToken(c.Stamp, &k); err != nil {
			return failed(err)
		}
	}
	return Result{Principal: &p}
}

func applyDeletePrincipal(t *tx, _ uint64, c *DeletePrincipal) Result {
	p, ok := get[*Principal](t.tree(principalTree), []byte(c.Name))
	if !ok {
		return failed(Errf(CodePrincipalNotFound, "Principal not found: %s", c.Name))
	}
	if p.Admin && t.admins() == 1 {
		return failed(Invalidf("Principal %s is the last metastore admin and cannot be deleted", p.Name))
	}
	t.tree(principalTree).Delete([]byte(p.Name))
	if p.ClientID != "" {
		t.tree(clientIDTree).Delete([]byte(p.ClientID))
	}
	for _, id := range t.tokensOf(p.Name) {
		t.tree(authTokenTree).Delete([]byte(id))
	}
	t.dropGrantsOf(p.Name)
	return Result{Principal: p}
}

// admins counts the admin principals.
func (t *tx) admins() int {
	n := 0
	t.tree(principalTree).Root().Walk(func(_ []byte, v any) bool {
		if v.(*Principal).Admin {
			n++
		}
		return false
	})
	return n
}

// tokensOf lists the ids of a principal's tokens, in id order.
func (t *tx) tokensOf(principal string) []string {
	var ids []string
	t.tree(authTokenTree).Root().Walk(func(k []byte, v any) bool {
		if v.(*AuthToken).Principal == principal {
			ids = append(ids, string(k))
		}
		return false
	})
	return ids
}

// addToken checks and stores a new token.
func (t *tx) addToken(st Stamp, k *AuthToken) *Error {
	if k.ID == "" || k.Secret.Salt == "" || k.Secret.Hash == "" {
		return Invalidf("A token needs an id, a salt and a hash")
	}
	if _, ok := t.tree(principalTree).Get([]byte(k.Principal)); !ok {
		return Errf(CodePrincipalNotFound, "Principal not found: %s", k.Principal)
	}
	if _, taken := t.tree(authTokenTree).Get([]byte(k.ID)); taken {
		return Invalidf("The token id is already in use")
	}
	if k.ExpiresAt != 0 && k.ExpiresAt <= st.Time {
		return Invalidf("Invalid token expiry %d: it must be in the future", k.ExpiresAt)
	}
	k.CreatedAt, k.CreatedBy = st.Time, st.Caller
	t.tree(authTokenTree).Insert([]byte(k.ID), k)
	return nil
}

func applyCreateAuthToken(t *tx, _ uint64, c *CreateAuthToken) Result {
	k := c.Token
	if err := t.addToken(c.Stamp, &k); err != nil {
		return failed(err)
	}
	return Result{AuthToken: &k}
}

func applyRevokeAuthToken(t *tx, _ uint64, c *RevokeAuthToken) Result {
	k, ok := get[*AuthToken](t.tree(authTokenTree), []byte(c.ID))
	if !ok {
		return failed(Errf(CodeTokenNotFound, "Token not found: %s", c.ID))
	}
	t.tree(authTokenTree).Delete([]byte(c.ID))
	return Result{AuthToken: k}
}

// sortedUnique sorts and de-duplicates a list of names.
func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

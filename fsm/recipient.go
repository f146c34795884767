package fsm

import (
	"math"
	"slices"
	"strings"
)

// Delta Sharing recipients. A recipient authenticates with a bearer token
// it receives once, by downloading its profile from a one-time activation
// link. Neither secret is ever stored: the HTTP layer hashes the
// activation code and the bearer token (hex SHA-256) and the commands
// carry the hashes. Names are case-insensitive, as share names are.
//
// Two indexes map a token's hashes to its recipient's key, so that a
// request's bearer token and an activation link are found without a
// scan. They are derived from the recipients and never persisted:
// restores rebuild them as they put recipients back.

// Recipient is a Delta Sharing recipient.
type Recipient struct {
	ID                 string           `json:"id"`
	Name               string           `json:"name"`
	Comment            *string          `json:"comment,omitempty"`
	AuthenticationType string           `json:"authentication_type"` // AuthTypeToken
	Owner              string           `json:"owner,omitempty"`
	CreatedAt          int64            `json:"created_at"`
	CreatedBy          string           `json:"created_by,omitempty"`
	UpdatedAt          int64            `json:"updated_at"`
	UpdatedBy          string           `json:"updated_by,omitempty"`
	Tokens             []RecipientToken `json:"tokens,omitempty"`
}

// RecipientToken is one of a recipient's tokens, as hashes.
type RecipientToken struct {
	ID string `json:"id"`
	// ActivationHash is the hex SHA-256 of the one-time activation code.
	ActivationHash string `json:"activation_hash"`
	// BearerHash is the hex SHA-256 of the bearer token, set when the
	// profile was downloaded.
	BearerHash string `json:"bearer_hash,omitempty"`
	CreatedAt  int64  `json:"created_at"`
	CreatedBy  string `json:"created_by,omitempty"`
	// ExpirationTime is when the token expires, epoch ms; 0: never.
	ExpirationTime int64 `json:"expiration_time,omitempty"`
	ActivatedAt    int64 `json:"activated_at,omitempty"`
	UpdatedAt      int64 `json:"updated_at"`
}

// AuthTypeToken is the one authentication type recipients have.
const AuthTypeToken = "TOKEN"

// ExpiredAt reports whether the token has expired at nowMs (epoch ms).
func (t *RecipientToken) ExpiredAt(nowMs int64) bool {
	return t.ExpirationTime != 0 && nowMs >= t.ExpirationTime
}

// Command types of recipients.
const (
	CmdCreateRecipient        CommandType = 28
	CmdDeleteRecipient        CommandType = 29
	CmdRotateRecipientToken   CommandType = 30
	CmdActivateRecipientToken CommandType = 31
)

// RecordRecipient is the record kind of a recipient.
const RecordRecipient byte = 8

var (
	recipientTree   = newCountedTree("recipients", "recipient") // lower-cased name -> *Recipient
	bearerTree      = newTree("recipient bearer hashes")        // bearer hash -> recipient key (string)
	activationTree  = newTree("recipient activation hashes")    // activation hash -> recipient key (string)
	recipientHashes = [...]struct {
		tree treeID
		hash func(*RecipientToken) string
	}{
		{bearerTree, func(k *RecipientToken) string { return k.BearerHash }},
		{activationTree, func(k *RecipientToken) string { return k.ActivationHash }},
	}
)

func init() {
	registerCommand(CmdCreateRecipient, applyCreateRecipient)
	registerCommand(CmdDeleteRecipient, applyDeleteRecipient)
	registerCommand(CmdRotateRecipientToken, applyRotateRecipientToken)
	registerCommand(CmdActivateRecipientToken, applyActivateRecipientToken)
	registerRecord(RecordRecipient, treeRecord(recipientTree, nil, func(b *Builder, r *Recipient) { b.t.putRecipient(r) }))
}

// CreateRecipient creates a recipient with one token, not yet activated.
type CreateRecipient struct {
	Stamp
	ID                 string  `json:"id"`
	Name               string  `json:"name"`
	Comment            *string `json:"comment,omitempty"`
	AuthenticationType string  `json:"authentication_type,omitempty"` // "": TOKEN
	TokenID            string  `json:"token_id"`
	ActivationHash     string  `json:"activation_hash"`
	ExpirationTime     int64   `json:"expiration_time,omitempty"` // epoch ms; 0: never
}

// DeleteRecipient deletes a recipient and revokes its grants.
type DeleteRecipient struct {
	Stamp
	Name string `json:"name"`
}

// RotateRecipientToken gives a recipient a new token and makes its
// others expire at the latest ExistingTokenExpireInSeconds from now (0:
// at once). Tokens expired already are dropped; a recipient with two
// tokens that stay alive is refused.
type RotateRecipientToken struct {
	Stamp
	Name                         string `json:"name"`
	ExistingTokenExpireInSeconds int64  `json:"existing_token_expire_in_seconds"`
	TokenID                      string `json:"token_id"`
	ActivationHash               string `json:"activation_hash"`
	ExpirationTime               int64  `json:"expiration_time,omitempty"`
}

// ActivateRecipientToken records the download of a recipient's profile:
// the token found by ActivationHash gets its bearer token's hash. A token
// is activated once.
type ActivateRecipientToken struct {
	Stamp
	ActivationHash string `json:"activation_hash"`
	BearerHash     string `json:"bearer_hash"`
}

func (*CreateRecipient) Type() CommandType        { return CmdCreateRecipient }
func (*DeleteRecipient) Type() CommandType        { return CmdDeleteRecipient }
func (*RotateRecipientToken) Type() CommandType   { return CmdRotateRecipientToken }
func (*ActivateRecipientToken) Type() CommandType { return CmdActivateRecipientToken }

// Recipient returns a recipient by name, case-insensitively.
func (s *State) Recipient(name string) (*Recipient, bool) {
	return get[*Recipient](s.trees[recipientTree], foldKey(name))
}

// Recipients lists recipients in order of their lower-cased names, paged
// like Shares.
func (s *State) Recipients(after string, limit int) []*Recipient {
	var out []*Recipient
	walkAfter(s.trees[recipientTree], nil, strings.ToLower(after), limit, func(v any) { out = append(out, v.(*Recipient)) })
	return out
}

// RecipientByBearer finds the recipient and token a bearer token hash
// belongs to. Whether the token has expired is the caller's to check.
func (s *State) RecipientByBearer(hash string) (*Recipient, *RecipientToken, bool) {
	return s.recipientByHash(bearerTree, hash)
}

// RecipientByActivation finds the recipient and token an activation code
// hash belongs to, activated or not.
func (s *State) RecipientByActivation(hash string) (*Recipient, *RecipientToken, bool) {
	return s.recipientByHash(activationTree, hash)
}

func (s *State) recipientByHash(index treeID, hash string) (*Recipient, *RecipientToken, bool) {
	return lookupHash(s.trees[index], s.trees[recipientTree], index, hash)
}

// lookupHash resolves a hash through an index and the recipients.
func lookupHash(index, recipients getter, which treeID, hash string) (*Recipient, *RecipientToken, bool) {
	if hash == "" {
		return nil, nil, false
	}
	key, ok := get[string](index, []byte(hash))
	if !ok {
		return nil, nil, false
	}
	r, ok := get[*Recipient](recipients, []byte(key))
	if !ok {
		return nil, nil, false
	}
	i := r.tokenIndex(which, hash)
	if i < 0 {
		return nil, nil, false
	}
	return r, &r.Tokens[i], true
}

// tokenIndex is the index of the token whose hash in index is hash, or -1.
func (r *Recipient) tokenIndex(index treeID, hash string) int {
	for _, h := range recipientHashes {
		if h.tree == index {
			return slices.IndexFunc(r.Tokens, func(k RecipientToken) bool { return h.hash(&k) == hash })
		}
	}
	return -1
}

// clone returns a copy whose tokens an applier may change.
func (r *Recipient) clone() *Recipient {
	c := *r
	c.Tokens = slices.Clone(r.Tokens)
	return &c
}

// putRecipient stores a recipient and indexes its tokens' hashes.
func (t *tx) putRecipient(r *Recipient) {
	key := foldKey(r.Name)
	t.tree(recipientTree).Insert(key, r)
	for i := range r.Tokens {
		for _, h := range recipientHashes {
			if v := h.hash(&r.Tokens[i]); v != "" {
				t.tree(h.tree).Insert([]byte(v), string(key))
			}
		}
	}
}

// deleteRecipient removes a recipient and its tokens' hashes.
func (t *tx) deleteRecipient(r *Recipient) {
	t.tree(recipientTree).Delete(foldKey(r.Name))
	for i := range r.Tokens {
		for _, h := range recipientHashes {
			if v := h.hash(&r.Tokens[i]); v != "" {
				t.tree(h.tree).Delete([]byte(v))
			}
		}
	}
}

// replaceRecipient stores r in old's place, re-indexing its tokens.
func (t *tx) replaceRecipient(old, r *Recipient) {
	t.deleteRecipient(old)
	t.putRecipient(r)
}

// resolveRecipient looks a recipient up with a 404.
func (t *tx) resolveRecipient(name string) (*Recipient, *Error) {
	if name == "" {
		return nil, Invalidf("A recipient name is required")
	}
	r, ok := get[*Recipient](t.tree(recipientTree), foldKey(name))
	if !ok {
		return nil, Errf(CodeRecipientNotFound, "Recipient not found: %s", name)
	}
	return r, nil
}

// newToken checks and builds a token a command creates.
func (t *tx) newToken(st Stamp, id, activationHash string, expiration int64) (RecipientToken, *Error) {
	if id == "" || activationHash == "" {
		return RecipientToken{}, Invalidf("A recipient token needs an id and an activation hash")
	}
	if _, taken := t.tree(activationTree).Get([]byte(activationHash)); taken {
		return RecipientToken{}, Invalidf("The activation hash is already in use")
	}
	if expiration != 0 && expiration <= st.Time {
		return RecipientToken{}, Invalidf("Invalid expiration_time %d: it must be in the future", expiration)
	}
	return RecipientToken{ID: id, ActivationHash: activationHash, CreatedAt: st.Time, CreatedBy: st.Caller,
		ExpirationTime: expiration, UpdatedAt: st.Time}, nil
}

func applyCreateRecipient(t *tx, _ uint64, c *CreateRecipient) Result {
	if err := SharingNameError("recipient", c.Name); err != nil {
		return failed(err)
	}
	auth := orElse(strings.ToUpper(c.AuthenticationType), AuthTypeToken)
	if auth != AuthTypeToken {
		return failed(Invalidf("Unsupported authentication_type %q: only TOKEN is supported", c.AuthenticationType))
	}
	if existing, ok := t.tree(recipientTree).Get(foldKey(c.Name)); ok {
		return failed(foldedTwinError(c.Rules, CodeRecipientExists, "Recipient", c.Name, existing.(*Recipient).Name))
	}
	tok, err := t.newToken(c.Stamp, c.TokenID, c.ActivationHash, c.ExpirationTime)
	if err != nil {
		return failed(err)
	}
	r := &Recipient{ID: c.ID, Name: c.Name, Comment: clonePtr(c.Comment), AuthenticationType: auth, Owner: c.Caller,
		CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time, Tokens: []RecipientToken{tok}}
	t.putRecipient(r)
	return Result{Recipient: r}
}

func applyDeleteRecipient(t *tx, _ uint64, c *DeleteRecipient) Result {
	r, err := t.resolveRecipient(c.Name)
	if err != nil {
		return failed(err)
	}
	t.deleteRecipient(r)
	t.revokeEverywhere(r.Name)
	return Result{Recipient: r}
}

func applyRotateRecipientToken(t *tx, _ uint64, c *RotateRecipientToken) Result {
	if c.ExistingTokenExpireInSeconds < 0 {
		return failed(Invalidf("Invalid existing_token_expire_in_seconds %d: it may not be negative", c.ExistingTokenExpireInSeconds))
	}
	old, err := t.resolveRecipient(c.Name)
	if err != nil {
		return failed(err)
	}
	r := old.clone()
	if err := r.expireTokens(c.Time, c.ExistingTokenExpireInSeconds); err != nil {
		return failed(err)
	}
	if slices.ContainsFunc(r.Tokens, func(k RecipientToken) bool { return k.ID == c.TokenID }) {
		return failed(Invalidf("Recipient %s already has a token %s", r.Name, c.TokenID))
	}
	tok, err := t.newToken(c.Stamp, c.TokenID, c.ActivationHash, c.ExpirationTime)
	if err != nil {
		return failed(err)
	}
	r.Tokens = append(r.Tokens, tok)
	r.UpdatedAt, r.UpdatedBy = max(c.Time, old.UpdatedAt), c.Caller
	t.replaceRecipient(old, r)
	return Result{Recipient: r}
}

// expireTokens drops the tokens expired at now and makes the others
// expire within seconds, refusing to leave two of them alive.
func (r *Recipient) expireTokens(now, seconds int64) *Error {
	r.Tokens = slices.DeleteFunc(r.Tokens, func(k RecipientToken) bool { return k.ExpiredAt(now) })
	limit := expiryAfter(now, seconds)
	alive := 0
	for i := range r.Tokens {
		k := &r.Tokens[i]
		if k.ExpirationTime == 0 || k.ExpirationTime > limit {
			k.ExpirationTime, k.UpdatedAt = limit, now
		}
		if !k.ExpiredAt(now) {
			alive++
		}
	}
	if alive > 1 {
		return Invalidf("Recipient %s already has two active tokens: let one expire (existing_token_expire_in_seconds 0) before rotating", r.Name)
	}
	return nil
}

// expiryAfter is now plus seconds in epoch ms, saturating.
func expiryAfter(now, seconds int64) int64 {
	if seconds > (math.MaxInt64-max(now, 0))/1000 {
		return math.MaxInt64
	}
	return now + seconds*1000
}

func applyActivateRecipientToken(t *tx, _ uint64, c *ActivateRecipientToken) Result {
	if c.ActivationHash == "" || c.BearerHash == "" {
		return failed(Invalidf("Activating a recipient token needs the activation and bearer hashes"))
	}
	old, tok, ok := lookupHash(t.tree(activationTree), t.tree(recipientTree), activationTree, c.ActivationHash)
	if !ok {
		return failed(Errf(CodeRecipientNotFound, "The activation link is not valid"))
	}
	if tok.BearerHash != "" {
		return failed(Errf(CodeActivationUsed, "The credential file of recipient %s has already been downloaded", old.Name))
	}
	if tok.ExpiredAt(c.Time) {
		return failed(Errf(CodePermissionDenied, "The activation link of recipient %s has expired", old.Name))
	}
	if _, taken := t.tree(bearerTree).Get([]byte(c.BearerHash)); taken {
		return failed(Invalidf("The bearer hash is already in use"))
	}
	r := old.clone()
	k := &r.Tokens[old.tokenIndex(activationTree, c.ActivationHash)]
	k.BearerHash, k.ActivatedAt, k.UpdatedAt = c.BearerHash, c.Time, max(c.Time, k.UpdatedAt)
	t.replaceRecipient(old, r)
	return Result{Recipient: r}
}

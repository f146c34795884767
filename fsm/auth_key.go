package fsm

import (
	"math"
	"slices"
)

// The keys that sign the OAuth2 access tokens raftcat issues itself (the
// Iceberg REST client-credentials grant). The leader draws a key and
// proposes it; every node verifies with the keys in its state. Rotating
// retires the current key: tokens it signed stay valid until its grace
// period ends, then they are refused, and the key is dropped at the next
// rotation after that.

// AuthSigningKey is one signing key.
type AuthSigningKey struct {
	ID string `json:"id"`
	// Key is the base64 of at least MinURLSigningKeyBytes random bytes.
	Key       string `json:"key"`
	CreatedAt int64  `json:"created_at"`
	// RetiredAt is when a newer key replaced it (0: the current key);
	// tokens it signed are refused from RefuseAfter on.
	RetiredAt   int64 `json:"retired_at,omitempty"`
	RefuseAfter int64 `json:"refuse_after,omitempty"`
}

// Bytes decodes the key.
func (k *AuthSigningKey) Bytes() ([]byte, error) { return decodeSigningKey(k.Key) }

// Usable reports whether tokens the key signed are accepted at nowMs.
func (k *AuthSigningKey) Usable(nowMs int64) bool { return k.RetiredAt == 0 || nowMs < k.RefuseAfter }

// AuthSigningKeys are the keys in use, the current one last.
type AuthSigningKeys struct {
	Keys []AuthSigningKey `json:"keys"`
}

// CmdSetAuthSigningKey is the command type of SetAuthSigningKey.
const CmdSetAuthSigningKey CommandType = 44

// RecordAuthSigningKeys is the record kind of the token signing keys.
const RecordAuthSigningKeys byte = 14

var authKeyTree = newTree("auth signing keys") // authKeysID -> *AuthSigningKeys

var authKeysID = []byte("auth-signing-keys")

func init() {
	registerCommand(CmdSetAuthSigningKey, applySetAuthSigningKey)
	registerRecord(RecordAuthSigningKeys, treeRecord(authKeyTree, nil, func(b *Builder, k *AuthSigningKeys) {
		b.t.tree(authKeyTree).Insert(authKeysID, k)
	}))
}

// SetAuthSigningKey makes a new key current. The keys it replaces keep
// verifying for GraceMs more at most (a rotation with no grace, after a
// key leaked, retires every older key at once). With IfAbsent it only
// sets the first key.
type SetAuthSigningKey struct {
	Stamp
	ID       string `json:"id"`
	Key      string `json:"key"`
	GraceMs  int64  `json:"grace_ms,omitempty"`
	IfAbsent bool   `json:"if_absent,omitempty"`
}

func (*SetAuthSigningKey) Type() CommandType { return CmdSetAuthSigningKey }

// AuthSigningKeys returns the signing keys, the current one last.
func (s *State) AuthSigningKeys() []AuthSigningKey {
	k, ok := get[*AuthSigningKeys](s.trees[authKeyTree], authKeysID)
	if !ok {
		return nil
	}
	return k.Keys
}

// AuthSigningKey returns a key by id.
func (s *State) AuthSigningKey(id string) (*AuthSigningKey, bool) {
	keys := s.AuthSigningKeys()
	i := slices.IndexFunc(keys, func(k AuthSigningKey) bool { return k.ID == id })
	if i < 0 {
		return nil, false
	}
	return &keys[i], true
}

func applySetAuthSigningKey(t *tx, _ uint64, c *SetAuthSigningKey) Result {
	b, err := decodeSigningKey(c.Key)
	if c.ID == "" || c.Key == "" || err != nil || len(b) < MinURLSigningKeyBytes {
		return failed(Invalidf("A signing key needs an id and the base64 of at least %d bytes", MinURLSigningKeyBytes))
	}
	if c.GraceMs < 0 {
		return failed(Invalidf("Invalid grace period %d ms: it may not be negative", c.GraceMs))
	}
	var keys []AuthSigningKey
	if cur, ok := get[*AuthSigningKeys](t.tree(authKeyTree), authKeysID); ok {
		if c.IfAbsent && len(cur.Keys) > 0 {
			return Result{AuthKeys: cur, NoOp: true}
		}
		keys = slices.Clone(cur.Keys)
	}
	if slices.ContainsFunc(keys, func(k AuthSigningKey) bool { return k.ID == c.ID }) {
		return failed(Invalidf("A signing key %s exists already", c.ID))
	}
	refuseAfter := c.Time + c.GraceMs
	if refuseAfter < c.Time { // the sum overflowed: a grace without end
		refuseAfter = math.MaxInt64
	}
	for i := range keys { // no key outlives this rotation's grace period
		switch {
		case keys[i].RetiredAt == 0:
			keys[i].RetiredAt, keys[i].RefuseAfter = c.Time, refuseAfter
		case keys[i].RefuseAfter > refuseAfter:
			keys[i].RefuseAfter = refuseAfter
		}
	}
	keys = slices.DeleteFunc(keys, func(k AuthSigningKey) bool { return !k.Usable(c.Time) })
	out := &AuthSigningKeys{Keys: append(keys, AuthSigningKey{ID: c.ID, Key: c.Key, CreatedAt: c.Time})}
	t.tree(authKeyTree).Insert(authKeysID, out)
	return Result{AuthKeys: out}
}

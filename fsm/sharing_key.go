package fsm

import "encoding/base64"

// The URL signing key is the secret every node signs and verifies the
// file URLs (and other tokens) Delta Sharing serves itself with. The
// leader draws it and proposes it; the state keeps the current one.

// URLSigningKey is the current key.
type URLSigningKey struct {
	// Key is the base64 of at least MinURLSigningKeyBytes random bytes.
	Key string `json:"key"`
	// Index is the raft index the key was set at.
	Index     uint64 `json:"index"`
	CreatedAt int64  `json:"created_at"`
}

// MinURLSigningKeyBytes is the least number of bytes a key decodes to.
const MinURLSigningKeyBytes = 32

// Bytes decodes the key.
func (k *URLSigningKey) Bytes() ([]byte, error) { return decodeSigningKey(k.Key) }

// CmdSetURLSigningKey is the command type of SetURLSigningKey.
const CmdSetURLSigningKey CommandType = 32

// RecordURLSigningKey is the record kind of the URL signing key.
const RecordURLSigningKey byte = 9

var signingKeyTree = newTree("url signing key") // signingKeyID -> *URLSigningKey

// signingKeyID is the one key of signingKeyTree.
var signingKeyID = []byte("url-signing-key")

func init() {
	registerCommand(CmdSetURLSigningKey, applySetURLSigningKey)
	registerRecord(RecordURLSigningKey, treeRecord(signingKeyTree, nil, func(b *Builder, k *URLSigningKey) {
		b.t.tree(signingKeyTree).Insert(signingKeyID, k)
	}))
}

// SetURLSigningKey sets (rotates) the URL signing key. With IfAbsent it
// only sets the first key: a key present makes it a NoOp, so two nodes
// racing to create the first key agree on one.
type SetURLSigningKey struct {
	Stamp
	Key      string `json:"key"`
	IfAbsent bool   `json:"if_absent,omitempty"`
}

func (*SetURLSigningKey) Type() CommandType { return CmdSetURLSigningKey }

// URLSigningKey returns the current URL signing key.
func (s *State) URLSigningKey() (*URLSigningKey, bool) {
	return get[*URLSigningKey](s.trees[signingKeyTree], signingKeyID)
}

// decodeSigningKey decodes standard or URL base64, padded or not.
func decodeSigningKey(key string) ([]byte, error) {
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		var b []byte
		if b, err = enc.DecodeString(key); err == nil {
			return b, nil
		}
	}
	return nil, err
}

func applySetURLSigningKey(t *tx, index uint64, c *SetURLSigningKey) Result {
	b, err := decodeSigningKey(c.Key)
	if c.Key == "" || err != nil || len(b) < MinURLSigningKeyBytes {
		return failed(Invalidf("A URL signing key must be the base64 of at least %d bytes", MinURLSigningKeyBytes))
	}
	if cur, ok := get[*URLSigningKey](t.tree(signingKeyTree), signingKeyID); ok && c.IfAbsent {
		return Result{SigningKey: cur, NoOp: true}
	}
	k := &URLSigningKey{Key: c.Key, Index: index, CreatedAt: c.Time}
	t.tree(signingKeyTree).Insert(signingKeyID, k)
	return Result{SigningKey: k}
}

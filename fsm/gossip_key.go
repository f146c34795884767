package fsm

import (
	"encoding/base64"
	"slices"
)

// The gossip keyring: the keys every node's gossip (memberlist) encrypts
// and decrypts with, and the primary one it encrypts with. Rotating the
// key goes as in Consul, one command per step: install the new key
// (every node then decrypts with it too), use it (every node encrypts
// with it), remove the old one. The keyring is replicated, so a node that
// was down during a rotation takes the current keys from the log when it
// comes back; nodes install it in their gossip after applying (package
// cluster). The state has no keyring until the first command: that one
// carries the proposing leader's own keyring, which seeds it, so that the
// key the nodes were started with is in the state and can be removed.
// Errors never name a key.

// GossipKeyring is the replicated keyring.
type GossipKeyring struct {
	// Keys are the installed keys, standard base64, in the order they were
	// installed; Primary is one of them.
	Keys    []string `json:"keys"`
	Primary string   `json:"primary"`
}

// Gossip key operations.
const (
	GossipKeyInstall = "install"
	GossipKeyUse     = "use"
	GossipKeyRemove  = "remove"
)

// MaxGossipKeys is the most keys a keyring holds: every node tries each
// on every message it cannot decrypt with the primary, and gossips a
// fingerprint of each in its metadata, which memberlist keeps small.
const MaxGossipKeys = 8

// CmdChangeGossipKey is the command type of ChangeGossipKey.
const CmdChangeGossipKey CommandType = 45

// RecordGossipKeyring is the record kind of the gossip keyring.
const RecordGossipKeyring byte = 15

var gossipKeyTree = newTree("gossip keyring") // gossipKeyringID -> *GossipKeyring

var gossipKeyringID = []byte("gossip-keyring")

func init() {
	registerCommand(CmdChangeGossipKey, applyChangeGossipKey)
	registerRecord(RecordGossipKeyring, treeRecord(gossipKeyTree, nil, func(b *Builder, k *GossipKeyring) {
		b.t.tree(gossipKeyTree).Insert(gossipKeyringID, k)
	}))
}

// ChangeGossipKey installs, uses or removes one gossip key. Current is
// the proposing leader's own keyring at proposal time, primary first; it
// seeds the state's keyring when there is none yet, and is ignored
// otherwise.
type ChangeGossipKey struct {
	Stamp
	Op      string   `json:"op"`
	Key     string   `json:"key"`
	Current []string `json:"current,omitempty"`
}

func (*ChangeGossipKey) Type() CommandType { return CmdChangeGossipKey }

// GossipKeyring returns the replicated gossip keyring (nil: none yet).
// The pointer changes exactly when the keyring does.
func (s *State) GossipKeyring() *GossipKeyring {
	k, _ := get[*GossipKeyring](s.trees[gossipKeyTree], gossipKeyringID)
	return k
}

// GossipKeyBytes decodes a gossip key: the standard base64 of 16, 24 or
// 32 bytes (an AES-128, -192 or -256 key).
func GossipKeyBytes(key string) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(b) != 16 && len(b) != 24 && len(b) != 32 {
		return nil, false
	}
	return b, true
}

// canonicalGossipKey is the one spelling of a key the keyring holds.
func canonicalGossipKey(key string) (string, *Error) {
	b, ok := GossipKeyBytes(key)
	if !ok {
		return "", Invalidf("A gossip key must be the standard base64 of 16, 24 or 32 bytes")
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

func applyChangeGossipKey(t *tx, _ uint64, c *ChangeGossipKey) Result {
	key, err := canonicalGossipKey(c.Key)
	if err != nil {
		return failed(err)
	}
	cur, seeded, err := t.gossipKeyring(c.Current)
	if err != nil {
		return failed(err)
	}
	next, err := changeKeyring(cur, c.Op, key)
	if err != nil {
		return failed(err)
	}
	if next == cur && !seeded {
		return Result{GossipKeys: cur, NoOp: true}
	}
	t.tree(gossipKeyTree).Insert(gossipKeyringID, next)
	return Result{GossipKeys: next}
}

// gossipKeyring is the state's keyring, or, when it has none, the one
// seeded from the proposer's (seeded is then set).
func (t *tx) gossipKeyring(current []string) (k *GossipKeyring, seeded bool, err *Error) {
	if k, ok := get[*GossipKeyring](t.tree(gossipKeyTree), gossipKeyringID); ok {
		return k, false, nil
	}
	if len(current) == 0 {
		return nil, false, Invalidf("Gossip encryption is off on the leader (it runs without --gossip-key-file): there is no gossip keyring to change")
	}
	k = &GossipKeyring{}
	for _, c := range current {
		key, err := canonicalGossipKey(c)
		if err != nil {
			return nil, false, err
		}
		if !slices.Contains(k.Keys, key) {
			k.Keys = append(k.Keys, key)
		}
	}
	if len(k.Keys) > MaxGossipKeys {
		return nil, false, Invalidf("A gossip keyring holds at most %d keys", MaxGossipKeys)
	}
	k.Primary = k.Keys[0]
	return k, true, nil
}

// changeKeyring returns the keyring after one operation: k itself when
// the operation changes nothing.
func changeKeyring(k *GossipKeyring, op, key string) (*GossipKeyring, *Error) {
	installed := slices.Contains(k.Keys, key)
	switch {
	case op == GossipKeyInstall && installed, op == GossipKeyUse && k.Primary == key:
		return k, nil
	case op == GossipKeyInstall && len(k.Keys) >= MaxGossipKeys:
		return nil, Invalidf("A gossip keyring holds at most %d keys: remove one first", MaxGossipKeys)
	case op == GossipKeyInstall:
		return &GossipKeyring{Keys: append(slices.Clip(k.Keys), key), Primary: k.Primary}, nil
	case op != GossipKeyUse && op != GossipKeyRemove:
		return nil, Invalidf("Invalid gossip key operation: it must be %q, %q or %q", GossipKeyInstall, GossipKeyUse, GossipKeyRemove)
	case !installed:
		return nil, Invalidf("The gossip key is not installed: install it first")
	case op == GossipKeyUse:
		return &GossipKeyring{Keys: k.Keys, Primary: key}, nil
	case k.Primary == key:
		return nil, Invalidf("The primary gossip key cannot be removed: use another key first")
	}
	return &GossipKeyring{Keys: slices.DeleteFunc(slices.Clone(k.Keys), func(s string) bool { return s == key }), Primary: k.Primary}, nil
}

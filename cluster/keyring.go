package cluster

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
)

// Gossip encryption. A node started with a gossip key file encrypts its
// gossip and accepts only messages encrypted with a key of its keyring.
// Keys rotate through the log (fsm.ChangeGossipKey): after applying, each
// node installs the replicated keyring in memberlist and keeps it in
// DATA_DIR/gossip.keyring, so that a restart, or a node that was down
// during a rotation, uses the current keys.

// keyringFile is where a node keeps the keyring it last installed.
const keyringFile = "gossip.keyring"

// openKeyring builds the keyring gossip starts with (nil: gossip is not
// encrypted, there is no key file): the keyring this node kept plus the
// key file's key, so that an operator can always bring a node back with
// the cluster's current key. The primary is the kept one, else the
// file's.
func openKeyring(dataDir, keyFile string) (*memberlist.Keyring, error) {
	if keyFile == "" {
		return nil, nil
	}
	fileKey, err := readKeyFile(keyFile)
	if err != nil {
		return nil, err
	}
	keys, primary, err := keptKeyring(dataDir)
	if err != nil {
		return nil, err
	}
	if primary == nil {
		primary = fileKey
	}
	return memberlist.NewKeyring(append(keys, fileKey), primary)
}

// keptKeyring reads the keyring this node last installed (none if it
// kept none).
func keptKeyring(dataDir string) (keys [][]byte, primary []byte, err error) {
	var k fsm.GossipKeyring
	path := filepath.Join(dataDir, keyringFile)
	found, err := readJSONFile(path, &k)
	if err == nil && found {
		keys, primary, err = decodeKeyring(&k)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("gossip keyring %s: %w (remove it to start with the key file's key alone)", path, err)
	}
	return keys, primary, nil
}

// readKeyFile reads a gossip key file: the standard base64 of a 16, 24 or
// 32-byte key, surrounding white space aside.
func readKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gossip key file: %w", err)
	}
	key, ok := fsm.GossipKeyBytes(strings.TrimSpace(string(b)))
	if !ok {
		return nil, fmt.Errorf("gossip key file %s does not hold the base64 of a 16, 24 or 32-byte key (`raftcat gossip keygen` prints one)", path)
	}
	return key, nil
}

// decodeKeyring decodes a keyring's keys and its primary.
func decodeKeyring(k *fsm.GossipKeyring) (keys [][]byte, primary []byte, err error) {
	for _, s := range k.Keys {
		b, ok := fsm.GossipKeyBytes(s)
		if !ok {
			return nil, nil, fmt.Errorf("a key is not the base64 of a 16, 24 or 32-byte key")
		}
		keys = append(keys, b)
	}
	i := slices.Index(k.Keys, k.Primary)
	if i < 0 {
		return nil, nil, fmt.Errorf("the primary key is not one of the keys")
	}
	return keys, keys[i], nil
}

// keyFingerprints are the fingerprints of a keyring's keys, the primary
// first (none for no keyring).
func keyFingerprints(ring *memberlist.Keyring) []string {
	if ring == nil {
		return nil
	}
	var fps []string
	for _, k := range ring.GetKeys() {
		fps = append(fps, clusterapi.KeyFingerprint(k))
	}
	return fps
}

// keyringLoop installs the replicated keyring whenever applying changed
// it (the state machine only signals: it does no I/O).
func (n *Node) keyringLoop() {
	var done *fsm.GossipKeyring
	for {
		select {
		case <-n.stop:
			return
		case <-n.fsm.keyringCh:
		}
		if k := n.State().GossipKeyring(); k != nil && k != done {
			n.installKeyring(k)
			done = k
		}
	}
}

// installKeyring makes memberlist's keyring the replicated one, gossips
// the new fingerprints and keeps the keyring on disk.
func (n *Node) installKeyring(k *fsm.GossipKeyring) {
	ring := n.gossip.keyring
	if ring == nil {
		n.log.Warn("the cluster has a replicated gossip keyring, but this node runs without a gossip key file: its gossip stays unencrypted")
		return
	}
	keys, primary, err := decodeKeyring(k)
	if err == nil {
		err = setKeyring(ring, keys, primary)
	}
	if err != nil {
		n.log.Error("could not install the replicated gossip keyring", "err", err)
		return
	}
	n.gossip.noteKeys()
	if err := n.ml.UpdateNode(5 * time.Second); err != nil {
		n.log.Warn("could not gossip updated metadata", "err", err)
	}
	n.log.Info("installed the replicated gossip keyring", "primary", clusterapi.KeyFingerprint(primary),
		"keys", keyFingerprints(ring))
	n.keepKeyring(k)
}

// keepKeyring writes the keyring to the data directory, readable by this
// node's user alone. A keyring that cannot be kept is logged, and gossip
// goes on with it: a restart then starts with the older keys on disk and
// the key file's, and installs the replicated keyring again once it has
// applied it.
func (n *Node) keepKeyring(k *fsm.GossipKeyring) {
	path := filepath.Join(n.cfg.DataDir, keyringFile)
	if err := writeJSONFile(path, k, 0o600); err != nil {
		n.log.Error("could not keep the gossip keyring on disk: gossip uses it, but a restart starts with the older keys until it has applied the log again",
			"path", path, "err", err)
	}
}

// setKeyring makes ring hold exactly keys and encrypt with primary.
// Keys go last first: memberlist's RemoveKey shifts the keys after the
// removed one in place, under the feet of readers of the keyring.
func setKeyring(ring *memberlist.Keyring, keys [][]byte, primary []byte) error {
	for _, k := range keys {
		if err := ring.AddKey(k); err != nil {
			return err
		}
	}
	if err := ring.UseKey(primary); err != nil {
		return err
	}
	installed := slices.Clone(ring.GetKeys())
	for i := len(installed) - 1; i > 0; i-- {
		if !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, installed[i]) }) {
			if err := ring.RemoveKey(installed[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// GossipKeyring is this node's gossip keyring, base64, the primary first
// (none when its gossip is not encrypted): what a leader proposing a key
// change carries (fsm.ChangeGossipKey.Current).
func (n *Node) GossipKeyring() []string {
	if n.gossip.keyring == nil {
		return nil
	}
	var out []string
	for _, k := range n.gossip.keyring.GetKeys() {
		out = append(out, base64.StdEncoding.EncodeToString(k))
	}
	return out
}

// GossipKeys reports each key an alive node has installed or st's
// replicated keyring holds: how many alive nodes have it installed and
// how many encrypt with it, as gossip tells. The replicated primary
// comes first, then by fingerprint.
func (n *Node) GossipKeys(st *fsm.State) clusterapi.GossipKeys {
	installed, primary, alive := n.gossip.keyHolders()
	byFP := map[string]*clusterapi.GossipKey{}
	key := func(fp string) *clusterapi.GossipKey {
		if byFP[fp] == nil {
			byFP[fp] = &clusterapi.GossipKey{Fingerprint: fp, Installed: installed[fp], Primary: primary[fp], Alive: alive}
		}
		return byFP[fp]
	}
	for fp := range installed {
		key(fp)
	}
	if k := st.GossipKeyring(); k != nil {
		for _, s := range k.Keys {
			b, _ := fsm.GossipKeyBytes(s)
			key(clusterapi.KeyFingerprint(b)).Replicated = true
			key(clusterapi.KeyFingerprint(b)).ReplicatedPrimary = s == k.Primary
		}
	}
	out := clusterapi.GossipKeys{Encrypted: n.gossip.keyring != nil, Alive: alive, Keys: []clusterapi.GossipKey{}}
	for _, k := range byFP {
		out.Keys = append(out.Keys, *k)
	}
	slices.SortFunc(out.Keys, primaryFirst)
	return out
}

// primaryFirst orders keys: the replicated primary, then by fingerprint.
func primaryFirst(a, b clusterapi.GossipKey) int {
	switch {
	case a.ReplicatedPrimary == b.ReplicatedPrimary:
		return cmp.Compare(a.Fingerprint, b.Fingerprint)
	case a.ReplicatedPrimary:
		return -1
	}
	return 1
}

package cluster

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"

	"github.com/raftcat/raftcat/clusterapi"
	"github.com/raftcat/raftcat/fsm"
)

func rawKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// setKeyring leaves exactly the given keys, the primary first, whatever
// the ring held and wherever the keys to drop were.
func TestSetKeyringHoldsExactlyTheKeys(t *testing.T) {
	a, b, c, d := rawKey(1), rawKey(2), rawKey(3), rawKey(4)
	ring, err := memberlist.NewKeyring([][]byte{b, c, d}, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ keys [][]byte }{
		{[][]byte{a, d}},    // b and c dropped from the middle
		{[][]byte{d, a, b}}, // d primary, b back
		{[][]byte{b}},
	} {
		if err := setKeyring(ring, step.keys, step.keys[0]); err != nil {
			t.Fatal(err)
		}
		got := ring.GetKeys()
		if !bytes.Equal(got[0], step.keys[0]) || len(got) != len(step.keys) {
			t.Fatalf("ring %d keys, primary %x; want %d, %x", len(got), got[0][:1], len(step.keys), step.keys[0][:1])
		}
		for _, k := range step.keys {
			if !slices.ContainsFunc(got, func(g []byte) bool { return bytes.Equal(g, k) }) {
				t.Fatalf("key %x missing", k[:1])
			}
		}
	}
}

// A node starts with the keyring it kept plus its key file's key,
// encrypting with the kept primary; without a kept keyring, with the key
// file's key alone; without a key file, unencrypted. A kept keyring that
// cannot be read stops the start, naming the file.
func TestOpenKeyring(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gossip.key")
	if err := os.WriteFile(file, []byte(" "+b64(rawKey(1))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ring, err := openKeyring(dir, ""); ring != nil || err != nil {
		t.Fatalf("no key file: %v, %v", ring, err)
	}
	ring, err := openKeyring(dir, file)
	if err != nil || len(ring.GetKeys()) != 1 || !bytes.Equal(ring.GetPrimaryKey(), rawKey(1)) {
		t.Fatalf("key file alone: %v", err)
	}
	if err := writeJSONFile(filepath.Join(dir, keyringFile), fsm.GossipKeyring{Keys: []string{b64(rawKey(2)), b64(rawKey(3))},
		Primary: b64(rawKey(3))}, 0o600); err != nil {
		t.Fatal(err)
	}
	ring, err = openKeyring(dir, file)
	if err != nil || !slices.Equal(keyFingerprints(ring), fingerprintsOf(rawKey(3), rawKey(2), rawKey(1))) {
		t.Fatalf("kept keyring and key file: %v %v", keyFingerprints(ring), err)
	}
	if err := os.WriteFile(filepath.Join(dir, keyringFile), []byte(`{"keys":["x"],"primary":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openKeyring(dir, file); err == nil || !strings.Contains(err.Error(), keyringFile) {
		t.Fatalf("a bad kept keyring: %v", err)
	}
}

func fingerprintsOf(keys ...[]byte) []string {
	var fps []string
	for _, k := range keys {
		fps = append(fps, clusterapi.KeyFingerprint(k))
	}
	return fps
}

// A message memberlist refused for its key is a warning naming the
// sender; other lines keep their level and words.
func TestKeyRefusalLines(t *testing.T) {
	msg, attrs, ok := keyRefusal("memberlist: failed to receive: no installed keys could decrypt the message from=10.0.0.7:41234")
	if !ok || !strings.Contains(msg, "no installed keys could decrypt the message") || attrs[1] != "10.0.0.7:41234" {
		t.Fatalf("%q %v %v", msg, attrs, ok)
	}
	if _, _, ok := keyRefusal("memberlist: Suspect node3 has failed, no acks received"); ok {
		t.Fatal("an unrelated line was taken for a key refusal")
	}
}

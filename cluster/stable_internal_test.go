package cluster

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

func openBolt(t *testing.T, path string) *raftboltdb.BoltStore {
	t.Helper()
	s, err := raftboltdb.NewBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every single-bit flip of a stored term or vote is detected; values an
// older release wrote still read; and an older release reads the new
// values' terms.
func TestStableValuesCarryAChecksum(t *testing.T) {
	store := openBolt(t, filepath.Join(t.TempDir(), "raft.db"))
	defer store.Close()
	s := stableWrites{StableStore: store, failed: func(string, error) {}}
	if err := s.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("GetUint64 = %d, %v", v, err)
	}
	if v, err := store.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("an older release's read = %d, %v, want 42", v, err)
	}
	if err := store.SetUint64([]byte("LastVoteTerm"), 7); err != nil { // an older release's write
		t.Fatal(err)
	}
	if v, err := s.GetUint64([]byte("LastVoteTerm")); err != nil || v != 7 {
		t.Fatalf("reading an older release's value = %d, %v", v, err)
	}
	for _, c := range []struct{ key, val string }{{"CurrentTerm", "\x00\x00\x00\x00\x00\x00\x00\x2a"}, {"LastVoteCand", "node2"}} {
		enc := encodeStable([]byte(c.key), []byte(c.val))
		for bit := 0; bit < 8*len(enc); bit++ {
			hit := append([]byte(nil), enc...)
			hit[bit/8] ^= 1 << (bit % 8)
			if err := store.Set([]byte(c.key), hit); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get([]byte(c.key)); !errors.Is(err, ErrStableDamaged) {
				t.Fatalf("%s with bit %d flipped: %v, want ErrStableDamaged", c.key, bit, err)
			}
		}
	}
}

// A node whose stored term is damaged does not start, and says so.
func TestANodeWithADamagedTermDoesNotStart(t *testing.T) {
	dir := t.TempDir()
	n, err := openSingle(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	waitLeading(t, n)
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	store := openBolt(t, filepath.Join(dir, "raft", "raft.db"))
	v, err := store.Get([]byte("CurrentTerm"))
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint64(v) == 0 {
		t.Fatalf("term not written: %x", v)
	}
	v[7] ^= 0x04
	if err := store.Set([]byte("CurrentTerm"), v); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if n, err := openSingle(t, dir); !errors.Is(err, ErrStableDamaged) {
		if n != nil {
			n.Shutdown()
		}
		t.Fatalf("opening a node whose term is damaged: %v, want ErrStableDamaged", err)
	}
}

package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// The stable store (raft.db) holds the node's current term and its vote.
// bbolt checks its own pages' structure but not their data, so a flipped
// bit in the term or the vote would be read back as another term or
// another vote, and the node would vote twice in a term or go back in
// time. Values are therefore written with a trailer: a marker and a
// checksum of key and value. A value without the trailer was written by
// an older release and is read as it is (it gets the trailer at its next
// write). An older release reads the new values too: raft-boltdb reads a
// term from the first 8 bytes, and a vote's candidate with the trailer
// only fails to match, so at worst that node does not repeat a vote.

// ErrStableDamaged means a value read from the stable store fails its
// checksum: the node does not know its term or its vote.
var ErrStableDamaged = errors.New("the raft stable store (term and vote) is damaged")

// stableMarker starts the trailer; 0xff appears in no server address
// and, as a last byte's neighbour, in no term below 2^56.
var stableMarker = []byte{0xff, 'r', 'c', 1}

const stableTrailer = 8 // marker and crc32c

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stableWrites is the stable store raft reads and writes through: values
// carry a checksum, and a failed write is told to failed before raft sees
// it (raft panics on it).
type stableWrites struct {
	raft.StableStore
	failed func(what string, err error)
}

func (s stableWrites) Set(key, val []byte) error {
	return s.checked(s.StableStore.Set(key, encodeStable(key, val)))
}

func (s stableWrites) Get(key []byte) ([]byte, error) {
	v, err := s.StableStore.Get(key)
	if err != nil {
		return nil, err
	}
	return decodeStable(key, v)
}

func (s stableWrites) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

func (s stableWrites) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil || len(v) == 0 {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: %s holds %d bytes, not a number", ErrStableDamaged, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// checkStable reads the term and the vote raft will read at start, so
// that damage is reported as such (raft's own error would not say).
func checkStable(s stableWrites) error {
	for _, key := range []string{"CurrentTerm", "LastVoteTerm"} {
		if _, err := s.GetUint64([]byte(key)); err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
			return fmt.Errorf("read %s from raft.db: %w", key, err)
		}
	}
	if _, err := s.Get([]byte("LastVoteCand")); err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return fmt.Errorf("read LastVoteCand from raft.db: %w", err)
	}
	return nil
}

func (s stableWrites) checked(err error) error {
	if err != nil {
		s.failed("stable store", err)
	}
	return err
}

// encodeStable is value, marker, crc32c(key, value).
func encodeStable(key, val []byte) []byte {
	out := append(append([]byte(nil), val...), stableMarker...)
	return binary.BigEndian.AppendUint32(out, stableSum(key, val))
}

// decodeStable checks and strips the trailer; a value without one was
// written by an older release and is returned as it is.
func decodeStable(key, v []byte) ([]byte, error) {
	n := len(v) - stableTrailer
	if n < 0 {
		return v, nil
	}
	switch differing(v[n:n+4], stableMarker) {
	case 0:
	case 1: // one byte off: the marker itself was hit
		return nil, fmt.Errorf("%w: %s has a damaged checksum marker", ErrStableDamaged, key)
	default:
		return v, nil
	}
	if stableSum(key, v[:n]) != binary.BigEndian.Uint32(v[n+4:]) {
		return nil, fmt.Errorf("%w: %s fails its checksum", ErrStableDamaged, key)
	}
	return v[:n], nil
}

// differing counts the bytes in which a and b (of one length) differ.
func differing(a, b []byte) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func stableSum(key, val []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, val)
}

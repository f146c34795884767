package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/hashicorp/raft"
)

// raft-boltdb and raft-wal check the structure of what they read back,
// not its content: a flipped bit in an entry's data, index or term would
// be served to followers and applied. So the entries they keep carry a
// checksum in raft.Log.Extensions, which raftcat does not use otherwise:
// the entry's own extensions (none so far), a marker, and crc32c of
// index, term, type, data and those extensions. It is added as an entry
// is stored and checked and stripped as it is read back, so it never
// leaves the node. An entry without extensions was written by an older
// release (which set none) and is read as it is; an older release
// reading the new entries hands the extensions to nothing that looks at
// them. The segment log checks its own records and is not wrapped.

// entryMarker starts an entry's checksum trailer.
var entryMarker = []byte{0xff, 'r', 'c', 'l', 1}

const entryTrailer = 9 // marker and crc32c

// checkedLog stores entries with a checksum and verifies it on read.
type checkedLog struct {
	raft.LogStore
}

func (s checkedLog) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores copies of logs with the trailer: raft keeps the
// originals (in its cache, in flight to followers) and reads them on.
func (s checkedLog) StoreLogs(logs []*raft.Log) error {
	out := make([]*raft.Log, len(logs))
	for i, l := range logs {
		c := *l
		c.Extensions = sealEntry(l)
		out[i] = &c
	}
	return s.LogStore.StoreLogs(out)
}

// GetLog reads an entry and checks it; a damaged one is ErrLogDamaged.
func (s checkedLog) GetLog(index uint64, l *raft.Log) error {
	if err := s.LogStore.GetLog(index, l); err != nil {
		return err
	}
	return openEntry(index, l)
}

// IsMonotonic is the store's (raft.MonotonicLogStore).
func (s checkedLog) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// sealEntry is l's extensions followed by the trailer.
func sealEntry(l *raft.Log) []byte {
	ext := make([]byte, 0, len(l.Extensions)+entryTrailer)
	ext = append(append(ext, l.Extensions...), entryMarker...)
	return binary.BigEndian.AppendUint32(ext, entrySum(l.Index, l.Term, l.Type, l.Data, l.Extensions))
}

// openEntry checks and strips l's trailer. An entry without extensions
// was written by an older release; any other must end in a good trailer
// (raftcat sets no extensions of its own).
func openEntry(index uint64, l *raft.Log) error {
	if len(l.Extensions) == 0 {
		return checkIndex(index, l)
	}
	n := len(l.Extensions) - entryTrailer
	if n < 0 || differing(l.Extensions[n:n+len(entryMarker)], entryMarker) != 0 {
		return fmt.Errorf("%w: raft log entry %d has a damaged checksum", ErrLogDamaged, index)
	}
	ext, sum := l.Extensions[:n], binary.BigEndian.Uint32(l.Extensions[n+len(entryMarker):])
	if entrySum(l.Index, l.Term, l.Type, l.Data, ext) != sum {
		return fmt.Errorf("%w: raft log entry %d fails its checksum", ErrLogDamaged, index)
	}
	l.Extensions = nil
	if n > 0 {
		l.Extensions = ext
	}
	return checkIndex(index, l)
}

// checkIndex refuses an entry that is not the one asked for.
func checkIndex(index uint64, l *raft.Log) error {
	if l.Index != index {
		return fmt.Errorf("%w: raft log entry %d reads back as entry %d", ErrLogDamaged, index, l.Index)
	}
	return nil
}

func entrySum(index, term uint64, typ raft.LogType, data, ext []byte) uint32 {
	var head [17]byte
	binary.BigEndian.PutUint64(head[:], index)
	binary.BigEndian.PutUint64(head[8:], term)
	head[16] = byte(typ)
	sum := crc32.Update(crc32.Checksum(head[:], castagnoli), castagnoli, data)
	return crc32.Update(sum, castagnoli, ext)
}

// verifyLog reads every entry of logs back, so that a node whose log was
// damaged while it was down refuses to start instead of halting on the
// damage later (or serving it). An entry the store cannot read back at
// all is damage too (raft-wal v0.4.0 can lose a sealed segment's index
// when killed: "sealed segment has no index block").
func verifyLog(logs raft.LogStore) error {
	first, err := logs.FirstIndex()
	if err != nil {
		return err
	}
	last, err := logs.LastIndex()
	if err != nil || last == 0 {
		return err
	}
	var l raft.Log
	for i := first; i <= last; i++ {
		err := logs.GetLog(i, &l)
		switch {
		case err == nil, errors.Is(err, raft.ErrLogNotFound):
		case errors.Is(err, ErrLogDamaged):
			return err
		default: // the store cannot read its own files back
			return fmt.Errorf("%w: reading entry %d of %d–%d: %w", ErrLogDamaged, i, first, last, err)
		}
	}
	return nil
}

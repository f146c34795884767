package raftlog

import (
	"encoding/binary"
	"hash/crc32"
)

// The synced-through mark. The last two sectors of a segment (its
// trailer) hold two slots for a mark that says the segment's records up
// to an offset were on disk; the trailer's last bytes name the format
// (segments made before the trailer have none, and records may run to
// their end). After a sync round the store writes the newest segment's
// mark, in the slot its count picks, without syncing it: the next sync of
// the segment (the next round, a truncation, Close) takes it to disk. The
// mark on disk therefore trails the data by at most one round, and never
// claims more than was on disk when it was written. Two slots, each a
// sector, mean a write of one torn by a crash leaves the other.
//
// A truncation that cuts records below the mark lowers the mark and
// syncs it before zeroing them, so the mark never points past records
// that were meant to go.
//
// The mark lives in the segment it describes rather than in a file of its
// own: a file of its own would need its own fdatasync in every round (a
// second device flush on the write path), where the segment's one sync
// takes the mark along. Segments without a trailer (made before it) have
// no mark; their damage past the last sync is told by structure only.

const (
	trailerLen   = 2 * sectorSize
	trailerMagic = "rlmark01"
	markLen      = 4 + 5*8 // crc, count, seq, base, end, last
)

// syncMark says a segment's records up to end (whose last index is
// last) were on disk. Of the two slots, the one with the higher count is
// the newer.
type syncMark struct {
	count uint64
	end   int64
	last  uint64
}

// readTrailer reads g's trailer, if it has one: limit then ends the
// records before it, and mark is the newer of its valid slots.
func (g *segment) readTrailer() error {
	if g.size < trailerLen {
		return nil
	}
	b := make([]byte, trailerLen)
	if _, err := g.f.ReadAt(b, g.size-trailerLen); err != nil {
		return err
	}
	if string(b[trailerLen-len(trailerMagic):]) != trailerMagic {
		return nil
	}
	g.limit = g.size - trailerLen
	for slot := 0; slot < 2; slot++ {
		if m, ok := g.decodeMark(b[slot*sectorSize:]); ok && m.count > g.mark.count {
			g.mark = m
		}
	}
	return nil
}

func (g *segment) encodeMark(m syncMark) []byte {
	b := make([]byte, 4, markLen)
	for _, v := range []uint64{m.count, g.seq, g.base, uint64(m.end), m.last} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
	return b
}

// decodeMark reads a slot: a mark of this segment whose checksum holds.
func (g *segment) decodeMark(b []byte) (syncMark, bool) {
	le := binary.LittleEndian
	if crc32.Checksum(b[4:markLen], castagnoli) != le.Uint32(b) || le.Uint64(b[12:]) != g.seq || le.Uint64(b[20:]) != g.base {
		return syncMark{}, false
	}
	m := syncMark{count: le.Uint64(b[4:]), end: int64(le.Uint64(b[28:])), last: le.Uint64(b[36:])}
	return m, m.count > 0 && m.end <= g.limit
}

// writeMark writes, without syncing, that g's records up to end (index
// last) are on disk. A segment without a trailer has no mark.
func (g *segment) writeMark(end int64, last uint64) error {
	if g.limit == g.size {
		return nil
	}
	m := syncMark{count: g.mark.count + 1, end: end, last: last}
	if _, err := g.f.WriteAt(g.encodeMark(m), g.limit+int64(m.count%2)*sectorSize); err != nil {
		return err
	}
	g.mark, g.markUnsynced = m, true
	return nil
}

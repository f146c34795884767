package raftlog

import (
	"encoding/binary"
	"hash/crc32"
	"time"

	"github.com/hashicorp/raft"
)

// A record is one log entry in a segment file:
//
//	crc   uint32  CRC-32C of everything after it, seeded with the previous
//	              record's crc (the segment's seed for its first record)
//	size  uint32  bytes after the 8-byte header
//	index uint64, term uint64, type uint8, appended-at int64 (Unix ns),
//	data length uint32, data, extensions (the rest)
//
// Little-endian throughout. A header of zeros (size 0) ends the segment:
// segments are zero-filled before use. Chaining the checksums means a
// record left over from before a truncation never passes for the
// continuation of the records written over it.
const (
	headerLen = 8
	fixedLen  = 8 + 8 + 1 + 8 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// seed is the chain value a segment's first record continues from: its
// sequence number and base index, so a record never passes for one of
// another segment.
func seed(seq, base uint64) uint32 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], seq)
	binary.LittleEndian.PutUint64(b[8:], base)
	return crc32.Checksum(b[:], castagnoli)
}

// recordLen is the size of l's record.
func recordLen(l *raft.Log) int { return headerLen + fixedLen + len(l.Data) + len(l.Extensions) }

// appendRecord appends l's record, chained to prev, and returns its crc.
func appendRecord(dst []byte, l *raft.Log, prev uint32) ([]byte, uint32) {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(recordLen(l)-headerLen))
	dst = binary.LittleEndian.AppendUint64(dst, l.Index)
	dst = binary.LittleEndian.AppendUint64(dst, l.Term)
	dst = append(dst, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(at))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = append(dst, l.Extensions...)
	crc := crc32.Update(prev, castagnoli, dst[start+4:])
	binary.LittleEndian.PutUint32(dst[start:], crc)
	return dst, crc
}

// recordSize reads a record header's size; 0 means no record.
func recordSize(header []byte) int { return int(binary.LittleEndian.Uint32(header[4:])) }

// checkRecord reports whether rec (header included) is a whole record
// chained to prev, and returns its crc.
func checkRecord(rec []byte, prev uint32) (uint32, bool) {
	if len(rec) < headerLen+fixedLen || recordSize(rec) != len(rec)-headerLen {
		return 0, false
	}
	crc := binary.LittleEndian.Uint32(rec)
	if crc32.Update(prev, castagnoli, rec[4:]) != crc {
		return 0, false
	}
	dataLen := int(binary.LittleEndian.Uint32(rec[headerLen+25:]))
	return crc, dataLen <= len(rec)-headerLen-fixedLen
}

// decodeRecord fills l from a checked record. Data and Extensions share
// rec's memory.
func decodeRecord(rec []byte, l *raft.Log) {
	b := rec[headerLen:]
	l.Index = binary.LittleEndian.Uint64(b)
	l.Term = binary.LittleEndian.Uint64(b[8:])
	l.Type = raft.LogType(b[16])
	l.AppendedAt = time.Time{}
	if at := int64(binary.LittleEndian.Uint64(b[17:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	dataLen := int(binary.LittleEndian.Uint32(b[25:]))
	rest := b[fixedLen:]
	l.Data = rest[:dataLen:dataLen]
	l.Extensions = nil
	if len(rest) > dataLen {
		l.Extensions = rest[dataLen:]
	}
}

// recordIndex is a record's log index.
func recordIndex(rec []byte) uint64 { return binary.LittleEndian.Uint64(rec[headerLen:]) }

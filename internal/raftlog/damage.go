package raftlog

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrDamaged is wrapped by the errors for a log that lost entries it had
// on disk: a record that was synced no longer reads back. Such a log must
// not be used: a node that restarted with it would vote and acknowledge
// as if it had never held the lost entries. The store never truncates or
// zeroes a damaged record; the node must be rebuilt from the cluster.
var ErrDamaged = errors.New("raftlog: the log is damaged")

// sectorSize is the smallest unit a crash can leave of a write: each
// 512-byte sector of it is either written or as it was.
const sectorSize = 512

// rebuild is what an operator does about a damaged log.
const rebuild = "do not start this node with this log: remove it from the cluster, clear its data directory and let it rejoin"

// checkEnds tells, for each segment, whether the record that ended its
// scan is the normal end of its records or damage. A segment other than
// the newest was synced whole before the next was begun: it must end
// exactly where the next one starts.
func (s *Store) checkEnds() error {
	for i, g := range s.segs {
		if i == len(s.segs)-1 {
			return g.checkNewestEnd()
		}
		if next := s.segs[i+1].base; g.next() != next {
			return g.damaged(next-1, "were on disk")
		}
	}
	return nil
}

// checkNewestEnd tells a write a crash tore from damage at the end of
// the newest segment's records. Up to its synced-through mark, records
// were on disk: any that does not read back is damage. Past it, a record
// whose header gives a size within the segment and whose every sector
// holds a non-zero byte of it was written whole (a torn write leaves a
// sector of it as it was before, zeros: every region a record is written
// to is zeroed and synced first), so if it does not check, it is damage.
// Anything else there is a torn write, dropped (clearPastEnd). Structure
// can only err towards torn: a damaged record past the mark whose data
// has a whole sector of zeros, or whose size was damaged past the end,
// is dropped as torn; the mark limits that to the last round's records.
func (g *segment) checkNewestEnd() error {
	if g.end() < g.mark.end {
		return g.damaged(g.mark.last, "were on disk")
	}
	whole, err := g.writtenWhole(g.end())
	if err != nil || !whole {
		return err
	}
	return g.damaged(0, "were written whole (not torn by a crash)")
}

// writtenWhole reports whether the record at off has a size within the
// segment and a non-zero byte in each sector it spans.
func (g *segment) writtenWhole(off int64) (bool, error) {
	if off+headerLen > g.limit {
		return false, nil
	}
	h := make([]byte, headerLen)
	if _, err := g.f.ReadAt(h, off); err != nil {
		return false, err
	}
	n := int64(recordSize(h))
	if n < fixedLen || off+headerLen+n > g.limit {
		return false, nil
	}
	rec := make([]byte, headerLen+n)
	if _, err := g.f.ReadAt(rec, off); err != nil {
		return false, err
	}
	for i := int64(0); i < int64(len(rec)); {
		j := min(int64(len(rec)), i+sectorSize-(off+i)%sectorSize)
		if bytes.Count(rec[i:j], []byte{0}) == int(j-i) {
			return false, nil
		}
		i = j
	}
	return true, nil
}

// damaged is the error for g's records from its end on, up to index last
// (0: as far as is known, the segment's end), lost although they were
// (what was) on disk.
func (g *segment) damaged(last uint64, was string) error {
	lost := fmt.Sprintf("entries from %d on", g.next())
	if last >= g.next() {
		lost = fmt.Sprintf("entries %d to %d", g.next(), last)
	}
	return fmt.Errorf("%w: %s: the record at offset %d does not read back: %s %s and are lost; %s",
		ErrDamaged, g.path, g.end(), lost, was, rebuild)
}

package raftlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// flip xors the byte at off in the segment file of base in dir with x.
func flip(t *testing.T, dir string, base uint64, off int64, x byte) {
	t.Helper()
	path := segmentPath(t, dir, base)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= x
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func segmentPath(t *testing.T, dir string, base uint64) string {
	t.Helper()
	ids, err := listSegments(osFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if id.base == base {
			return filepath.Join(dir, segmentName(id.seq, id.base))
		}
	}
	t.Fatalf("no segment at %d in %v", base, ids)
	return ""
}

// openDamaged opens dir and checks it is refused as damaged, with a
// message naming want.
func openDamaged(t *testing.T, dir string, want ...string) {
	t.Helper()
	s, err := Open(dir, Options{SegmentSize: 1 << 20})
	if err == nil {
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		s.Close()
		t.Fatalf("a damaged log opened, holding %d-%d", first, last)
	}
	if !errors.Is(err, ErrDamaged) {
		t.Fatalf("open of a damaged log: %v, not ErrDamaged", err)
	}
	for _, w := range append(want, "rejoin") {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("the error does not name %q: %v", w, err)
		}
	}
}

// TestAFlippedByteInASyncedEntryIsDamage: a log that lost an entry it
// had on disk is refused, not shortened to the entries before it (a node
// would vote with a log missing entries it had acknowledged).
func TestAFlippedByteInASyncedEntryIsDamage(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	storeTens(t, s, 1, 50)
	off := s.segs[0].offs[19] + headerLen + fixedLen + 3 // entry 20's data
	s.Close()
	flip(t, dir, 1, off, 0x10)
	openDamaged(t, dir, segmentPath(t, dir, 1), fmt.Sprintf("offset %d", s.segs[0].offs[19]), "20")
}

// TestALostSyncedLastRecordIsDamage: the newest segment's last record,
// synced and then marked synced by the next round, is damage when it no
// longer reads back, even in ways a torn write could look: a size past
// the segment's end, or its first sector zeros.
func TestALostSyncedLastRecordIsDamage(t *testing.T) {
	for _, damage := range []struct {
		name string
		do   func(t *testing.T, dir string, off int64)
	}{
		{"size past the end", func(t *testing.T, dir string, off int64) { flip(t, dir, 1, off+7, 0x40) }},
		{"first sector zeros", func(t *testing.T, dir string, off int64) {
			zeroAt(t, segmentPath(t, dir, 1), off, sectorSize-off%sectorSize)
		}},
	} {
		t.Run(damage.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, 1<<20)
			storeTens(t, s, 1, 50)
			off := s.segs[0].offs[49]
			if err := s.Close(); err != nil { // the round after the last write's
				t.Fatal(err)
			}
			damage.do(t, dir, off)
			openDamaged(t, dir, fmt.Sprintf("offset %d", off), "50")
		})
	}
}

func zeroAt(t *testing.T, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, n), off); err != nil {
		t.Fatal(err)
	}
}

// writeTorn writes b at off in g's file as a crash could leave it: only
// the 512-byte sectors keep says.
func writeTorn(t *testing.T, g *segment, b []byte, off int64, keep func(sector int64) bool) {
	t.Helper()
	for i := int64(0); i < int64(len(b)); {
		n := min(int64(len(b))-i, sectorSize-(off+i)%sectorSize)
		if keep((off + i) / sectorSize) {
			if _, err := g.f.WriteAt(b[i:i+n], off+i); err != nil {
				t.Fatal(err)
			}
		}
		i += n
	}
}

// records returns the records of logs as they would follow g's last.
func records(g *segment, logs []*raft.Log) (b []byte, offs []int64) {
	tail := g.tail()
	for _, l := range logs {
		offs = append(offs, g.end()+int64(len(b)))
		b, tail = appendRecord(b, l, tail)
	}
	return b, offs
}

// TestATornUnsyncedTailIsDropped: a write past the last sync that a
// crash tore (some sectors still zeros, later ones written) ends the log
// at its first record not whole, and what follows is cleared: writing
// the same entries again holds them, not the old records after them.
func TestATornUnsyncedTailIsDropped(t *testing.T) {
	for _, lost := range []int64{0, 2} { // the write's first sector, its third
		t.Run(fmt.Sprintf("sector %d lost", lost), func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, 1<<20)
			storeTens(t, s, 1, 20)
			g := s.segs[0]
			b, offs := records(g, entries(21, 40))
			first := g.end() / sectorSize
			writeTorn(t, g, b, g.end(), func(sector int64) bool { return sector != first+lost })
			want := uint64(20)
			for k, off := range offs {
				if end := off + int64(recordLen(entry(21+uint64(k)))); end <= (first+lost)*sectorSize {
					want = 21 + uint64(k)
				}
			}
			s = reopen(t, s, 1<<20)
			expect(t, s, 1, want, nil)
			storeTens(t, s, want+1, 40)
			expect(t, reopen(t, s, 1<<20), 1, 40, nil)
		})
	}
}

// TestAFlipPastTheSyncedMarkIsDamageWhenTheRecordIsWhole: past what the
// newest segment is marked synced through, a record whose every sector
// was written (none is still zeros) but that does not check was not torn
// by a crash: it is damage.
func TestAFlipPastTheSyncedMarkIsDamageWhenTheRecordIsWhole(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	storeTens(t, s, 1, 20)
	g := s.segs[0]
	b, offs := records(g, entries(21, 30))
	b[offs[3]-offs[0]+headerLen+2] ^= 1 // entry 24's index
	if _, err := g.f.WriteAt(b, g.end()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	openDamaged(t, dir, fmt.Sprintf("offset %d", offs[3]), "24")
}

// TestRandomFlipsInSyncedDataAreNeverAShorterLog: a byte flipped
// anywhere in a synced log's segments is refused as damage, or, landing
// in the zeros or the mark after the records, may leave the log whole;
// the log never opens shorter.
func TestRandomFlipsInSyncedDataAreNeverAShorterLog(t *testing.T) {
	src := t.TempDir()
	s := open(t, src, 4096)
	storeTens(t, s, 1, 150)
	ends := map[uint64]int64{}
	for _, g := range s.segs {
		ends[g.base] = g.end()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ids, _ := listSegments(osFS{}, src)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		id := ids[rng.IntN(len(ids))]
		dir := copyDir(t, src)
		path := filepath.Join(dir, segmentName(id.seq, id.base))
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		off := rng.Int64N(st.Size())
		if trial%2 == 0 { // half of them in records
			off = rng.Int64N(ends[id.base])
		}
		flip(t, dir, id.base, off, byte(1+rng.IntN(255)))
		checkFlipped(t, dir, id.base, off, off < ends[id.base])
		os.RemoveAll(dir)
	}
}

// checkFlipped checks the log in dir, a flip at off in segment base:
// damage, or the whole log (only if the flip missed the records).
func checkFlipped(t *testing.T, dir string, base uint64, off int64, inRecords bool) {
	t.Helper()
	s, err := Open(dir, Options{SegmentSize: 4096})
	switch {
	case errors.Is(err, ErrDamaged):
		return
	case err != nil:
		t.Fatalf("flip at %d of segment %d: %v", off, base, err)
	}
	defer s.Close()
	if inRecords {
		t.Fatalf("flip at %d in the records of segment %d: the log opened", off, base)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 1 || last != 150 {
		t.Fatalf("flip at %d past the records of segment %d: the log holds %d-%d", off, base, first, last)
	}
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestSegmentsWithoutATrailerStillOpen: segments made before the trailer
// (no format tag at their end) are read as before, records running to
// their end, and without a mark.
func TestSegmentsWithoutATrailerStillOpen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	store(t, s, 1, 10)
	s.Close()
	path := segmentPath(t, dir, 1)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	zeroAt(t, path, st.Size()-trailerLen, trailerLen) // as a segment made before the trailer
	s = open(t, dir, 4096)
	expect(t, s, 1, 10, nil)
	if g := s.segs[0]; g.limit != g.size {
		t.Fatalf("a segment without a trailer keeps its last %d bytes from records", g.size-g.limit)
	}
	storeTens(t, s, 11, 200) // fills it to its end, then goes on in new ones
	s = reopen(t, s, 4096)
	expect(t, s, 1, 200, nil)
	if g := s.segs[0]; g.end() <= st.Size()-trailerLen {
		t.Fatalf("records of the segment without a trailer end at %d, not in its last %d bytes", g.end(), trailerLen)
	}
}

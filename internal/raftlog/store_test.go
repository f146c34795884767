package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func entry(i uint64) *raft.Log {
	l := &raft.Log{Index: i, Term: 1 + i/10, Type: raft.LogCommand,
		Data: bytes.Repeat([]byte{byte(i)}, int(i%97)), AppendedAt: time.Unix(1700000000, int64(i)).UTC()}
	if i%3 == 0 {
		l.Extensions = []byte(fmt.Sprintf("ext-%d", i))
	}
	return l
}

func entries(from, to uint64) []*raft.Log {
	var ls []*raft.Log
	for i := from; i <= to; i++ {
		ls = append(ls, entry(i))
	}
	return ls
}

func open(t *testing.T, dir string, size int64) *Store {
	t.Helper()
	s, err := Open(dir, Options{SegmentSize: size})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func store(t *testing.T, s *Store, from, to uint64) {
	t.Helper()
	if err := s.StoreLogs(entries(from, to)); err != nil {
		t.Fatal(err)
	}
}

// storeTens stores from..to in batches of ten, as raft would.
func storeTens(t *testing.T, s *Store, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i += 10 {
		store(t, s, i, min(i+9, to))
	}
}

// expect checks the store holds exactly first..last, each entry as made
// by entry (or by made, for the indexes it knows).
func expect(t *testing.T, s *Store, first, last uint64, made map[uint64]*raft.Log) {
	t.Helper()
	f, _ := s.FirstIndex()
	l, _ := s.LastIndex()
	if f != first || l != last {
		t.Fatalf("bounds %d-%d, want %d-%d", f, l, first, last)
	}
	for i := first; i <= last && last > 0; i++ {
		var got raft.Log
		if err := s.GetLog(i, &got); err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
		want := entry(i)
		if m, ok := made[i]; ok {
			want = m
		}
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) ||
			!bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("entry %d: got %+v, want %+v", i, got, want)
		}
	}
	for _, i := range []uint64{first - 1, last + 1} {
		if err := s.GetLog(i, &raft.Log{}); i > 0 && !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("get %d outside %d-%d: %v", i, first, last, err)
		}
	}
}

func reopen(t *testing.T, s *Store, size int64) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return open(t, s.dir, size)
}

// segments returns the bases of dir's segment files, oldest first.
func segments(t *testing.T, dir string) []uint64 {
	t.Helper()
	ids, err := listSegments(osFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []uint64
	for _, id := range ids {
		bases = append(bases, id.base)
	}
	return bases
}

func TestStoreAndReopenAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	expect(t, s, 0, 0, nil)
	storeTens(t, s, 1, 200)
	expect(t, s, 1, 200, nil)
	if n := len(segments(t, dir)); n < 3 {
		t.Fatalf("%d segments of 4 KiB for 200 entries", n)
	}
	s = reopen(t, s, 4096)
	expect(t, s, 1, 200, nil)
	store(t, s, 201, 201)
	expect(t, reopen(t, s, 4096), 1, 201, nil)
}

func TestABatchLargerThanASegmentGetsItsOwn(t *testing.T) {
	s := open(t, t.TempDir(), 1024)
	big := &raft.Log{Index: 1, Term: 1, Data: bytes.Repeat([]byte("x"), 5000)}
	if err := s.StoreLogs([]*raft.Log{big}); err != nil {
		t.Fatal(err)
	}
	store(t, s, 2, 3)
	for _, g := range s.segs { // made large enough: a write never grows a file
		if st, err := g.f.Stat(); err != nil || st.Size() < g.end()+headerLen {
			t.Fatalf("segment %d: %d bytes hold records to %d: %v", g.base, st.Size(), g.end(), err)
		}
	}
	expect(t, reopen(t, s, 1024), 1, 3, map[uint64]*raft.Log{1: big})
}

func TestTruncatedTailStaysTruncated(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	storeTens(t, s, 1, 150)
	if err := s.DeleteRange(60, 150); err != nil {
		t.Fatal(err)
	}
	expect(t, s, 1, 59, nil)
	s = reopen(t, s, 4096)
	expect(t, s, 1, 59, nil)

	// Entries of a new term written over the dropped ones, shorter than
	// them: what is left of the old ones after them never comes back.
	newer := map[uint64]*raft.Log{}
	var batch []*raft.Log
	for i := uint64(60); i <= 70; i++ {
		newer[i] = &raft.Log{Index: i, Term: 99, Type: raft.LogCommand, Data: []byte{1}}
		batch = append(batch, newer[i])
	}
	if err := s.StoreLogs(batch); err != nil {
		t.Fatal(err)
	}
	expect(t, reopen(t, s, 4096), 1, 70, newer)
}

func TestTruncateToASegmentsStart(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	storeTens(t, s, 1, 150)
	bases := segments(t, dir)
	cut := bases[len(bases)-2]
	if err := s.DeleteRange(cut, 150); err != nil {
		t.Fatal(err)
	}
	expect(t, s, 1, cut-1, nil)
	store(t, s, cut, cut+4)
	expect(t, reopen(t, s, 4096), 1, cut+4, nil)
}

// TestACutWriteIsDroppedOnReopen: a write a crash cut short (its first
// sectors on disk, the rest still zeros) is dropped, and the entry can be
// written again.
func TestACutWriteIsDroppedOnReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	store(t, s, 1, 20)
	g := s.segs[0]
	big := bigEntries(21, 21)
	rec, _ := records(g, big)
	cut := (g.end()/sectorSize + 1) * sectorSize // the record's first sector only
	writeTorn(t, g, rec, g.end(), func(sector int64) bool { return sector < cut/sectorSize })
	s = reopen(t, s, 1<<20)
	expect(t, s, 1, 20, nil)
	if err := s.StoreLogs(big); err != nil {
		t.Fatal(err)
	}
	expect(t, reopen(t, s, 1<<20), 1, 21, map[uint64]*raft.Log{21: big[0]})
}

// bigEntries are entries of 600 bytes of data, more than a sector.
func bigEntries(from, to uint64) []*raft.Log {
	var ls []*raft.Log
	for i := from; i <= to; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, 600)})
	}
	return ls
}

// TestRecordsPastTheEndStayDropped: a log whose newest segment stops at
// a torn record (records after it on disk, as sectors of one write may
// persist out of order) ends there after a restart, and what lies past
// that end is zeroed then: writing the torn entry again must not make the
// old records after it valid again.
func TestRecordsPastTheEndStayDropped(t *testing.T) {
	s := open(t, t.TempDir(), 1<<20)
	store(t, s, 1, 5)
	g := s.segs[0]
	big := bigEntries(6, 10)
	recs, offs := records(g, big)
	lost := g.end() / sectorSize // entry 6's first sector; 7-10 start after it
	if offs[1]/sectorSize == lost {
		t.Fatal("entry 7 starts in entry 6's first sector")
	}
	writeTorn(t, g, recs, g.end(), func(sector int64) bool { return sector != lost })
	s = reopen(t, s, 1<<20)
	expect(t, s, 1, 5, nil)
	if err := s.StoreLogs(big[:1]); err != nil { // the same entry again
		t.Fatal(err)
	}
	expect(t, reopen(t, s, 1<<20), 1, 6, map[uint64]*raft.Log{6: big[0]})
}

func TestADamagedRecordIsAnErrorWhenRead(t *testing.T) {
	s := open(t, t.TempDir(), 1<<20)
	store(t, s, 1, 20)
	g := s.segs[0]
	if _, err := g.f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff}, g.offs[9]+headerLen+25); err != nil { // index 10's data length
		t.Fatal(err)
	}
	if err := s.GetLog(10, &raft.Log{}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a damaged entry read back: %v, not ErrDamaged", err)
	}
	for _, i := range []uint64{9, 11} { // the others read well
		if err := s.GetLog(i, &raft.Log{}); err != nil {
			t.Fatalf("get %d beside a damaged entry: %v", i, err)
		}
	}
}

func TestADamagedSegmentBeforeTheNewestIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	storeTens(t, s, 1, 150)
	s.Close()
	ids, _ := listSegments(osFS{}, dir)
	path := filepath.Join(dir, segmentName(ids[0].seq, ids[0].base))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, 200); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Open(dir, Options{SegmentSize: 4096}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a log with a damaged middle opened, or failed otherwise: %v", err)
	}
}

func TestDeletePrefixRemovesWholeSegments(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	storeTens(t, s, 1, 150)
	before := segments(t, dir)
	cut := before[2] + 1 // one entry into the third segment
	if err := s.DeleteRange(1, cut); err != nil {
		t.Fatal(err)
	}
	expect(t, s, cut+1, 150, nil)
	after := segments(t, dir)
	if len(after) != len(before)-2 || after[0] != before[2] {
		t.Fatalf("segments %v after deleting to %d, were %v", after, cut, before)
	}
	expect(t, reopen(t, s, 4096), before[2], 150, nil) // the rest of the third segment
}

func TestDeleteAllThenStoreAfterAGap(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	store(t, s, 1, 50)
	newest := s.segs[len(s.segs)-1].seq
	if err := s.DeleteRange(1, 50); err != nil {
		t.Fatal(err)
	}
	expect(t, s, 0, 0, nil)
	if cleared, err := readCleared(osFS{}, dir); err != nil || cleared != newest {
		t.Fatalf("cleared file holds %d (%v), want the newest segment %d", cleared, err, newest)
	}
	if got := segments(t, dir); len(got) != 0 {
		t.Fatalf("segments %v after deleting everything", got)
	}
	store(t, s, 500, 510)
	expect(t, s, 500, 510, nil)
	store(t, s, 900, 901) // after a gap: replaces the log
	expect(t, reopen(t, s, 4096), 900, 901, nil)
}

// TestAnEmptyNewestSegmentTakesAnyIndex: a crash right after a segment
// was made for an empty log (a node's first entries after a snapshot)
// leaves it empty; entries after a newer snapshot go to a new one.
func TestAnEmptyNewestSegmentTakesAnyIndex(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	if _, err := s.roll(100, 0); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, 4096)
	expect(t, s, 0, 0, nil)
	store(t, s, 40, 45) // below the empty segment's base
	expect(t, s, 40, 45, nil)
	expect(t, reopen(t, s, 4096), 40, 45, nil)
}

// TestDeletingTheLogSurvivesACrash: once the cleared file is written,
// segments a crash left undeleted are no part of the log.
func TestDeletingTheLogSurvivesACrash(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	storeTens(t, s, 1, 150)
	if err := writeCleared(osFS{}, dir, s.segs[len(s.segs)-1].seq); err != nil { // then the crash
		t.Fatal(err)
	}
	s = reopen(t, s, 4096)
	expect(t, s, 0, 0, nil)
	if got := segments(t, dir); len(got) != 0 {
		t.Fatalf("segments %v left after reopening a deleted log", got)
	}
	store(t, s, 40, 45) // below the old log's end
	expect(t, reopen(t, s, 4096), 40, 45, nil)
}

func TestRefusesWhatDoesNotContinueTheLog(t *testing.T) {
	s := open(t, t.TempDir(), 4096)
	store(t, s, 1, 10)
	for _, bad := range [][]*raft.Log{entries(5, 6), entries(10, 11), {entry(11), entry(13)}} {
		if err := s.StoreLogs(bad); err == nil {
			t.Fatalf("stored %d-%d over a log ending at 10", bad[0].Index, bad[len(bad)-1].Index)
		}
	}
	if err := s.DeleteRange(3, 5); err == nil {
		t.Fatal("deleted from the middle")
	}
	expect(t, s, 1, 10, nil)
}

func TestReadOnlyOpenChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	storeTens(t, s, 1, 100)
	ids, _ := listSegments(osFS{}, dir)
	if err := writeCleared(osFS{}, dir, ids[0].seq); err != nil { // as if a deletion had not removed the oldest
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, "segment-1.tmp"), []byte("left by a crash"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := listing(t, dir)
	ro, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ro, ids[1].base, 100, nil)
	if err := ro.StoreLogs(entries(101, 101)); err == nil {
		t.Fatal("a read-only store stored")
	}
	if err := ro.DeleteRange(1, 100); err == nil {
		t.Fatal("a read-only store deleted")
	}
	ro.Close()
	if after := listing(t, dir); after != before {
		t.Fatalf("reading the log changed its directory:\n%s\nthen\n%s", before, after)
	}
}

// listing describes dir's files: names, sizes, modification times.
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d %s\n", e.Name(), info.Size(), info.ModTime())
	}
	return b.String()
}

// TestReadsWhileWriting: raft reads entries to replicate while it
// writes, and compacts the log from its snapshot goroutine.
func TestReadsWhileWriting(t *testing.T) {
	s := open(t, t.TempDir(), 8192)
	store(t, s, 1, 10)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !isDone(done) {
				first, _ := s.FirstIndex()
				last, _ := s.LastIndex()
				var l raft.Log
				err := s.GetLog(last, &l)
				if err == nil && l.Index != last {
					t.Errorf("read %d for %d", l.Index, last)
				} else if err != nil && !errors.Is(err, raft.ErrLogNotFound) {
					t.Error(err)
				}
				if err := s.GetLog(first, &l); err != nil && !errors.Is(err, raft.ErrLogNotFound) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // compaction
		defer wg.Done()
		for !isDone(done) {
			first, _ := s.FirstIndex()
			if last, _ := s.LastIndex(); last > first+400 {
				if err := s.DeleteRange(first, last-200); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	for i := uint64(11); i < 3000; i += 5 {
		store(t, s, i, i+4)
	}
	close(done)
	wg.Wait()
	expect(t, reopen(t, s, 8192), segmentsFirst(t, s), 3000, nil)
}

func isDone(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// segmentsFirst is the first index a reopened s holds: its oldest
// segment's base.
func segmentsFirst(t *testing.T, s *Store) uint64 { return segments(t, s.dir)[0] }

// TestAFailedWriteStopsWrites: after a write fails, part of it may be on
// disk, so the store takes no more writes, even once the file works again;
// a reopen reads what is there and writes go on.
func TestAFailedWriteStopsWrites(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	store(t, s, 1, 10)
	g := s.segs[len(s.segs)-1]
	g.f.Close() // the next write fails
	if err := s.StoreLogs(entries(11, 12)); err == nil {
		t.Fatal("a write to a closed file succeeded")
	}
	f, err := os.OpenFile(g.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.f = osFile{f} // the file works again
	if err := s.StoreLogs(entries(11, 12)); err == nil || !strings.Contains(err.Error(), "earlier failure") {
		t.Fatalf("a write after a failed one: %v", err)
	}
	if err := s.DeleteRange(5, 10); err == nil {
		t.Fatal("a truncation after a failed write succeeded")
	}
	expect(t, s, 1, 10, nil)
	if err := s.Close(); err == nil {
		t.Fatal("a store that failed closed without telling")
	}
	s = open(t, dir, 4096)
	expect(t, s, 1, 10, nil)
	store(t, s, 11, 12)
	expect(t, reopen(t, s, 4096), 1, 12, nil)
}

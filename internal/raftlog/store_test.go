package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

func segments(t *testing.T, dir string) []uint64 {
	t.Helper()
	bases, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
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

func TestACutWriteIsDroppedOnReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	store(t, s, 1, 20)
	g := s.segs[0]
	end := g.end()
	var rec []byte
	rec, _ = appendRecord(rec, entry(21), g.tail)
	if _, err := g.f.WriteAt(rec[:len(rec)-3], end); err != nil { // a write cut short
		t.Fatal(err)
	}
	s = reopen(t, s, 1<<20)
	expect(t, s, 1, 20, nil)
	store(t, s, 21, 30)
	expect(t, reopen(t, s, 1<<20), 1, 30, nil)
}

func TestADamagedSegmentBeforeTheNewestIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4096)
	storeTens(t, s, 1, 150)
	s.Close()
	path := filepath.Join(dir, segmentName(segments(t, dir)[0]))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, 200); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Open(dir, Options{SegmentSize: 4096}); err == nil {
		t.Fatal("a log with a damaged middle opened")
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
	if err := s.DeleteRange(1, 50); err != nil {
		t.Fatal(err)
	}
	expect(t, s, 0, 0, nil)
	if got := segments(t, dir); len(got) != 0 {
		t.Fatalf("segments %v after deleting everything", got)
	}
	store(t, s, 500, 510)
	expect(t, s, 500, 510, nil)
	store(t, s, 900, 901) // after a gap: replaces the log
	expect(t, reopen(t, s, 4096), 900, 901, nil)
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
	store(t, s, 1, 30)
	s.Close()
	ro, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	expect(t, ro, 1, 30, nil)
	if err := ro.StoreLogs(entries(31, 31)); err == nil {
		t.Fatal("a read-only store stored")
	}
}

// TestReadsWhileWriting: raft reads entries to replicate while it writes
// and compacts the log.
func TestReadsWhileWriting(t *testing.T) {
	s := open(t, t.TempDir(), 8192)
	store(t, s, 1, 10)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				first, _ := s.FirstIndex()
				last, _ := s.LastIndex()
				var l raft.Log
				err := s.GetLog(last, &l)
				if err == nil && l.Index != last {
					t.Errorf("read %d for %d", l.Index, last)
				} else if err != nil && !errors.Is(err, raft.ErrLogNotFound) {
					t.Error(err)
				}
				_ = s.GetLog(first, &l)
			}
		}()
	}
	for i := uint64(11); i < 2000; i += 5 {
		store(t, s, i, i+4)
		if i%200 == 1 {
			if err := s.DeleteRange(1, i-100); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
}

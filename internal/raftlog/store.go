// Package raftlog is a raft log store (raft.LogStore) in segment files:
// each write of a batch of entries is one write call to the end of the
// newest segment, synchronous (O_DSYNC: the data and nothing else is
// flushed, because segments are filled with zeros before use and never
// change size). Reopened after a crash, a segment ends at its first
// record that is not whole or not chained to the one before, so a write
// cut short is gone and nothing acknowledged is.
//
// Deleting a prefix (compaction after a snapshot) removes whole segments:
// entries of a segment that also holds newer ones stay readable after a
// restart until the whole segment goes. Truncating the tail is durable
// when DeleteRange returns.
package raftlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/hashicorp/raft"
)

// DefaultSegmentSize is the size of a segment file.
const DefaultSegmentSize = 16 << 20

// Options tunes a Store.
type Options struct {
	SegmentSize int64 // DefaultSegmentSize if 0
	ReadOnly    bool  // read the log only: no writes, no files made
}

// Store is a raft log in segment files in one directory. It implements
// raft.LogStore and raft.MonotonicLogStore: raft deletes the whole log
// once it installs a snapshot, so indexes only ever grow by one.
type Store struct {
	dir  string
	opts Options

	wmu   sync.Mutex // one writer at a time: StoreLogs, DeleteRange, Close
	buf   []byte
	spare chan spare // the next segment's zero file, being made (nil: none)

	mu          sync.RWMutex // guards what follows; file reads hold it shared
	segs        []*segment   // oldest first; the last is written
	first, last uint64       // 0, 0: empty
	closed      bool
}

type spare struct {
	path string
	err  error
}

var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
)

// Open opens the log in dir, making dir if needed (unless read-only).
func Open(dir string, opts Options) (*Store, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, err
		}
		if err := removeTemps(dir); err != nil {
			return nil, err
		}
	}
	s := &Store{dir: dir, opts: opts}
	bases, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	for _, base := range bases {
		g, err := openSegment(dir, base, opts.ReadOnly)
		if err != nil {
			s.closeFiles(s.segs)
			return nil, err
		}
		s.segs = append(s.segs, g)
	}
	if err := s.index(); err != nil {
		s.closeFiles(s.segs)
		return nil, err
	}
	return s, nil
}

// index sets first and last from the segments read, which must follow
// one another without a gap.
func (s *Store) index() error {
	for i, g := range s.segs {
		if i > 0 && g.base != s.segs[i-1].lastIndex()+1 {
			return fmt.Errorf("raftlog: %s ends at index %d but %s starts at %d: the log is damaged",
				s.segs[i-1].path, s.segs[i-1].lastIndex(), g.path, g.base)
		}
		if g.count() > 0 {
			if s.first == 0 {
				s.first = g.base
			}
			s.last = g.lastIndex()
		}
	}
	return nil
}

// IsMonotonic tells raft to delete the whole log after installing a
// snapshot.
func (s *Store) IsMonotonic() bool { return true }

// FirstIndex returns the first index held, 0 if none.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.first, nil
}

// LastIndex returns the last index held, 0 if none.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.last, nil
}

// GetLog reads the entry at index into l.
func (s *Store) GetLog(index uint64, l *raft.Log) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	if s.last == 0 || index < s.first || index > s.last {
		return raft.ErrLogNotFound
	}
	g := s.segs[sort.Search(len(s.segs), func(i int) bool { return s.segs[i].lastIndex() >= index })]
	rec, err := g.read(index)
	if err != nil {
		return err
	}
	decodeRecord(rec, l)
	return nil
}

var errClosed = errors.New("raftlog: closed")

// StoreLog stores one entry.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries with consecutive indexes following the last
// one held, durably, in one write. Entries that leave a gap after the log
// (raft stores the entries after a snapshot it installed) replace it.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.follow(logs); err != nil {
		return err
	}
	g, err := s.segmentFor(logs)
	if err != nil {
		return err
	}
	s.buf = s.buf[:0]
	tail := g.tail
	offs := make([]int64, 0, len(logs))
	for _, l := range logs {
		s.buf, tail = appendRecord(s.buf, l, tail)
		offs = append(offs, g.end()+int64(len(s.buf)))
	}
	if _, err := g.f.WriteAt(s.buf, g.end()); err != nil {
		return fmt.Errorf("raftlog: write %s: %w", g.path, err)
	}
	s.mu.Lock()
	g.offs, g.tail = append(g.offs, offs...), tail
	if s.first == 0 {
		s.first = logs[0].Index
	}
	s.last = logs[len(logs)-1].Index
	s.mu.Unlock()
	return nil
}

// follow checks that logs continue the log, replacing the log when they
// leave a gap after it.
func (s *Store) follow(logs []*raft.Log) error {
	if s.closed || s.opts.ReadOnly {
		return errors.New("raftlog: not open for writing")
	}
	for i, l := range logs {
		if l.Index != logs[0].Index+uint64(i) || l.Index == 0 {
			return fmt.Errorf("raftlog: store of index %d after %d: indexes must follow one another", l.Index, logs[0].Index+uint64(i)-1)
		}
	}
	switch next := logs[0].Index; {
	case s.last == 0 || next == s.last+1:
		return nil
	case next > s.last+1:
		return s.deleteAll()
	default:
		return fmt.Errorf("raftlog: store of index %d while the log ends at %d: delete the tail first", next, s.last)
	}
}

// segmentFor returns the segment logs go to: the newest one, or a new one
// if they do not fit in it.
func (s *Store) segmentFor(logs []*raft.Log) (*segment, error) {
	need := int64(0)
	for _, l := range logs {
		need += int64(headerLen + fixedLen + len(l.Data) + len(l.Extensions))
	}
	if n := len(s.segs); n > 0 && s.segs[n-1].end()+need <= s.segs[n-1].size {
		s.startSpare()
		return s.segs[n-1], nil
	}
	return s.roll(logs[0].Index, need)
}

// roll starts a segment at base with room for need bytes, from the spare
// zero file when that is large enough. An empty newest segment is
// replaced.
func (s *Store) roll(base uint64, need int64) (*segment, error) {
	size := max(s.opts.SegmentSize, need+headerLen)
	path, err := s.takeSpare(size)
	if err != nil {
		return nil, fmt.Errorf("raftlog: make a segment: %w", err)
	}
	if n := len(s.segs); n > 0 && s.segs[n-1].count() == 0 {
		s.mu.Lock()
		empty := s.segs[n-1:]
		s.segs = s.segs[:n-1]
		s.mu.Unlock()
		if err := s.remove(empty); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(path, filepath.Join(s.dir, segmentName(base))); err != nil {
		return nil, err
	}
	if err := syncDir(s.dir); err != nil {
		return nil, err
	}
	g, err := openSegment(s.dir, base, false)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.segs = append(s.segs, g)
	s.mu.Unlock()
	s.startSpare()
	return g, nil
}

// takeSpare returns a zero file of at least size bytes: the spare made in
// the background, or one made now.
func (s *Store) takeSpare(size int64) (string, error) {
	if s.spare != nil {
		sp := <-s.spare
		s.spare = nil
		if sp.err == nil {
			if st, err := os.Stat(sp.path); err == nil && st.Size() >= size {
				return sp.path, nil
			}
			os.Remove(sp.path)
		}
	}
	return makeZeroFile(s.dir, size)
}

// startSpare starts making the next segment's zero file unless one is
// being made or ready.
func (s *Store) startSpare() {
	if s.spare != nil {
		return
	}
	ch := make(chan spare, 1)
	s.spare = ch
	go func() {
		path, err := makeZeroFile(s.dir, s.opts.SegmentSize)
		ch <- spare{path, err}
	}()
}

// DeleteRange deletes the entries from min to max, inclusive: a prefix,
// a suffix or the whole log.
func (s *Store) DeleteRange(min, max uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed || s.opts.ReadOnly {
		return errors.New("raftlog: not open for writing")
	}
	switch {
	case s.last == 0 || max < s.first || min > s.last || min > max:
		return nil
	case min <= s.first && max >= s.last:
		return s.deleteAll()
	case min <= s.first:
		return s.deletePrefix(max)
	case max >= s.last:
		return s.truncate(min)
	}
	return fmt.Errorf("raftlog: delete of %d-%d from the middle of %d-%d", min, max, s.first, s.last)
}

// deleteAll removes every segment.
func (s *Store) deleteAll() error {
	s.mu.Lock()
	segs := s.segs
	s.segs, s.first, s.last = nil, 0, 0
	s.mu.Unlock()
	return s.remove(segs)
}

// deletePrefix forgets the entries up to max and removes the segments
// that hold no others.
func (s *Store) deletePrefix(max uint64) error {
	s.mu.Lock()
	k := 0
	for k < len(s.segs)-1 && s.segs[k].lastIndex() <= max {
		k++
	}
	gone := s.segs[:k]
	s.segs = s.segs[k:]
	s.first = max + 1
	s.mu.Unlock()
	return s.remove(gone)
}

// truncate deletes the entries from min to the end: the segments after
// the one holding min go, newest first, then that one is cut.
func (s *Store) truncate(min uint64) error {
	s.mu.Lock()
	k := sort.Search(len(s.segs), func(i int) bool { return s.segs[i].lastIndex() >= min })
	gone := s.segs[k+1:]
	s.segs = s.segs[:k+1]
	s.last = min - 1
	s.mu.Unlock()
	for i := len(gone) - 1; i >= 0; i-- {
		if err := s.remove(gone[i : i+1]); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.segs[k].truncate(min); err != nil {
		return fmt.Errorf("raftlog: truncate %s: %w", s.segs[k].path, err)
	}
	return nil
}

// remove closes and deletes segments no longer in s.segs, oldest first,
// then syncs the directory.
func (s *Store) remove(segs []*segment) error {
	if len(segs) == 0 {
		return nil
	}
	var err error
	for _, g := range segs {
		err = errors.Join(err, g.f.Close(), os.Remove(g.path))
	}
	if err != nil {
		return fmt.Errorf("raftlog: remove segments: %w", err)
	}
	return syncDir(s.dir)
}

// Close closes the segment files; the store cannot be used after.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.spare != nil {
		if sp := <-s.spare; sp.err == nil {
			os.Remove(sp.path)
		}
		s.spare = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.closeFiles(s.segs)
}

func (s *Store) closeFiles(segs []*segment) error {
	var err error
	for _, g := range segs {
		err = errors.Join(err, g.f.Close())
	}
	return err
}

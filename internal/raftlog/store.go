// Package raftlog is a raft log store (raft.LogStore) in segment files:
// each write of a batch of entries is one write call to the end of the
// newest segment, then a data sync (fdatasync: the data and nothing else
// is flushed, because segments are filled with zeros before use and never
// change size), unless the write may defer its sync (Options.DeferSync,
// see durable.go).
//
// Reopened after a crash, the log must tell a write the crash tore from
// damage to entries that were on disk: the first is normal after a power
// cut and is dropped (its caller had not been told it was stored); the
// second must never be dropped silently, or the node would vote and
// acknowledge with a log missing entries it had acknowledged (see
// "Protocol-Aware Recovery for Consensus-Based Storage", FAST '18). A
// segment's records end at the first that is not whole or not chained to
// the one before, and that end is checked (damage.go):
//   - a segment other than the newest was synced whole before the next
//     was begun, so it must end where the next one starts;
//   - the newest segment carries a synced-through mark (mark.go), written
//     after each sync round and taken to disk by the next one, so it
//     trails by at most a round and costs no sync of its own: a bad
//     record below it is damage;
//   - past the mark, structure decides: every region a record is written
//     to is zeros on disk first (segments are made of synced zeros; a
//     truncation and the clearing after a torn write zero and sync), and
//     a crash leaves each 512-byte sector of a write either written or
//     as it was, so a torn record has a sector of zeros. A record with a
//     sane size whose every sector holds a non-zero byte, but that does
//     not check, was not torn: it is damage. Anything else is a torn tail.
//
// Damage makes Open fail with an error wrapping ErrDamaged that names the
// file, the offset and the entries lost; a damaged record read later
// (GetLog) is an ErrDamaged error too. The store never truncates or zeroes
// damaged data: the node must be rebuilt from the cluster.
//
// Deleting a prefix (compaction after a snapshot) removes whole segments:
// entries of a segment that also holds newer ones stay readable after a
// restart until the whole segment goes. Truncating the tail and deleting
// the whole log are durable when DeleteRange returns.
package raftlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// DefaultSegmentSize is the size of a segment file.
const DefaultSegmentSize = 16 << 20

// Options tunes a Store.
type Options struct {
	SegmentSize int64 // DefaultSegmentSize if 0
	ReadOnly    bool  // read the log only: no writes, no files made or removed
	// DeferSync, asked at each write, lets StoreLogs return before the
	// entries are on disk; WaitDurable tells when they are. nil: every
	// write is on disk when StoreLogs returns.
	DeferSync func(logs []*raft.Log) bool
	// ObserveSync, if set, is told how long each sync round took.
	ObserveSync func(time.Duration)
	// OnFailure, if set, is told once of the failure (of a write, a sync,
	// a file made or removed) that stopped the store's writes: the store
	// is then of no more use until the process restarts (failure.go).
	// It is called from the goroutine that hit the failure, which may
	// hold the store's locks: it must not call the Store.
	OnFailure func(error)
}

// Store is a raft log in segment files in one directory. It implements
// raft.LogStore and raft.MonotonicLogStore: raft deletes the whole log
// once it installs a snapshot, so indexes only ever grow by one.
type Store struct {
	dir     string
	opts    Options
	fs      fsys
	stepped bool // tests: no flusher or spare goroutines; the test runs flush rounds
	// Set while Open runs: what it did after a failed store, and whether
	// it is syncing what it found (a failure then is recorded as such).
	recovery  Recovery
	resyncing bool

	wmu     sync.Mutex // one writer at a time: StoreLogs, DeleteRange, Close
	buf     []byte
	spare   chan spare // the next segment's zero file, being made (nil: none)
	nextSeq uint64

	fmu                  sync.Mutex // one sync round at a time; DeleteRange holds it too
	kick                 chan struct{}
	stopFlush, flushDone chan struct{}
	syncHook             func(file) error // tests: replaces the data sync
	deferred, syncs      atomic.Uint64
	dmu                  sync.Mutex // guards dur
	dur                  durability

	mu          sync.RWMutex // guards what follows; file reads hold it shared
	segs        []*segment   // oldest first; the last is written
	dirty       []*segment   // written since the last sync
	first, last uint64       // 0, 0: empty
	closed      bool
}

type spare struct {
	path string
	size int64
	err  error
}

var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
)

// Open opens the log in dir, making dir if needed (unless read-only).
func Open(dir string, opts Options) (*Store, error) { return openOn(dir, opts, osFS{}, false) }

// openOn opens the log in dir on fs; stepped stores run no goroutines of
// their own (the crash tests run the flusher's rounds themselves, so
// that the order of what the store does is the same on every run).
func openOn(dir string, opts Options, fs fsys, stepped bool) (*Store, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if !opts.ReadOnly {
		if err := makeDir(fs, dir); err != nil {
			return nil, err
		}
	}
	s := &Store{dir: dir, opts: opts, fs: fs, stepped: stepped, dur: durability{changed: make(chan struct{})}}
	err := s.openSegments()
	if err == nil {
		err = s.recoverLog()
	}
	if err != nil {
		s.closeFiles(s.segs)
		return nil, err
	}
	if !opts.ReadOnly {
		s.startFlusher()
	}
	return s, nil
}

// recoverLog makes the log one the store can go on from. After a store that
// failed, it drops what that store did not know was on disk. Otherwise it
// syncs every segment: what a killed process wrote may be in the page
// cache only, and it is real data the kernel will write, so syncing it
// makes it durable; this is right only because no sync failed (one that
// failed would have left the failed file, and the pages may be gone).
func (s *Store) recoverLog() error {
	f, err := readFailure(s.fs, s.dir)
	switch {
	case err != nil:
		return err
	case f != nil:
		if err := s.recoverFailure(*f); err != nil {
			return err
		}
		s.setDurable(s.last, nil) // nothing is left that was not on disk
		return nil
	case s.opts.ReadOnly:
		return nil
	}
	s.setDurable(s.knownDurable(), nil)
	s.dirty = append(s.dirty, s.segs...)
	s.resyncing = true
	defer func() { s.resyncing = false }()
	return s.flush()
}

// makeDir makes dir, durably, and removes what a crash left in it.
func makeDir(fs fsys, dir string) error {
	if err := mkdirAll(fs, dir); err != nil {
		return err
	}
	return removeTemps(fs, dir)
}

// mkdirAll makes dir and the directories above it that are missing, each
// synced into the one above it. An existing dir's entry is synced too: a
// crash may have come between its making and that sync.
func mkdirAll(fs fsys, dir string) error {
	err := fs.Mkdir(dir, 0o750)
	if errors.Is(err, os.ErrNotExist) && filepath.Dir(dir) != dir {
		if err := mkdirAll(fs, filepath.Dir(dir)); err != nil {
			return err
		}
		err = fs.Mkdir(dir, 0o750)
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return fs.SyncDir(filepath.Dir(dir))
}

// openSegments reads the segments of the log, passing over (and, unless
// read-only, removing) those a deletion of the whole log left.
func (s *Store) openSegments() error {
	cleared, err := readCleared(s.fs, s.dir)
	if err != nil {
		return err
	}
	ids, err := listSegments(s.fs, s.dir)
	if err != nil {
		return err
	}
	s.nextSeq = cleared + 1
	for _, id := range ids {
		s.nextSeq = max(s.nextSeq, id.seq+1)
		if id.seq <= cleared { // retired: no need to sync its removal
			if !s.opts.ReadOnly {
				if err := s.fs.Remove(filepath.Join(s.dir, segmentName(id.seq, id.base))); err != nil {
					return err
				}
			}
			continue
		}
		g, err := openSegment(s.fs, s.dir, id, s.opts.ReadOnly)
		if err != nil {
			return err
		}
		s.segs = append(s.segs, g)
	}
	if err := s.checkEnds(); err != nil {
		return err
	}
	if n := len(s.segs); n > 0 && !s.opts.ReadOnly {
		if err := s.segs[n-1].clearPastEnd(); err != nil {
			return fmt.Errorf("raftlog: clear past the end of %s: %w", s.segs[n-1].path, err)
		}
	}
	s.index()
	return nil
}

// index sets first and last from the segments read (checkEnds found
// them following one another without a gap).
func (s *Store) index() {
	for _, g := range s.segs {
		if g.count() > 0 {
			if s.first == 0 {
				s.first = g.base
			}
			s.last = g.lastIndex()
		}
	}
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
// one held, in one write, durably unless Options.DeferSync allows the
// sync to come later.
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
	s.startSpare()
	s.buf = s.buf[:0]
	tail := g.tail()
	offs, crcs := make([]int64, 0, len(logs)), make([]uint32, 0, len(logs))
	for _, l := range logs {
		s.buf, tail = appendRecord(s.buf, l, tail)
		offs, crcs = append(offs, g.end()+int64(len(s.buf))), append(crcs, tail)
	}
	if _, err := g.f.WriteAt(s.buf, g.end()); err != nil {
		return s.fail(fmt.Errorf("raftlog: write %s: %w", g.path, err)) // some of it may be there
	}
	s.mu.Lock()
	g.offs, g.crcs = append(g.offs, offs...), append(g.crcs, crcs...)
	if s.first == 0 {
		s.first = logs[0].Index
	}
	s.last = logs[len(logs)-1].Index
	s.markDirty(g)
	s.mu.Unlock()
	if s.deferSync(logs) {
		s.deferred.Add(1)
		s.kickFlusher()
		return nil
	}
	return s.flush()
}

// writable refuses writes to a closed or read-only store, or after a
// failure that left its files in doubt.
func (s *Store) writable() error {
	switch {
	case s.closed || s.opts.ReadOnly:
		return errors.New("raftlog: not open for writing")
	}
	if err := s.syncFailure(); err != nil {
		return fmt.Errorf("raftlog: no writes after an earlier failure (reopen the log): %w", err)
	}
	return nil
}

// follow checks that logs continue the log. An empty log (even one whose
// newest segment is empty) takes any index; entries that leave a gap
// after the log replace it (raft deletes the log after installing a
// snapshot; a gap means that deletion did not finish).
func (s *Store) follow(logs []*raft.Log) error {
	if err := s.writable(); err != nil {
		return err
	}
	for i, l := range logs {
		if l.Index != logs[0].Index+uint64(i) || l.Index == 0 {
			return fmt.Errorf("raftlog: store of index %d after %d: indexes must follow one another", l.Index, logs[0].Index+uint64(i)-1)
		}
	}
	if len(s.segs) == 0 {
		return nil
	}
	switch next, first := s.segs[len(s.segs)-1].next(), logs[0].Index; {
	case first == next:
		return nil
	case s.last == 0 || first > next:
		s.fmu.Lock() // no sync runs while the segments go
		defer s.fmu.Unlock()
		if err := s.flushLocked(); err != nil {
			return err
		}
		return s.deleteAll()
	default:
		return fmt.Errorf("raftlog: store of index %d while the log ends at %d: delete the tail first", first, s.last)
	}
}

// segmentFor returns the segment logs go to: the newest one, or a new one
// if they do not fit in it.
func (s *Store) segmentFor(logs []*raft.Log) (*segment, error) {
	need := int64(0)
	for _, l := range logs {
		need += int64(recordLen(l))
	}
	if n := len(s.segs); n > 0 && s.segs[n-1].end()+need <= s.segs[n-1].limit {
		return s.segs[n-1], nil
	}
	return s.roll(logs[0].Index, need)
}

// segmentFileSize is the size of a new segment file with room for need
// bytes of records, the zero header after them and the trailer: the
// configured size, or more, in whole pages.
func (s *Store) segmentFileSize(need int64) int64 {
	return (max(s.opts.SegmentSize, need+headerLen+trailerLen) + 4095) &^ 4095
}

// roll starts a segment at base with room for need bytes, from the spare
// zero file when that is large enough. An empty newest segment is
// replaced.
func (s *Store) roll(base uint64, need int64) (*segment, error) {
	// A deferred write still in the newest segment goes to disk first:
	// after a crash, a later segment must never follow a hole. flush also
	// waits for a sync the flusher has in flight (it may have taken the
	// segment off the dirty list already), so it is not skipped on the
	// segment's dirty mark.
	if len(s.segs) > 0 {
		if err := s.flush(); err != nil {
			return nil, err
		}
	}
	path, err := s.takeSpare(s.segmentFileSize(need))
	if err != nil {
		return nil, fmt.Errorf("raftlog: make a segment: %w", err)
	}
	if n := len(s.segs); n > 0 && s.segs[n-1].count() == 0 {
		if err := s.removeNewest(); err != nil {
			return nil, err
		}
	}
	id := segmentID{seq: s.nextSeq, base: base}
	s.nextSeq++
	if err := s.fs.Rename(path, filepath.Join(s.dir, segmentName(id.seq, id.base))); err != nil {
		return nil, s.fail(err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return nil, s.fail(err)
	}
	g, err := openSegment(s.fs, s.dir, id, false)
	if err != nil {
		return nil, s.fail(err)
	}
	s.mu.Lock()
	s.segs = append(s.segs, g)
	s.mu.Unlock()
	return g, nil
}

// takeSpare returns a zero file of at least size bytes: the spare made in
// the background, or one made now.
func (s *Store) takeSpare(size int64) (string, error) {
	if s.spare != nil {
		sp := <-s.spare
		s.spare = nil
		if sp.err == nil {
			if sp.size >= size {
				return sp.path, nil
			}
			s.fs.Remove(sp.path)
		}
	}
	return makeZeroFile(s.fs, s.dir, size)
}

// startSpare starts making the next segment's zero file unless one is
// being made or ready.
func (s *Store) startSpare() {
	if s.spare != nil || s.stepped {
		return
	}
	ch := make(chan spare, 1)
	s.spare = ch
	size := s.segmentFileSize(0)
	go func() {
		path, err := makeZeroFile(s.fs, s.dir, size)
		ch <- spare{path, size, err}
	}()
}

// DeleteRange deletes the entries from lo to hi, inclusive: a prefix, a
// suffix or the whole log.
func (s *Store) DeleteRange(lo, hi uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	s.fmu.Lock() // no sync runs while segments go or change
	defer s.fmu.Unlock()
	if err := s.flushLocked(); err != nil {
		return err
	}
	switch {
	case s.last == 0 || hi < s.first || lo > s.last || lo > hi:
		return nil
	case lo <= s.first && hi >= s.last:
		return s.deleteAll()
	case lo <= s.first:
		return s.deletePrefix(hi)
	case hi >= s.last:
		return s.truncate(lo)
	}
	return fmt.Errorf("raftlog: delete of %d-%d from the middle of %d-%d", lo, hi, s.first, s.last)
}

// deleteAll empties the log: the cleared file first, so that a crash
// while the segments go leaves none of them in the log.
func (s *Store) deleteAll() error {
	if len(s.segs) == 0 {
		return nil
	}
	if err := writeCleared(s.fs, s.dir, s.segs[len(s.segs)-1].seq); err != nil {
		return s.fail(err)
	}
	s.mu.Lock()
	segs := s.segs
	s.segs, s.first, s.last = nil, 0, 0
	s.mu.Unlock()
	s.setDurable(0, nil)
	return s.remove(segs)
}

// deletePrefix forgets the entries up to hi and removes the segments
// that hold no others, oldest first.
func (s *Store) deletePrefix(hi uint64) error {
	s.mu.Lock()
	s.first = hi + 1
	s.mu.Unlock()
	for len(s.segs) > 1 && s.segs[0].lastIndex() <= hi {
		s.mu.Lock()
		g := s.segs[0]
		s.segs = s.segs[1:]
		s.mu.Unlock()
		if err := s.remove([]*segment{g}); err != nil {
			return err
		}
	}
	return nil
}

// truncate deletes the entries from lo to the end: the segments after
// the one holding lo go, newest first, then that one's records from lo
// are zeroed and cut.
func (s *Store) truncate(lo uint64) error {
	s.mu.Lock()
	s.last = lo - 1
	s.mu.Unlock()
	for s.segs[len(s.segs)-1].base > lo {
		if err := s.removeNewest(); err != nil {
			return err
		}
	}
	g := s.segs[len(s.segs)-1]
	if err := s.lowerMark(g, lo); err != nil {
		return s.fail(fmt.Errorf("raftlog: truncate %s: %w", g.path, err))
	}
	if err := g.zeroFrom(lo); err != nil {
		return s.fail(fmt.Errorf("raftlog: truncate %s: %w", g.path, err))
	}
	if err := s.syncSegment(g); err != nil {
		return s.fail(fmt.Errorf("raftlog: truncate %s: %w", g.path, err))
	}
	s.mu.Lock()
	g.cut(lo)
	s.mu.Unlock()
	s.setDurable(lo-1, nil)
	return nil
}

// lowerMark makes g's synced-through mark say, durably, no more than
// that its records before index lo are on disk, before they are zeroed
// from lo: a crash while zeroing them must not leave the mark over
// records meant to go, which would read as damage.
func (s *Store) lowerMark(g *segment, lo uint64) error {
	off := g.offs[lo-g.base]
	if g.mark.end <= off {
		return nil
	}
	if err := g.writeMark(off, lo-1); err != nil {
		return err
	}
	return s.syncSegment(g)
}

// removeNewest removes the newest segment, which holds nothing the log
// keeps.
func (s *Store) removeNewest() error {
	s.mu.Lock()
	g := s.segs[len(s.segs)-1]
	s.segs = s.segs[:len(s.segs)-1]
	s.mu.Unlock()
	return s.remove([]*segment{g})
}

// remove closes and deletes segments no longer in s.segs, then syncs the
// directory. A failure stops writes: the files no longer match the log.
func (s *Store) remove(segs []*segment) error {
	s.mu.Lock()
	s.dirty = slices.DeleteFunc(s.dirty, func(g *segment) bool { return slices.Contains(segs, g) })
	s.mu.Unlock()
	for _, g := range segs {
		g.f.Close()
	}
	for _, g := range segs {
		if err := s.fs.Remove(g.path); err != nil {
			return s.fail(fmt.Errorf("raftlog: remove segment: %w", err))
		}
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return s.fail(err)
	}
	return nil
}

// Close closes the segment files; the store cannot be used after.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	ferr := s.stopFlusher()
	if s.spare != nil {
		if sp := <-s.spare; sp.err == nil {
			s.fs.Remove(sp.path)
		}
		s.spare = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return errors.Join(ferr, s.closeFiles(s.segs))
}

func (s *Store) closeFiles(segs []*segment) error {
	var err error
	for _, g := range segs {
		err = errors.Join(err, g.f.Close())
	}
	return err
}

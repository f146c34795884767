package raftlog

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Deferred syncs. A write whose Options.DeferSync says so returns once its
// bytes are in the file, before they are on disk; a background flusher
// then syncs every segment written since its last round, and WaitDurable
// tells when an index is on disk. Every other write syncs before it
// returns, together with any deferred writes before it, so a write that
// is not deferred leaves the whole log durable up to it.
//
// A raft leader uses this to send AppendEntries while its own log write
// is still being flushed, as the Raft paper allows (section 10.2.1), as
// long as it counts itself towards a commit only once the write is on
// disk; see the cluster package's transport.

// ErrStopped is WaitDurable's answer when the caller's stop channel
// closed first.
var ErrStopped = errors.New("raftlog: stopped waiting for a sync")

// durability is the flusher's state, guarded by Store.dmu.
type durability struct {
	durable uint64        // every index up to it is on disk
	changed chan struct{} // closed when durable, err or closed changes
	err     error         // a failure (Store.fail): nothing more becomes durable
	closed  bool
}

// WaitDurable returns once every entry up to index is on disk, or the
// store failed or closed, or stop closed (ErrStopped).
func (s *Store) WaitDurable(index uint64, stop <-chan struct{}) error {
	for {
		changed, err := s.durableTo(index)
		if changed == nil {
			return err
		}
		select {
		case <-changed:
		case <-stop:
			return ErrStopped
		}
	}
}

// durableTo reports whether index is on disk (nil channel, nil error), or
// failed to be (nil channel, the error); otherwise it returns a channel
// closed at the next change.
func (s *Store) durableTo(index uint64) (<-chan struct{}, error) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	d := &s.dur
	switch {
	case d.err != nil:
		return nil, d.err
	case d.durable >= index:
		return nil, nil
	case d.closed:
		return nil, errClosed
	}
	return d.changed, nil
}

// setDurable records that the log is on disk up to index (which may go
// down: a truncation or deletion), or that a sync failed.
func (s *Store) setDurable(index uint64, err error) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if s.dur.err == nil {
		s.dur.durable, s.dur.err = index, err
	}
	s.notifyLocked()
}

func (s *Store) notifyLocked() {
	close(s.dur.changed)
	s.dur.changed = make(chan struct{})
}

// syncFailure is the error of a failed deferred sync, if any.
func (s *Store) syncFailure() error {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	return s.dur.err
}

// Stats counts a store's writes.
type Stats struct {
	DeferredWrites uint64 // writes that returned before their sync
	Syncs          uint64 // flushes of the segments written since the last one
}

// Stats returns the store's counts.
func (s *Store) Stats() Stats {
	return Stats{DeferredWrites: s.deferred.Load(), Syncs: s.syncs.Load()}
}

// deferSync reports whether the write being made may return before its
// sync.
func (s *Store) deferSync(logs []*raft.Log) bool {
	return s.opts.DeferSync != nil && s.opts.DeferSync(logs)
}

// markDirty records that g has writes not yet synced. Called with mu held.
func (s *Store) markDirty(g *segment) {
	if !g.dirty {
		g.dirty = true
		s.dirty = append(s.dirty, g)
	}
}

// flush syncs every segment written since the last flush and records the
// log as durable up to its last index then.
func (s *Store) flush() error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.flushLocked()
}

// flushLocked is flush with fmu held: no other flush runs, and while
// DeleteRange holds it, no segment is removed or truncated under a sync.
// Once the segments are synced, the newest one's mark says so (mark.go).
func (s *Store) flushLocked() error {
	if err := s.syncFailure(); err != nil {
		return err
	}
	r := s.takeDirty()
	start := time.Now()
	for _, g := range r.dirty {
		if err := s.syncSegment(g); err != nil {
			return s.fail(fmt.Errorf("raftlog: sync %s: %w", g.path, err))
		}
	}
	if len(r.dirty) > 0 {
		s.syncs.Add(1)
		if s.opts.ObserveSync != nil {
			s.opts.ObserveSync(time.Since(start))
		}
	}
	if g := r.newest; g != nil && r.end > g.mark.end {
		if err := g.writeMark(r.end, r.newestLast); err != nil {
			return s.fail(fmt.Errorf("raftlog: mark %s synced: %w", g.path, err))
		}
	}
	s.setDurable(r.last, nil)
	return nil
}

// round is what a sync round syncs: the segments written since the last
// round, which takes the log to disk through last and the newest segment
// through end (index newestLast).
type round struct {
	dirty      []*segment
	last       uint64
	newest     *segment
	end        int64
	newestLast uint64
}

// takeDirty starts a round: the segments to sync, no longer dirty.
func (s *Store) takeDirty() round {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := round{dirty: s.dirty, last: s.last}
	if n := len(s.segs); n > 0 {
		r.newest = s.segs[n-1]
		r.end, r.newestLast = r.newest.end(), r.newest.lastIndex()
	}
	s.dirty = nil
	for _, g := range r.dirty {
		g.dirty = false
	}
	return r
}

// startFlusher starts the goroutine that syncs deferred writes (none in
// a stepped store: its test runs the rounds).
func (s *Store) startFlusher() {
	if s.stepped {
		return
	}
	s.kick, s.stopFlush, s.flushDone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.flushDone)
		for {
			select {
			case <-s.kick:
				s.flush() // a failure is recorded for writes and waiters
			case <-s.stopFlush:
				return
			}
		}
	}()
}

// kickFlusher asks the flusher for a round, unless one is already asked.
func (s *Store) kickFlusher() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// stopFlusher stops the flusher, syncs what it left and wakes waiters.
func (s *Store) stopFlusher() error {
	if s.opts.ReadOnly || s.closed {
		return nil
	}
	if s.stopFlush != nil {
		close(s.stopFlush)
		<-s.flushDone
		s.stopFlush = nil
	}
	err := s.flush()
	if err == nil {
		err = s.syncMark()
	}
	s.dmu.Lock()
	s.dur.closed = true
	s.notifyLocked()
	s.dmu.Unlock()
	return err
}

// syncSegment syncs g, and with it the mark last written to it.
func (s *Store) syncSegment(g *segment) error {
	if err := s.syncFile(g.f); err != nil {
		return err
	}
	g.markUnsynced = false
	return nil
}

// syncMark takes the newest segment's mark to disk if no sync has since
// it was written (the store is closing: no round will).
func (s *Store) syncMark() error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if n := len(s.segs); n > 0 && s.segs[n-1].markUnsynced && s.syncFailure() == nil {
		return s.syncSegment(s.segs[n-1])
	}
	return nil
}

// syncFile flushes f's data (not its size or times, which segment writes
// never change).
func (s *Store) syncFile(f file) error {
	if s.syncHook != nil {
		return s.syncHook(f)
	}
	return f.Datasync()
}

package raftlog

import (
	"errors"

	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
)

// gatedSyncs makes a store's syncs wait for the test: each sync reports
// on entered, then waits for a value on release (its result). Once the
// test is over, syncs (its Close's) pass.
type gatedSyncs struct {
	entered chan struct{}
	release chan error
	over    atomic.Bool
}

func gate(t *testing.T, s *Store) *gatedSyncs {
	g := &gatedSyncs{entered: make(chan struct{}, 16), release: make(chan error)}
	t.Cleanup(func() { g.over.Store(true) })
	s.syncHook = func(f file) error {
		if g.over.Load() {
			return f.Datasync()
		}
		g.entered <- struct{}{}
		if err := <-g.release; err != nil {
			return err
		}
		return f.Datasync()
	}
	return g
}

// openDeferring opens a store whose writes defer their sync while the
// returned flag is set (initially defer).
func openDeferring(t *testing.T, deferInitially bool) (*Store, *atomic.Bool) {
	t.Helper()
	deferring := new(atomic.Bool)
	deferring.Store(deferInitially)
	s, err := Open(t.TempDir(), Options{SegmentSize: 4096, DeferSync: func([]*raft.Log) bool { return deferring.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, deferring
}

func waitAsync(s *Store, index uint64, stop chan struct{}) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.WaitDurable(index, stop) }()
	return done
}

// TestADeferredWriteIsDurableOnlyAfterItsSync: StoreLogs returns before
// the sync, and WaitDurable returns only after it.
func TestADeferredWriteIsDurableOnlyAfterItsSync(t *testing.T) {
	s, _ := openDeferring(t, true)
	g := gate(t, s)
	storeTens(t, s, 1, 10) // returns although the sync waits
	<-g.entered
	done := waitAsync(s, 10, nil)
	select {
	case err := <-done:
		t.Fatalf("index 10 reported durable (%v) while its sync had not finished", err)
	default:
	}
	g.release <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.DeferredWrites != 1 || st.Syncs < 1 {
		t.Fatalf("stats %+v, want one deferred write and its sync", st)
	}
}

// TestAWriteNotDeferredSyncsTheDeferredOnesBeforeIt: once a write that
// may not defer returns, the log is durable up to it.
func TestAWriteNotDeferredSyncsTheDeferredOnesBeforeIt(t *testing.T) {
	s, deferring := openDeferring(t, true)
	g := gate(t, s)
	storeTens(t, s, 1, 10)
	<-g.entered // the flusher's round for 1-10 is waiting
	deferring.Store(false)
	stored := make(chan error, 1)
	go func() { stored <- s.StoreLogs(entries(11, 20)) }()
	g.release <- nil // the flusher's round
	<-g.entered      // the write's own round
	g.release <- nil
	if err := <-stored; err != nil {
		t.Fatal(err)
	}
	if ch, err := s.durableTo(20); ch != nil || err != nil {
		t.Fatalf("after a synchronous write of 11-20 the log is not durable to 20 (%v)", err)
	}
}

// TestAFailedSyncStopsWritesAndWaits: a sync that fails leaves the
// deferred entries in doubt: waiters get the error, later writes are
// refused until the log is reopened.
func TestAFailedSyncStopsWritesAndWaits(t *testing.T) {
	s, _ := openDeferring(t, true)
	g := gate(t, s)
	storeTens(t, s, 1, 10)
	<-g.entered
	g.release <- errors.New("disk gone")
	if err := s.WaitDurable(10, nil); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("wait after a failed sync: %v", err)
	}
	if err := s.StoreLogs(entries(11, 12)); err == nil || !strings.Contains(err.Error(), "earlier failure") {
		t.Fatalf("a write after a failed sync: %v", err)
	}
}

// TestTruncatingDeferredEntries: a truncation syncs what was deferred,
// and the durable index follows the log down, then up again.
func TestTruncatingDeferredEntries(t *testing.T) {
	s, deferring := openDeferring(t, true)
	storeTens(t, s, 1, 20)
	if err := s.DeleteRange(15, 20); err != nil {
		t.Fatal(err)
	}
	if ch, err := s.durableTo(14); ch != nil || err != nil {
		t.Fatalf("not durable to 14 after the truncation (%v)", err)
	}
	if ch, _ := s.durableTo(15); ch == nil {
		t.Fatal("index 15 reported durable after it was truncated")
	}
	deferring.Store(false)
	store(t, s, 15, 16)
	if ch, err := s.durableTo(16); ch != nil || err != nil {
		t.Fatalf("not durable to 16 after a synchronous write (%v)", err)
	}
	expect(t, reopen(t, s, 4096), 1, 16, nil)
}

// TestWaitsEndOnStopAndClose: a wait for an index never written ends
// when its caller stops waiting, or when the store closes.
func TestWaitsEndOnStopAndClose(t *testing.T) {
	s, _ := openDeferring(t, false)
	store(t, s, 1, 5)
	stop := make(chan struct{})
	stopped, closed := waitAsync(s, 6, stop), waitAsync(s, 6, nil)
	close(stop)
	if err := <-stopped; !errors.Is(err, ErrStopped) {
		t.Fatalf("wait after stop: %v", err)
	}
	s.Close()
	if err := <-closed; !errors.Is(err, errClosed) {
		t.Fatalf("wait after close: %v", err)
	}
}

func (s *Store) durableIndex() uint64 {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	return s.dur.durable
}

// TestANewSegmentStartsAfterTheLastOneIsOnDisk: deferred entries in the
// newest segment are synced before the next segment is made, so a crash
// never leaves a segment after a hole.
func TestANewSegmentStartsAfterTheLastOneIsOnDisk(t *testing.T) {
	s, _ := openDeferring(t, true)
	s.stopFlusher() // only writes sync from here on
	store(t, s, 1, 5)
	if d := s.durableIndex(); d != 0 {
		t.Fatalf("durable to %d before any sync", d)
	}
	first := len(s.segs)
	var last uint64 = 5
	for len(s.segs) == first {
		store(t, s, last+1, last+5)
		last += 5
	}
	if d, want := s.durableIndex(), s.segs[first-1].lastIndex(); d < want {
		t.Fatalf("a new segment was started with the one before durable to %d only, not %d", d, want)
	}
}

// TestANewSegmentWaitsForTheSyncInFlight: with the flusher syncing
// deferred writes while segments fill and roll over, every roll waits for
// the sync of the segment before it, even one the flusher has already
// taken off the dirty list and is still syncing (under -race, a roll that
// read the segment's dirty mark without the lock is reported), so a new
// segment never starts ahead of a hole.
func TestANewSegmentWaitsForTheSyncInFlight(t *testing.T) {
	s, _ := openDeferring(t, true)
	segs := 0
	for last := uint64(0); segs < 20; last += 5 {
		store(t, s, last+1, last+5)
		if n := len(s.segs); n > segs {
			segs = n
			if d := s.durableIndex(); n > 1 && d < s.segs[n-2].lastIndex() {
				t.Fatalf("segment %d started with the one before durable to %d only, not %d", n, d, s.segs[n-2].lastIndex())
			}
		}
	}
}

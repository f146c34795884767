package raftlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// failures collects what a store tells Options.OnFailure.
type failures chan error

func (fs failures) next(t *testing.T) error {
	t.Helper()
	select {
	case err := <-fs:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no failure reported")
		return nil
	}
}

func (fs failures) none(t *testing.T) {
	t.Helper()
	select {
	case err := <-fs:
		t.Fatalf("a second failure reported: %v", err)
	default:
	}
}

// TestAFailedSyncIsFailStop: once a sync fails, the entries written
// since the last good one may never reach the disk, however later syncs
// answer (the kernel may have dropped the pages). The store stops, tells
// OnFailure once, and records how far the log was known on disk; the
// next Open drops what came after, rather than syncing it again and
// taking it for durable.
func TestAFailedSyncIsFailStop(t *testing.T) {
	dir, failed := t.TempDir(), make(failures, 4)
	s, err := Open(dir, Options{SegmentSize: 4096, DeferSync: func([]*raft.Log) bool { return true },
		OnFailure: func(err error) { failed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	g := gate(t, s)
	storeTens(t, s, 1, 10)
	<-g.entered
	g.release <- nil
	if err := s.WaitDurable(10, nil); err != nil {
		t.Fatal(err)
	}
	storeTens(t, s, 11, 20)
	<-g.entered
	g.release <- errors.New("disk gone")
	if err := failed.next(t); !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("OnFailure told %v", err)
	}
	if err := s.StoreLogs(entries(21, 21)); err == nil || !strings.Contains(err.Error(), "earlier failure") {
		t.Fatalf("a write after a failed sync: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, failedFile)); err != nil {
		t.Fatalf("no failure recorded in the log directory: %v", err)
	}
	s.Close()
	failed.none(t)

	ro, err := Open(dir, Options{ReadOnly: true}) // reads as the next Open will leave it, changing nothing
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ro, 1, 10, nil)
	ro.Close()
	if _, err := os.Stat(filepath.Join(dir, failedFile)); err != nil {
		t.Fatalf("a read-only open removed the failed file: %v", err)
	}
	s = open(t, dir, 4096)
	expect(t, s, 1, 10, nil)
	if r := s.Recovered(); r.DroppedAfter != 10 || r.Dropped != 10 || !strings.Contains(r.Reason, "disk gone") {
		t.Fatalf("recovery %+v, want 11-20 dropped after the failure", r)
	}
	if _, err := os.Stat(filepath.Join(dir, failedFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failure is still recorded after the recovery: %v", err)
	}
	store(t, s, 11, 12)
	s = reopen(t, s, 4096)
	expect(t, s, 1, 12, nil)
	if r := s.Recovered(); r != (Recovery{}) {
		t.Fatalf("a second reopen recovered %+v", r)
	}
}

// failingSegmentSyncs is the os package's file system whose syncs of
// segment files fail.
type failingSegmentSyncs struct{ osFS }

func (fs failingSegmentSyncs) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := fs.osFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, segmentExt) {
		return f, err
	}
	return failingSyncs{f.(osFile)}, nil
}

type failingSyncs struct{ osFile }

func (failingSyncs) Datasync() error { return errors.New("disk gone") }

// TestASyncFailingAtOpen: Open syncs what a killed process left in the
// page cache. If that sync fails, what the log held past its
// synced-through marks may never reach the disk, and after a power cut
// the marks may trail what had been acknowledged: the next Open cannot
// tell which, and refuses the log as damaged rather than guess. A log
// whose entries were all known on disk opens.
func TestASyncFailingAtOpen(t *testing.T) {
	for _, unsynced := range []bool{false, true} {
		dir := t.TempDir()
		s := open(t, dir, 4096)
		store(t, s, 1, 20)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if unsynced { // a killed process's last write
			s = open(t, dir, 4096)
			g := s.segs[len(s.segs)-1]
			recs, _ := records(g, entries(21, 25))
			if _, err := g.f.WriteAt(recs, g.end()); err != nil {
				t.Fatal(err)
			}
			s.closeFiles(s.segs)
		}
		failed := make(failures, 4)
		if _, err := openOn(dir, Options{SegmentSize: 4096, OnFailure: func(err error) { failed <- err }}, failingSegmentSyncs{}, false); err == nil {
			t.Fatal("an open whose sync failed succeeded")
		}
		failed.next(t)
		s, err := Open(dir, Options{SegmentSize: 4096})
		if !unsynced {
			if err != nil {
				t.Fatal(err)
			}
			expect(t, s, 1, 20, nil)
			s.Close()
		} else if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "21 to 25") {
			t.Fatalf("reopening after a failed sync at open with entries past the marks: %v", err)
		}
	}
}

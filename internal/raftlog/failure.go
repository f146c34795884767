package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// Failures are fail-stop. After a sync fails, Linux may have dropped the
// dirty pages it could not write and report later syncs of the same file
// as successful (PostgreSQL's fsync lesson): the entries written since
// the last good sync may never reach the disk, however the file reads
// now. So the first failure of a write, a sync or a file made or removed
// stops the store's writes, is told to Options.OnFailure, and is recorded
// in the failed file (written and synced through a new handle) with the
// last index known on disk then. The next Open drops the entries after
// it (zeroing them, synced) instead of syncing them again and taking them
// for durable, removes the file durably, and says what it did
// (Store.Recovered).
//
// A sync that fails while Open syncs what a killed process left in the
// page cache is recorded too, with the last index the synced-through
// marks show on disk. After a kill, those marks are exactly what the
// process had acknowledged; after a power cut they may trail it by a
// round. The next Open cannot tell which, so if the log holds entries
// past that index it refuses the log as damaged rather than guess.
const failedFile = "failed"

// Recovery is what Open did because the store that last wrote the log
// had failed (see Options.OnFailure). The zero Recovery: nothing.
type Recovery struct {
	Reason       string // the failure, as the failed store recorded it
	DroppedAfter uint64 // the last index it knew on disk: what came after was dropped
	Dropped      uint64 // how many entries that dropped
}

// Recovered returns what Open did because the store before it had
// failed.
func (s *Store) Recovered() Recovery { return s.recovery }

// failure is what the failed file records.
type failure struct {
	durable uint64 // the last index known on disk
	atOpen  bool   // the failure came while Open synced: durable is from the marks
	reason  string
}

func (f failure) encode() []byte {
	b := binary.LittleEndian.AppendUint64(nil, f.durable)
	atOpen := byte(0)
	if f.atOpen {
		atOpen = 1
	}
	b = append(append(b, atOpen), f.reason...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// readFailure reads the failed file in dir (nil: none).
func readFailure(fs fsys, dir string) (*failure, error) {
	path := filepath.Join(dir, failedFile)
	b, err := fs.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n := len(b) - 4
	if n < 9 || crc32.Checksum(b[:n], castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		return nil, fmt.Errorf("%w: %s does not read back (it was written whole and synced); %s", ErrDamaged, path, rebuild)
	}
	return &failure{durable: binary.LittleEndian.Uint64(b), atOpen: b[8] == 1, reason: string(b[9:n])}, nil
}

// fail stops the store after a failure that left its files in doubt. The
// first failure is recorded in the failed file (best effort: the disk may
// be failing) and told to Options.OnFailure.
func (s *Store) fail(err error) error {
	s.mu.RLock()
	last := s.last
	s.mu.RUnlock()
	s.dmu.Lock()
	first := s.dur.err == nil
	if first {
		s.dur.err = err
		s.notifyLocked()
	}
	f := failure{durable: min(s.dur.durable, last), atOpen: s.resyncing, reason: err.Error()}
	s.dmu.Unlock()
	if first {
		_ = writeFileSynced(s.fs, s.dir, failedFile, f.encode())
		if s.opts.OnFailure != nil {
			s.opts.OnFailure(err)
		}
	}
	return err
}

// recoverFailure drops, durably (in memory only if read-only), what the
// failed store before this one did not know was on disk, then removes
// its failed file durably: a crash must not find it again once new
// entries follow.
func (s *Store) recoverFailure(f failure) error {
	path := filepath.Join(s.dir, failedFile)
	if f.atOpen && s.last > f.durable {
		return fmt.Errorf("%w: %s: a sync failed while the log was opened: entries %d to %d may not be on disk "+
			"although they may have been acknowledged; %s", ErrDamaged, path, max(f.durable+1, s.first), s.last, rebuild)
	}
	s.recovery = Recovery{Reason: f.reason, DroppedAfter: f.durable}
	if s.last > f.durable {
		s.recovery.Dropped = s.last - max(f.durable, s.first-1)
		if err := s.dropAfter(f.durable); err != nil {
			return err
		}
	}
	if s.opts.ReadOnly {
		return nil
	}
	if err := s.fs.Remove(path); err != nil {
		return err
	}
	return s.fs.SyncDir(s.dir)
}

// dropAfter drops the entries after index d: zeroed and synced, as a
// truncation does (or every segment, if none is at or below d).
func (s *Store) dropAfter(d uint64) error {
	if s.opts.ReadOnly {
		s.cutAfter(d)
		return nil
	}
	s.setDurable(d, nil) // what a failure while dropping records
	if d < s.first {
		return s.deleteAll()
	}
	return s.truncate(d + 1)
}

// cutAfter forgets the entries after index d, leaving the files as they
// are.
func (s *Store) cutAfter(d uint64) {
	for n := len(s.segs); n > 0 && s.segs[n-1].base > d; n-- {
		s.segs[n-1].f.Close()
		s.segs = s.segs[:n-1]
	}
	if n := len(s.segs); n > 0 && s.segs[n-1].next() > d+1 {
		s.segs[n-1].cut(d + 1)
	}
	s.first, s.last = 0, 0
	s.index()
}

// knownDurable is the last index the log was known to have on disk
// before this Open: the older segments' (each synced whole before the
// next was begun), and the newest one's synced-through mark.
func (s *Store) knownDurable() uint64 {
	n := len(s.segs)
	if n == 0 {
		return 0
	}
	known := uint64(0)
	if n > 1 {
		known = s.segs[n-2].lastIndex()
	}
	if g := s.segs[n-1]; g.mark.count > 0 {
		known = max(known, g.mark.last)
	}
	return min(known, s.last)
}

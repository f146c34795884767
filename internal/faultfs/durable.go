package faultfs

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// pageSize is the unit in which unsynced data is kept or lost.
const pageSize = 4096

// fileState is what a cut needs to put one file back: the durable
// content of each page changed since the last good sync, and the durable
// size. It holds its own descriptor so it works after a rename or unlink.
type fileState struct {
	mu      sync.Mutex
	dead    bool // synced clean and dropped from FS.files; look again
	fd      int
	rel     string // the path at the first unsynced change: names the file in reports and seeds its torn cut
	durSize int64
	pages   map[int64]*page
}

// page is an unsynced page's durable content (nil past the durable
// size), and whether a failed fsync lost it.
type page struct {
	saved []byte
	lost  bool
}

// lockState returns key's state, made with a descriptor from open if the
// file had no unsynced change, locked.
func (f *FS) lockState(key fileKey, open func() (int, error), n *node) (*fileState, syscall.Errno) {
	for {
		f.mu.Lock()
		st := f.files[key]
		f.mu.Unlock()
		if st == nil {
			var errno syscall.Errno
			if st, errno = f.addState(key, open, n); errno != 0 {
				return nil, errno
			}
		}
		st.mu.Lock()
		if !st.dead {
			return st, 0
		}
		st.mu.Unlock()
	}
}

// addState records a file with no unsynced change: its size now is its
// durable size.
func (f *FS) addState(key fileKey, open func() (int, error), n *node) (*fileState, syscall.Errno) {
	fd, s, errno := openStat(open)
	if errno != 0 {
		return nil, errno
	}
	st := &fileState{fd: fd, rel: n.rel(), durSize: s.Size, pages: map[int64]*page{}}
	f.mu.Lock()
	defer f.mu.Unlock()
	if have := f.files[key]; have != nil {
		unix.Close(fd)
		return have, 0
	}
	f.files[key] = st
	return st, 0
}

// withState runs fn on key's state, locked, if the file has unsynced
// changes.
func (f *FS) withState(key fileKey, fn func(st *fileState)) {
	for {
		f.mu.Lock()
		st := f.files[key]
		f.mu.Unlock()
		if st == nil {
			return
		}
		st.mu.Lock()
		if !st.dead {
			fn(st)
			st.mu.Unlock()
			return
		}
		st.mu.Unlock()
	}
}

// touch saves, before [off, end) changes, the durable content of each of
// its pages not saved yet. A page a failed fsync lost is dirty again.
func (st *fileState) touch(off, end int64) syscall.Errno {
	for p := off / pageSize; p*pageSize < end; p++ {
		if pg := st.pages[p]; pg != nil {
			pg.lost = false
			continue
		}
		pg := &page{}
		if n := min(pageSize, st.durSize-p*pageSize); n > 0 {
			pg.saved = make([]byte, n)
			if _, err := unix.Pread(st.fd, pg.saved, p*pageSize); err != nil {
				return fs.ToErrno(err)
			}
		}
		st.pages[p] = pg
	}
	return 0
}

// truncating saves what a truncate to size cuts off of the durable data.
func (st *fileState) truncating(size int64) syscall.Errno {
	if size >= st.durSize {
		return 0
	}
	return st.touch(size, st.durSize)
}

// synced makes the file's data and size durable, except the pages a
// failed fsync lost, and says whether anything remains to undo.
func (st *fileState) synced() (clean bool, errno syscall.Errno) {
	var s unix.Stat_t
	if err := unix.Fstat(st.fd, &s); err != nil {
		return false, fs.ToErrno(err)
	}
	for p, pg := range st.pages {
		if !pg.lost {
			delete(st.pages, p)
		}
	}
	st.durSize = s.Size
	return len(st.pages) == 0, 0
}

// fsyncFailed loses every unsynced page: a later good sync does not make
// them durable.
func (st *fileState) fsyncFailed() {
	for _, pg := range st.pages {
		pg.lost = true
	}
}

// fileSynced is a good fsync of key: a file left with nothing to undo
// is forgotten, closing its descriptor.
func (f *FS) fileSynced(key fileKey) (errno syscall.Errno) {
	f.withState(key, func(st *fileState) {
		var clean bool
		if clean, errno = st.synced(); !clean {
			return
		}
		st.dead = true
		unix.Close(st.fd)
		f.mu.Lock()
		delete(f.files, key)
		f.mu.Unlock()
	})
	return errno
}

// revert puts the file back to its durable state. keep, when set (a torn
// cut), decides for each unsynced page within the current size whether
// its new content stays; a page kept past the durable size keeps the
// file that long, and dropped pages before it read as zeros.
func (st *fileState) revert(keep func() bool) (kept, dropped int, err error) {
	var s unix.Stat_t
	if err := unix.Fstat(st.fd, &s); err != nil {
		return 0, 0, err
	}
	size := st.durSize
	var drop []int64
	for _, p := range slices.Sorted(maps.Keys(st.pages)) {
		if keep != nil && !st.pages[p].lost && p*pageSize < s.Size && keep() {
			kept++
			size = max(size, min(s.Size, (p+1)*pageSize))
			continue
		}
		dropped++
		drop = append(drop, p)
	}
	for _, p := range drop {
		if err := st.restore(p, size); err != nil {
			return kept, dropped, err
		}
	}
	return kept, dropped, unix.Ftruncate(st.fd, size)
}

// restore writes page p's durable content back, zero-padded up to size.
func (st *fileState) restore(p, size int64) error {
	off := p * pageSize
	if off >= size {
		return nil
	}
	buf := make([]byte, min(pageSize, size-off))
	copy(buf, st.pages[p].saved)
	_, err := unix.Pwrite(st.fd, buf, off)
	return err
}

// revert undoes what no sync made durable: file data first (by
// descriptor, so names do not matter), then entry changes, newest first.
// The caller holds cutMu exclusively.
func (f *FS) revert(torn bool, cut int64) (CutReport, error) {
	var rep CutReport
	var errs []error
	states := slices.SortedFunc(maps.Values(f.files), func(a, b *fileState) int { return strings.Compare(a.rel, b.rel) })
	for _, st := range states {
		k, d, err := st.revert(f.tornCoin(torn, cut, st.rel))
		rep.Files++
		rep.PagesKept += k
		rep.PagesDropped += d
		if err != nil {
			errs = append(errs, fmt.Errorf("faultfs: revert %s: %w", st.rel, err))
		}
	}
	for i := len(f.log) - 1; i >= 0; i-- {
		r := f.log[i]
		err := f.undo(r)
		switch {
		case err == nil:
			rep.EntriesReverted++
		case errors.Is(err, unix.ENOENT):
			// A later change made durable took the name away.
			f.logf("faultfs: cannot undo %s: %v", r, err)
		default:
			errs = append(errs, fmt.Errorf("faultfs: undo %s: %w", r, err))
		}
	}
	return rep, errors.Join(errs...)
}

// tornCoin is a torn cut's coin for one file: seeded by the mount's
// seed, the cut's number and the file's path, and tossed in page order.
func (f *FS) tornCoin(torn bool, cut int64, rel string) func() bool {
	if !torn {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(rel))
	r := rand.New(rand.NewPCG(f.opts.Seed, h.Sum64()^uint64(cut)))
	return func() bool { return r.IntN(2) == 1 }
}

// openStat opens a descriptor with open and stats it; the descriptor is
// closed again if the stat fails.
func openStat(open func() (int, error)) (int, unix.Stat_t, syscall.Errno) {
	var s unix.Stat_t
	fd, err := open()
	if err != nil {
		return -1, s, fs.ToErrno(err)
	}
	if err := unix.Fstat(fd, &s); err != nil {
		unix.Close(fd)
		return -1, s, fs.ToErrno(err)
	}
	return fd, s, 0
}

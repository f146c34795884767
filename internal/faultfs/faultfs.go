package faultfs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Options tune a mount.
type Options struct {
	// Seed drives the torn cuts: the same seed and the same operations
	// give the same outcome.
	Seed uint64
	// Logf, if set, gets one line per fault that fired and per cut.
	Logf func(format string, args ...any)
}

// FS is a mounted faultfs.
type FS struct {
	mountpoint, backing string
	opts                Options
	stash               string // a sibling of backing holding removed files until their removal is durable
	stashFd             int

	// life serialises PowerCut and Unmount.
	life   sync.Mutex
	closed atomic.Bool

	// cutMu is held shared by every operation that changes the backing
	// directory or the undo state, and exclusively while a cut reverts.
	cutMu sync.RWMutex

	mu       sync.Mutex // guards what follows
	server   *fuse.Server
	root     *node
	files    map[fileKey]*fileState // files with unsynced changes, by backing inode
	dirs     map[fileKey]*dirState  // directories with unsynced entries
	log      []*entryRecord         // unsynced entry changes, oldest first
	stashSeq int64

	faultMu sync.Mutex // serialises Inject and Clear
	faults  atomic.Pointer[[]Fault]
	spaceMu sync.Mutex // serialises writes that grow a file while NoSpace is set

	writes, syncs, cuts atomic.Int64
	fired               [numKinds]atomic.Int64
}

// fileKey names a backing inode.
type fileKey struct{ dev, ino uint64 }

func keyOf(s *unix.Stat_t) fileKey { return fileKey{uint64(s.Dev), s.Ino} }

// CutReport says what a PowerCut undid.
type CutReport struct {
	Files                   int // files with unsynced data or size
	PagesDropped, PagesKept int
	EntriesReverted         int
}

// Stats counts what the mount has seen since Mount.
type Stats struct {
	Writes      int64
	Syncs       int64 // fsync and fdatasync of files and directories
	FaultsFired map[Kind]int64
	Cuts        int64
}

// Mount serves backing (an existing directory) at mountpoint (an existing
// empty directory). Everything already in backing counts as durable.
func Mount(mountpoint, backing string, opts Options) (*FS, error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("faultfs: cannot mount without /dev/fuse (in a container, pass --device /dev/fuse --cap-add SYS_ADMIN): %w", err)
	}
	mp, err := existingDir(mountpoint)
	if err != nil {
		return nil, err
	}
	back, err := existingDir(backing)
	if err != nil {
		return nil, err
	}
	f := &FS{mountpoint: mp, backing: back, opts: opts,
		files: map[fileKey]*fileState{}, dirs: map[fileKey]*dirState{}}
	if err := f.makeStash(); err != nil {
		return nil, err
	}
	if err := f.mount(); err != nil {
		f.removeStash()
		return nil, err
	}
	return f, nil
}

func existingDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("faultfs: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("faultfs: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("faultfs: %s is not a directory", abs)
	}
	return abs, nil
}

// makeStash makes the directory next to backing where removed and
// replaced files wait until their removal is durable: outside the mounted
// tree, but on its filesystem so a hard link can keep them.
func (f *FS) makeStash() error {
	dir, err := os.MkdirTemp(filepath.Dir(f.backing), "."+filepath.Base(f.backing)+".faultfs-stash-")
	if err != nil {
		return fmt.Errorf("faultfs: stash: %w", err)
	}
	var sb, ss unix.Stat_t
	if err := errors.Join(unix.Stat(f.backing, &sb), unix.Stat(dir, &ss)); err != nil || sb.Dev != ss.Dev {
		os.Remove(dir)
		return fmt.Errorf("faultfs: the parent of %s must be on its filesystem, to keep removed files there (%v)", f.backing, err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return fmt.Errorf("faultfs: stash: %w", err)
	}
	f.stash, f.stashFd = dir, fd
	return nil
}

func (f *FS) removeStash() {
	unix.Close(f.stashFd)
	os.RemoveAll(f.stash)
}

// mount starts a FUSE server over backing. Entries, attributes and
// failed lookups are never cached and files never keep their pages
// across opens, so what the kernel holds cannot outlive a cut.
func (f *FS) mount() error {
	var st unix.Stat_t
	if err := unix.Stat(f.backing, &st); err != nil {
		return fmt.Errorf("faultfs: %w", err)
	}
	lr := &fs.LoopbackRoot{Path: f.backing, Dev: uint64(st.Dev)}
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: lr}, fsys: f}
	lr.RootNode = root
	zero := time.Duration(0)
	srv, err := fs.Mount(f.mountpoint, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName: f.backing,
			Name:   "faultfs",
			// Passthrough would let the kernel read and write the
			// backing file without asking us.
			DisabledCapabilities: fuse.CAP_PASSTHROUGH,
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
	})
	if err != nil {
		return fmt.Errorf("faultfs: mount %s over %s: %w", f.mountpoint, f.backing, err)
	}
	f.mu.Lock()
	f.server, f.root = srv, root
	f.mu.Unlock()
	return nil
}

// Mountpoint is where the filesystem is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

// Unmount unmounts (lazily if the mount is busy) and keeps everything
// written, as a clean shutdown would. It may be called more than once.
func (f *FS) Unmount() error {
	f.life.Lock()
	defer f.life.Unlock()
	if f.closed.Load() {
		return nil
	}
	if err := f.unmountServer(); err != nil {
		return err
	}
	f.closed.Store(true)
	f.cutMu.Lock()
	defer f.cutMu.Unlock()
	f.forget()
	f.removeStash()
	return nil
}

// unmountServer stops the FUSE server; when something still holds the
// mount it detaches it lazily, and the old connection ends when its last
// user lets go.
func (f *FS) unmountServer() error {
	f.mu.Lock()
	srv := f.server
	f.server, f.root = nil, nil
	f.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Unmount()
	if err == nil {
		return nil
	}
	if lerr := lazyUnmount(f.mountpoint); lerr != nil {
		f.mu.Lock()
		f.server = srv // still mounted: a later Unmount tries again
		f.mu.Unlock()
		return fmt.Errorf("faultfs: unmount %s: %v; lazily: %w", f.mountpoint, err, lerr)
	}
	f.logf("faultfs: %s was busy (%v); detached it lazily", f.mountpoint, err)
	return nil
}

func lazyUnmount(mp string) error {
	if err := unix.Unmount(mp, unix.MNT_DETACH); err == nil {
		return nil
	}
	bin := "fusermount3"
	if _, err := exec.LookPath(bin); err != nil {
		bin = "fusermount"
	}
	if out, err := exec.Command(bin, "-u", "-z", mp).CombinedOutput(); err != nil {
		return fmt.Errorf("%s -u -z: %v: %s", bin, err, out)
	}
	return nil
}

// forget drops the undo state, closing its descriptors; the caller holds
// cutMu exclusively.
func (f *FS) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, st := range f.files {
		unix.Close(st.fd)
	}
	for _, d := range f.dirs {
		unix.Close(d.fd)
	}
	f.files, f.dirs, f.log = map[fileKey]*fileState{}, map[fileKey]*dirState{}, nil
}

// PowerCut drops what no sync made durable (see the package doc) and
// mounts afresh. The caller has killed every process with files open
// under the mount first. With torn, a seeded subset of each file's
// unsynced pages is kept. Faults set with Inject stay set.
func (f *FS) PowerCut(torn bool) (CutReport, error) {
	f.life.Lock()
	defer f.life.Unlock()
	if f.closed.Load() {
		return CutReport{}, errors.New("faultfs: power cut after Unmount")
	}
	if err := f.unmountServer(); err != nil {
		return CutReport{}, err
	}
	f.cutMu.Lock()
	defer f.cutMu.Unlock()
	rep, err := f.revert(torn, f.cuts.Add(1))
	f.forget()
	f.clearStash()
	f.logf("faultfs: power cut (torn=%v) at %s: %d files, %d pages dropped, %d kept, %d entries reverted",
		torn, f.mountpoint, rep.Files, rep.PagesDropped, rep.PagesKept, rep.EntriesReverted)
	return rep, errors.Join(err, f.mount())
}

// clearStash removes what is left in the stash; after a cut every file
// there has gone back or had its removal made durable, so this is only a
// safety net.
func (f *FS) clearStash() {
	ents, _ := os.ReadDir(f.stash)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(f.stash, e.Name()))
	}
}

// Stats returns the counts so far.
func (f *FS) Stats() Stats {
	s := Stats{Writes: f.writes.Load(), Syncs: f.syncs.Load(), Cuts: f.cuts.Load(),
		FaultsFired: map[Kind]int64{}}
	for k := Kind(1); k < numKinds; k++ {
		if n := f.fired[k].Load(); n > 0 {
			s.FaultsFired[k] = n
		}
	}
	return s
}

func (f *FS) logf(format string, args ...any) {
	if f.opts.Logf != nil && !f.closed.Load() {
		f.opts.Logf(format, args...)
	}
}

// invalidate drops the kernel's cached pages of the files known to the
// mount whose path matches pattern.
func (f *FS) invalidate(pattern string) {
	f.mu.Lock()
	root := f.root
	f.mu.Unlock()
	if root == nil {
		return
	}
	match := Fault{Path: pattern}
	var walk func(dir *fs.Inode)
	walk = func(dir *fs.Inode) {
		for _, ch := range dir.Children() {
			if ch.IsDir() {
				walk(ch)
			} else if match.matches(ch.Path(nil)) {
				ch.NotifyContent(0, 0)
			}
		}
	}
	walk(root.EmbeddedInode())
}

// Used is how many bytes the disk holds as NoSpace counts them: the sum
// of the file sizes in the backing directory, each inode once. A drill
// fills a disk by setting Limit a little above it.
func (f *FS) Used() int64 { return f.used() }

// used adds up the sizes of the files in the backing directory, each
// inode once.
func (f *FS) used() int64 {
	seen := map[uint64]bool{}
	var total int64
	filepath.WalkDir(f.backing, func(_ string, d iofs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total += info.Size()
		return nil
	})
	return total
}

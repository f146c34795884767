package faultfs

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// dirState is a directory with unsynced entry changes, held by an O_PATH
// descriptor so undo finds it wherever renames took it.
type dirState struct {
	key  fileKey
	fd   int
	refs int // records naming it
}

func (d *dirState) close() { unix.Close(d.fd) }

type entryKind int

const (
	entryCreate   entryKind = iota // dir/name appeared
	entryRemove                    // dir/name was removed
	entryRename                    // dir/name moved to to/toName
	entryExchange                  // dir/name and to/toName swapped
)

// entryRecord is one unsynced entry change and what undoing it needs.
type entryRecord struct {
	kind     entryKind
	dir      *dirState
	name     string
	to       *dirState
	toName   string
	stash    string       // the name in the stash of the removed or replaced file, if one was
	emptyDir *unix.Stat_t // the removed or replaced directory (empty), if one was
}

func (r *entryRecord) String() string {
	kinds := [...]string{"create", "remove", "rename", "exchange"}
	if r.to == nil {
		return fmt.Sprintf("%s of %q", kinds[r.kind], r.name)
	}
	return fmt.Sprintf("%s of %q to %q", kinds[r.kind], r.name, r.toName)
}

// openDir opens n, a directory, for an entry change in it.
func (n *node) openDir() (*dirState, syscall.Errno) {
	fd, s, errno := openStat(func() (int, error) {
		return unix.Open(n.backingPath(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if errno != 0 {
		return nil, errno
	}
	return &dirState{key: keyOf(&s), fd: fd}, 0
}

// record logs a change that has happened; its directories join those
// already holding unsynced changes.
func (f *FS) record(r *entryRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r.dir = f.adopt(r.dir)
	if r.to != nil {
		r.to = f.adopt(r.to)
	}
	f.log = append(f.log, r)
}

func (f *FS) adopt(d *dirState) *dirState {
	if have := f.dirs[d.key]; have != nil {
		if have != d {
			d.close()
		}
		have.refs++
		return have
	}
	d.refs = 1
	f.dirs[d.key] = d
	return d
}

func (f *FS) release(d *dirState) {
	if d.refs--; d.refs == 0 {
		d.close()
		delete(f.dirs, d.key)
	}
}

// commitDir makes the unsynced changes in the directory key durable: a
// good fsync of it.
func (f *FS) commitDir(key fileKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.dirs[key]
	if d == nil {
		return
	}
	var rest []*entryRecord
	for _, r := range f.log {
		if r.dir != d && r.to != d {
			rest = append(rest, r)
			continue
		}
		f.unstash(r)
		f.release(r.dir)
		if r.to != nil {
			f.release(r.to)
		}
	}
	f.log = rest
}

// keep preserves what d/name is, if anything, so undoing r can bring it
// back: a file gets a hard link in the stash, a directory (which the
// operation only removes if empty) has its attributes noted.
func (f *FS) keep(d *dirState, name string, r *entryRecord) syscall.Errno {
	var s unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return 0 // the operation itself will say so
		}
		return fs.ToErrno(err)
	}
	if s.Mode&unix.S_IFMT == unix.S_IFDIR {
		r.emptyDir = &s
		return 0
	}
	f.mu.Lock()
	f.stashSeq++
	stash := strconv.FormatInt(f.stashSeq, 10)
	f.mu.Unlock()
	if err := unix.Linkat(d.fd, name, f.stashFd, stash, 0); err != nil {
		return fs.ToErrno(err)
	}
	r.stash = stash
	return 0
}

// unstash lets go of r's stashed file: r failed, or its removal is durable.
func (f *FS) unstash(r *entryRecord) {
	if r.stash != "" {
		unix.Unlinkat(f.stashFd, r.stash, 0)
	}
}

// undo reverses r; the changes after it are undone already.
func (f *FS) undo(r *entryRecord) error {
	switch r.kind {
	case entryCreate:
		return os.RemoveAll(fdPath(r.dir.fd, r.name))
	case entryRemove:
		return f.putBack(r, r.dir, r.name)
	case entryRename:
		if err := unix.Renameat(r.to.fd, r.toName, r.dir.fd, r.name); err != nil {
			return err
		}
		return f.putBack(r, r.to, r.toName)
	case entryExchange:
		return unix.Renameat2(r.dir.fd, r.name, r.to.fd, r.toName, unix.RENAME_EXCHANGE)
	}
	return nil
}

// putBack brings r's removed or replaced entry back as d/name.
func (f *FS) putBack(r *entryRecord, d *dirState, name string) error {
	switch {
	case r.stash != "":
		return unix.Renameat(f.stashFd, r.stash, d.fd, name)
	case r.emptyDir != nil:
		if err := unix.Mkdirat(d.fd, name, r.emptyDir.Mode&07777); err != nil {
			return err
		}
		return unix.Fchownat(d.fd, name, int(r.emptyDir.Uid), int(r.emptyDir.Gid), unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// fdPath names dirfd/name through /proc, for calls that take paths.
func fdPath(dirfd int, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + name
}

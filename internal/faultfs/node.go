package faultfs

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is a loopback node whose changes faultfs records so a cut can
// undo them, and whose file handles apply the faults.
type node struct {
	*fs.LoopbackNode
	fsys *FS
	// unnamed is an O_TMPFILE file's open handle, by which it is linked
	// (the loopback has no path to link it from).
	unnamed atomic.Pointer[handle]
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeStatfser       = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
)

// WrapChild makes every node the loopback creates one of ours.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fsys: n.fsys}
}

// rel is n's path relative to the mount's root, as faults match it.
func (n *node) rel() string { return n.Path(nil) }

func (n *node) backingPath() string { return filepath.Join(n.RootData.Path, n.rel()) }

// faultsFor returns the faults set and n's path, or nil when none is
// set: the common case, which then costs no path walk.
func (n *node) faultsFor() ([]Fault, string) {
	faults := n.fsys.loadFaults()
	if len(faults) == 0 {
		return nil, ""
	}
	return faults, n.rel()
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.fsys.cutMu.RLock()
	defer n.fsys.cutMu.RUnlock()
	return n.open(ctx, flags)
}

// open opens n with a handle of ours. An O_TRUNC reaching us (the kernel
// normally truncates with a setattr instead) is recorded like one.
func (n *node) open(ctx context.Context, flags uint32) (fh fs.FileHandle, fuseFlags uint32, errno syscall.Errno) {
	var lf fs.FileHandle
	doOpen := func() syscall.Errno {
		lf, fuseFlags, errno = n.LoopbackNode.Open(ctx, flags)
		return errno
	}
	if flags&syscall.O_TRUNC != 0 {
		errno = n.truncate(nil, 0, doOpen)
	} else {
		errno = doOpen()
	}
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.wrap(ctx, lf)
	return h, fuseFlags, errno
}

// Create records the new name. It creates exclusively, so a file that
// appeared meanwhile is opened rather than recorded as new (and removed
// by a cut).
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	f := n.fsys
	f.cutMu.RLock()
	defer f.cutMu.RUnlock()
	d, errno := n.openDir()
	if errno != 0 {
		return nil, nil, 0, errno
	}
	ch, lf, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags|syscall.O_EXCL, mode, out)
	if errno == syscall.EEXIST && flags&syscall.O_EXCL == 0 {
		d.close()
		return n.openExisting(ctx, name, flags, out)
	}
	if errno != 0 {
		d.close()
		return nil, nil, 0, errno
	}
	f.record(&entryRecord{kind: entryCreate, dir: d, name: name})
	h, errno := ch.Operations().(*node).wrap(ctx, lf)
	return ch, h, fuseFlags, errno
}

func (n *node) openExisting(ctx context.Context, name string, flags uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	fh, fuseFlags, errno := ch.Operations().(*node).open(ctx, flags)
	return ch, fh, fuseFlags, errno
}

// Tmpfile gives an O_TMPFILE file our handle, for the faults; it has no
// name, so a cut has no entry to undo.
func (n *node) Tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, lf, fuseFlags, errno := n.LoopbackNode.Tmpfile(ctx, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	child := ch.Operations().(*node)
	h, errno := child.wrap(ctx, lf)
	if errno == 0 {
		child.unnamed.Store(h.(*handle))
	}
	return ch, h, fuseFlags, errno
}

// OpendirHandle opens a directory with a handle whose fsync makes the
// directory's entry changes durable.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fd, err := unix.Open(n.backingPath(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	var s unix.Stat_t
	if err := unix.Fstat(fd, &s); err != nil {
		unix.Close(fd)
		return nil, 0, fs.ToErrno(err)
	}
	ds, errno := fs.NewLoopbackDirStreamFd(fd)
	if errno != 0 {
		unix.Close(fd)
		return nil, 0, errno
	}
	ld, ok := ds.(loopbackDir)
	if !ok {
		ds.Close()
		return nil, 0, syscall.ENOTSUP
	}
	return &dirHandle{loopbackDir: ld, n: n, key: keyOf(&s)}, 0, 0
}

// Setattr records a change of size before making it.
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, ok := in.GetSize()
	if !ok {
		return n.LoopbackNode.Setattr(ctx, fh, in, out)
	}
	n.fsys.cutMu.RLock()
	defer n.fsys.cutMu.RUnlock()
	h, _ := fh.(*handle)
	return n.truncate(h, int64(size), func() syscall.Errno { return n.LoopbackNode.Setattr(ctx, fh, in, out) })
}

// truncate runs do, which truncates n (through h, if set) to size, after
// saving the durable data it cuts off.
func (n *node) truncate(h *handle, size int64, do func() syscall.Errno) syscall.Errno {
	key, open := fileKey{}, func() (int, error) {
		return unix.Open(n.backingPath(), unix.O_RDWR|unix.O_CLOEXEC, 0)
	}
	if h != nil {
		key, open = h.key, h.reopen
	} else {
		var s unix.Stat_t
		if err := unix.Stat(n.backingPath(), &s); err != nil {
			return fs.ToErrno(err)
		}
		if s.Mode&unix.S_IFMT != unix.S_IFREG {
			return do()
		}
		key = keyOf(&s)
	}
	st, errno := n.fsys.lockState(key, open, n)
	if errno != 0 {
		return errno
	}
	defer st.mu.Unlock()
	if errno := st.truncating(size); errno != 0 {
		return errno
	}
	return do()
}

// Statfs reports a NoSpace fault's disk.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	if errno := n.LoopbackNode.Statfs(ctx, out); errno != 0 {
		return errno
	}
	limit, ok := spaceLimit(n.fsys.loadFaults())
	if !ok {
		return 0
	}
	free := max(0, limit-n.fsys.used()) / pageSize
	out.Bsize, out.Frsize = pageSize, pageSize
	out.Blocks, out.Bfree, out.Bavail = uint64(limit/pageSize), uint64(free), uint64(free)
	return 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.created(name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Mkdir(ctx, name, mode, out) })
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.created(name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out) })
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.created(name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Symlink(ctx, target, name, out) })
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if t, ok := target.(*node); ok {
		if h := t.unnamed.Load(); h != nil {
			return n.created(name, func() (*fs.Inode, syscall.Errno) { return n.linkUnnamed(t, h, name, out) })
		}
	}
	return n.created(name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Link(ctx, target, name, out) })
}

// linkUnnamed names t, an O_TMPFILE file open as h, n/name (linkat(2) of
// its descriptor), as the file a process linked by its own descriptor.
func (n *node) linkUnnamed(t *node, h *handle, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := filepath.Join(n.backingPath(), name)
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(h.fd), unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW); err != nil {
		return nil, fs.ToErrno(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	out.Attr.FromStat(&st)
	t.unnamed.Store(nil)
	return t.EmbeddedInode(), 0
}

// created runs do, which makes n/name, and records the new name.
func (n *node) created(name string, do func() (*fs.Inode, syscall.Errno)) (*fs.Inode, syscall.Errno) {
	f := n.fsys
	f.cutMu.RLock()
	defer f.cutMu.RUnlock()
	d, errno := n.openDir()
	if errno != 0 {
		return nil, errno
	}
	ch, errno := do()
	if errno != 0 {
		d.close()
		return nil, errno
	}
	f.record(&entryRecord{kind: entryCreate, dir: d, name: name})
	return ch, 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.remove(name, 0)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.remove(name, unix.AT_REMOVEDIR)
}

// remove removes n/name, keeping the file in the stash (or noting the
// directory) until the removal is durable.
func (n *node) remove(name string, flags int) syscall.Errno {
	f := n.fsys
	f.cutMu.RLock()
	defer f.cutMu.RUnlock()
	d, errno := n.openDir()
	if errno != 0 {
		return errno
	}
	r := &entryRecord{kind: entryRemove, dir: d, name: name}
	if errno := f.keep(d, name, r); errno != 0 {
		d.close()
		return errno
	}
	if err := unix.Unlinkat(d.fd, name, flags); err != nil {
		f.unstash(r)
		d.close()
		return fs.ToErrno(err)
	}
	f.record(r)
	return 0
}

// Rename renames through directory descriptors, keeping a replaced file
// in the stash until the rename is durable.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 {
		return syscall.EINVAL
	}
	f := n.fsys
	f.cutMu.RLock()
	defer f.cutMu.RUnlock()
	r, errno := n.renameRecord(name, np, newName, flags)
	if errno != 0 {
		return errno
	}
	if err := unix.Renameat2(r.dir.fd, name, r.to.fd, newName, uint(flags)); err != nil {
		f.unstash(r)
		r.dir.close()
		r.to.close()
		return fs.ToErrno(err)
	}
	f.record(r)
	return 0
}

// renameRecord opens both directories and preserves what the rename
// would replace.
func (n *node) renameRecord(name string, np *node, newName string, flags uint32) (*entryRecord, syscall.Errno) {
	src, errno := n.openDir()
	if errno != 0 {
		return nil, errno
	}
	dst, errno := np.openDir()
	if errno != 0 {
		src.close()
		return nil, errno
	}
	r := &entryRecord{kind: entryRename, dir: src, name: name, to: dst, toName: newName}
	switch {
	case flags&unix.RENAME_EXCHANGE != 0:
		r.kind = entryExchange
	case flags == 0:
		errno = n.fsys.keep(dst, newName, r)
	}
	if errno != 0 {
		src.close()
		dst.close()
		return nil, errno
	}
	return r, 0
}

package faultfs

import (
	"context"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// handle is an open file: the loopback's handle, with writes recorded
// for undo and the faults applied.
type handle struct {
	*fs.LoopbackFile
	n   *node
	fd  int // the loopback's descriptor, owned by it
	key fileKey
}

var (
	_ fs.FileWriter    = (*handle)(nil)
	_ fs.FileWritever  = (*handle)(nil)
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileFsyncer   = (*handle)(nil)
	_ fs.FileAllocater = (*handle)(nil)
)

// wrap gives fh, a loopback handle on n, our handle.
func (n *node) wrap(ctx context.Context, fh fs.FileHandle) (fs.FileHandle, syscall.Errno) {
	lf := fh.(*fs.LoopbackFile)
	fd, _ := lf.PassthroughFd()
	var s unix.Stat_t
	if err := unix.Fstat(fd, &s); err != nil {
		lf.Release(ctx)
		return nil, fs.ToErrno(err)
	}
	return &handle{LoopbackFile: lf, n: n, fd: fd, key: keyOf(&s)}, 0
}

// PassthroughFd refuses kernel passthrough, which would bypass us.
func (h *handle) PassthroughFd() (int, bool) { return 0, false }

// reopen opens the handle's file again, read-write, for the file's undo
// state, which may outlive the handle.
func (h *handle) reopen() (int, error) {
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(h.fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		return fd, nil
	}
	return unix.FcntlInt(uintptr(h.fd), unix.F_DUPFD_CLOEXEC, 0)
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return h.write(off, int64(len(data)), func() (uint32, syscall.Errno) {
		return h.LoopbackFile.Write(ctx, data, off)
	})
}

func (h *handle) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var size int64
	for _, d := range data {
		size += int64(len(d))
	}
	return h.write(off, size, func() (uint32, syscall.Errno) {
		return h.LoopbackFile.Writev(ctx, data, off)
	})
}

// write applies the write faults, then runs do, which writes size bytes
// at off, after saving the durable content of the pages it changes.
func (h *handle) write(off, size int64, do func() (uint32, syscall.Errno)) (uint32, syscall.Errno) {
	f := h.n.fsys
	f.writes.Add(1)
	if faults, rel := h.n.faultsFor(); faults != nil {
		f.slow(faults, rel, "write")
		if _, ok := find(faults, WriteEIO, rel); ok {
			f.fire(WriteEIO, rel, "write")
			return 0, syscall.EIO
		}
		if ft, ok := find(faults, NoSpace, rel); ok {
			f.spaceMu.Lock()
			defer f.spaceMu.Unlock()
			if errno := h.checkSpace(ft, rel, "write", off+size); errno != 0 {
				return 0, errno
			}
		}
	}
	return h.change(off, off+size, do)
}

// toDurableEnd, as the end of a change, is the file's durable size.
const toDurableEnd = -1

// change runs do, which changes [off, end), with the pages saved first.
func (h *handle) change(off, end int64, do func() (uint32, syscall.Errno)) (uint32, syscall.Errno) {
	f := h.n.fsys
	f.cutMu.RLock()
	defer f.cutMu.RUnlock()
	st, errno := f.lockState(h.key, h.reopen, h.n)
	if errno != 0 {
		return 0, errno
	}
	defer st.mu.Unlock()
	if end == toDurableEnd {
		end = st.durSize
	}
	if end > off {
		if errno := st.touch(off, end); errno != 0 {
			return 0, errno
		}
	}
	return do()
}

// checkSpace answers ENOSPC when growing the file to end would take the
// disk past the fault's limit.
func (h *handle) checkSpace(ft Fault, rel, op string, end int64) syscall.Errno {
	var s unix.Stat_t
	if err := unix.Fstat(h.fd, &s); err != nil {
		return fs.ToErrno(err)
	}
	if end <= s.Size || h.n.fsys.used()+end-s.Size <= ft.Limit {
		return 0
	}
	h.n.fsys.fire(NoSpace, rel, op)
	return syscall.ENOSPC
}

// Read applies ReadEIO and BitRot.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	faults, rel := h.n.faultsFor()
	if faults == nil {
		return h.LoopbackFile.Read(ctx, dest, off)
	}
	if _, ok := find(faults, ReadEIO, rel); ok {
		h.n.fsys.fire(ReadEIO, rel, "read")
		return nil, syscall.EIO
	}
	for _, ft := range faults {
		if ft.Kind == BitRot && ft.matches(rel) && off < ft.Off+ft.Len && ft.Off < off+int64(len(dest)) {
			return h.rotten(ft, rel, dest, off)
		}
	}
	return h.LoopbackFile.Read(ctx, dest, off)
}

// rotten reads with the BitRot fault's range flipped.
func (h *handle) rotten(ft Fault, rel string, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := unix.Pread(h.fd, dest, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	flip(dest[:n], off, ft.Off, ft.Len)
	h.n.fsys.fire(BitRot, rel, "read")
	return fuse.ReadResultData(dest[:n]), 0
}

// Fsync makes the file's writes durable, through any handle, or under
// FsyncEIO loses them. The backing file is not synced: durability here
// is simulated.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	f := h.n.fsys
	f.syncs.Add(1)
	faults, rel := h.n.faultsFor()
	failed := f.syncFault(faults, rel, "fsync")
	f.cutMu.RLock()
	defer f.cutMu.RUnlock()
	if failed != 0 {
		f.withState(h.key, (*fileState).fsyncFailed)
		return failed
	}
	return f.fileSynced(h.key)
}

// Allocate applies NoSpace to a fallocate that grows the file, and saves
// the pages a hole punch, zeroing or shift changes.
func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if faults, rel := h.n.faultsFor(); faults != nil && mode&unix.FALLOC_FL_KEEP_SIZE == 0 {
		if ft, ok := find(faults, NoSpace, rel); ok {
			h.n.fsys.spaceMu.Lock()
			defer h.n.fsys.spaceMu.Unlock()
			if errno := h.checkSpace(ft, rel, "fallocate", int64(off+size)); errno != 0 {
				return errno
			}
		}
	}
	start, end := int64(off), int64(off+size)
	if mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0 {
		end = toDurableEnd // everything after off moves
	} else if mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) == 0 {
		end = start // allocation alone changes no data, only maybe the size
	}
	_, errno := h.change(start, end, func() (uint32, syscall.Errno) {
		return 0, h.LoopbackFile.Allocate(ctx, off, size, mode)
	})
	return errno
}

// dirHandle is an open directory whose fsync makes its entry changes
// durable.
type dirHandle struct {
	loopbackDir
	n   *node
	key fileKey
}

// loopbackDir is what the loopback's directory stream offers besides
// fsync.
type loopbackDir interface {
	fs.DirStream
	fs.FileReaddirenter
	fs.FileSeekdirer
	fs.FileReleasedirer
}

var _ fs.FileFsyncdirer = (*dirHandle)(nil)

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	f := d.n.fsys
	f.syncs.Add(1)
	faults, rel := d.n.faultsFor()
	if errno := f.syncFault(faults, rel, "fsyncdir"); errno != 0 {
		return errno
	}
	f.cutMu.RLock()
	defer f.cutMu.RUnlock()
	f.commitDir(d.key)
	return 0
}

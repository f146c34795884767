package faultfs

import (
	"fmt"
	"path"
	"slices"
	"syscall"
	"time"
)

// Kind names a fault Inject can set. The zero Kind is no fault, so a
// zero Fault does nothing rather than failing every sync.
type Kind int

const (
	// FsyncEIO fails fsync and fdatasync of matching files and
	// directories with EIO; the pages they covered are lost (see the
	// package doc).
	FsyncEIO Kind = iota + 1
	// WriteEIO fails writes to matching files with EIO, changing nothing.
	WriteEIO
	// ReadEIO fails reads of matching files, mmap page-ins included.
	ReadEIO
	// NoSpace makes the disk hold Limit bytes.
	NoSpace
	// Slow adds Latency to every write and sync of matching files.
	Slow
	// BitRot flips the bits of [Off, Off+Len) in what reads return.
	BitRot
	numKinds
)

var kindNames = [numKinds]string{
	FsyncEIO: "fsync-eio",
	WriteEIO: "write-eio",
	ReadEIO:  "read-eio",
	NoSpace:  "disk-full",
	Slow:     "slow",
	BitRot:   "bitrot",
}

// String names k as reports and logs spell it.
func (k Kind) String() string {
	if k > 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Fault is one fault set with Inject.
type Fault struct {
	Kind Kind
	// Path is matched (path.Match) against the path relative to the
	// mount's root, such as "raft/00000001.seg"; "" matches every file.
	Path string
	// Limit is, for NoSpace, how many bytes the disk holds (the sum of
	// the file sizes); a write or fallocate that would grow past it
	// fails with ENOSPC, and Statfs reports it.
	Limit int64
	// Latency is, for Slow, added to every fsync/fdatasync and write.
	Latency time.Duration
	// Off and Len are, for BitRot, the byte range whose reads come back
	// with every byte XOR 0x01.
	Off, Len int64
}

func (ft Fault) matches(rel string) bool {
	if ft.Path == "" {
		return true
	}
	ok, _ := path.Match(ft.Path, rel)
	return ok
}

// find returns the first fault of kind k set for rel.
func find(faults []Fault, k Kind, rel string) (Fault, bool) {
	for _, ft := range faults {
		if ft.Kind == k && ft.matches(rel) {
			return ft, true
		}
	}
	return Fault{}, false
}

// Inject adds a fault. Setting ReadEIO or BitRot drops the kernel's cached
// pages of the files it names, so the next read reaches the fault.
func (f *FS) Inject(ft Fault) {
	f.faultMu.Lock()
	next := append(slices.Clone(f.loadFaults()), ft)
	f.faults.Store(&next)
	f.faultMu.Unlock()
	if ft.Kind == ReadEIO || ft.Kind == BitRot {
		f.invalidate(ft.Path)
	}
}

// Clear removes every fault, and drops cached pages a BitRot fault may
// have filled, so reads see the disk's bytes again.
func (f *FS) Clear() {
	f.faultMu.Lock()
	old := f.loadFaults()
	f.faults.Store(nil)
	f.faultMu.Unlock()
	if slices.ContainsFunc(old, isBitRot) {
		f.invalidate("")
	}
}

func isBitRot(ft Fault) bool { return ft.Kind == BitRot }

// loadFaults is the hot path's look at the faults: one atomic load, and
// nil while none is set.
func (f *FS) loadFaults() []Fault {
	if p := f.faults.Load(); p != nil {
		return *p
	}
	return nil
}

// fire counts and logs a fault that changed an operation's outcome.
func (f *FS) fire(k Kind, rel, op string) {
	f.fired[k].Add(1)
	f.logf("faultfs: %s fired: %s %s", k, op, rel)
}

// slow waits out a Slow fault set for rel.
func (f *FS) slow(faults []Fault, rel, op string) {
	if ft, ok := find(faults, Slow, rel); ok {
		f.fire(Slow, rel, op)
		time.Sleep(ft.Latency)
	}
}

// syncFault applies the faults set for a sync of rel: it waits out Slow
// and answers EIO under FsyncEIO.
func (f *FS) syncFault(faults []Fault, rel, op string) syscall.Errno {
	if faults == nil {
		return 0
	}
	f.slow(faults, rel, op)
	if _, ok := find(faults, FsyncEIO, rel); ok {
		f.fire(FsyncEIO, rel, op)
		return syscall.EIO
	}
	return 0
}

// spaceLimit is the smallest Limit of the NoSpace faults set, for Statfs.
func spaceLimit(faults []Fault) (int64, bool) {
	limit, ok := int64(0), false
	for _, ft := range faults {
		if ft.Kind == NoSpace && (!ok || ft.Limit < limit) {
			limit, ok = ft.Limit, true
		}
	}
	return limit, ok
}

// flip returns buf, read at off, with every byte of [bOff, bOff+bLen)
// XOR 0x01.
func flip(buf []byte, off, bOff, bLen int64) {
	lo := max(off, bOff) - off
	hi := min(off+int64(len(buf)), bOff+bLen) - off
	for i := lo; i < hi; i++ {
		buf[i] ^= 0x01
	}
}

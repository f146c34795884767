package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The node's disk. Two things can go wrong with it, and they are met in
// opposite ways:
//
//   - It fills up. That is an operator's problem to fix, not a reason to
//     stop: the node keeps serving reads and stays in raft, and refuses new
//     writes (ErrInsufficientStorage, a 507) before proposing them while the
//     data directory has less than MinFreeDisk free. A log write that still
//     fails with ENOSPC refuses the same way until the next check sees room.
//     Writes resume by themselves once space is freed.
//   - It fails a write or a sync (EIO and the like). After a failed sync the
//     kernel may have dropped the data while reporting later syncs of it as
//     successful, so retrying is unsafe (PostgreSQL's fsync lesson). The
//     node stops at once: it leaves raft, so it acknowledges nothing more,
//     and DiskFailed is closed so that the process exits. A restart re-reads
//     and re-verifies what is on disk.

// DefaultMinFreeDisk is the free space below which a leader refuses writes.
const DefaultMinFreeDisk = 64 << 20

// disk watches the free space of the data directory and records a failure.
type disk struct {
	dir      string
	min      int64 // refuse writes below this many free bytes (< 0: never)
	free     atomic.Int64
	full     atomic.Bool // below min at the last check, or a write met ENOSPC since
	failure  atomic.Pointer[error]
	failedCh chan struct{}
	once     sync.Once
}

// freeBytes is the space available to the node in dir (a test seam).
var freeBytes = statfsFree

func statfsFree(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

func newDisk(dir string, minFree int64) *disk {
	d := &disk{dir: dir, min: minFree, failedCh: make(chan struct{})}
	d.free.Store(-1)
	return d
}

// check reads the free space and reports whether the disk turned full
// (changed = true, full = true) or had room again (changed, !full).
func (d *disk) check() (full, changed bool, err error) {
	free, err := freeBytes(d.dir)
	if err != nil {
		return d.full.Load(), false, err
	}
	d.free.Store(free)
	full = d.min >= 0 && free < d.min
	return full, d.full.Swap(full) != full, nil
}

// refuseWrite is ErrInsufficientStorage while the disk is full.
func (d *disk) refuseWrite() error {
	if !d.full.Load() {
		return nil
	}
	return fmt.Errorf("%w: less than %d bytes free in %s (%d free); nothing was changed. "+
		"Free space on this node (or move leadership away) and retry", ErrInsufficientStorage, d.min, d.dir, d.free.Load())
}

// noteWriteError records what a failed write of the log or the stable
// store says about the disk: ENOSPC marks it full; anything else fails it.
// It reports whether the node must halt.
func (d *disk) noteWriteError(err error) (halt bool) {
	if errors.Is(err, syscall.ENOSPC) {
		d.full.Store(true)
		return false
	}
	return d.fail(err)
}

// fail records that the disk failed; it reports whether this was the
// first failure.
func (d *disk) fail(err error) (first bool) {
	d.once.Do(func() {
		d.failure.Store(&err)
		close(d.failedCh)
		first = true
	})
	return first
}

// failed is the error the disk failed with, if it did.
func (d *disk) failed() error {
	if p := d.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// diskLoop checks the free space every interval and logs each change.
func (n *Node) diskLoop() {
	interval := n.cfg.DiskCheckInterval
	var moved time.Time // the last hand-off of leadership off a full disk
	for {
		full, changed, err := n.disk.check()
		switch {
		case err != nil:
			n.log.Warn("cannot read the free space of the data directory", "dir", n.disk.dir, "err", err)
		case changed && full:
			n.log.Error("disk nearly full: refusing writes until space is freed", "dir", n.disk.dir,
				"free_bytes", n.disk.free.Load(), "min_free_bytes", n.disk.min)
			if n.leadingTerm() != 0 && (moved.IsZero() || time.Since(moved) >= n.cfg.PlacementCooldown) {
				moved = time.Now()
				n.moveOffFullDisk()
			}
		case changed:
			n.log.Info("disk has room again: accepting writes", "dir", n.disk.dir, "free_bytes", n.disk.free.Load())
		}
		if !n.sleep(interval) {
			return
		}
	}
}

// moveOffFullDisk hands leadership to another voter, whose disk may have
// room: a leader that refuses every write would otherwise keep the whole
// cluster from writing. Done each time the disk turns full, at most once
// per PlacementCooldown, so that when every disk is full leadership does
// not go round.
func (n *Node) moveOffFullDisk() {
	n.log.Warn("this leader's disk is full: handing leadership to another node")
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.ElectionTimeout+n.cfg.HeartbeatTimeout)
	defer cancel()
	if err := n.TransferLeadership(ctx, ""); err != nil {
		n.log.Warn("could not hand leadership away from the full disk", "err", err)
	}
}

// diskWriteFailed is told of every failed write of the raft log or the
// stable store. Any failure but a full disk halts the node: it logs why,
// leaves raft at once (acknowledging nothing more) and closes DiskFailed.
func (n *Node) diskWriteFailed(what string, err error) {
	if !n.disk.noteWriteError(err) {
		if errors.Is(err, syscall.ENOSPC) {
			n.log.Error("disk full: a raft write failed; refusing writes until space is freed", "write", what, "err", err)
		}
		return
	}
	n.halt(what, err)
}

// logStoreFailed is told by the segment log that it stopped after a
// failed write or sync (its flusher's, say): whatever the error, the
// store takes no more writes, so the node halts. The store may hold its
// locks: nothing here calls it.
func (n *Node) logStoreFailed(err error) {
	if n.disk.fail(err) {
		go n.halt("raft log", err)
	}
}

// halt logs why the node stops and leaves raft at once.
func (n *Node) halt(what string, err error) {
	if errors.Is(err, ErrLogDamaged) {
		n.log.Error("halting: a raft log entry read back damaged, and this node must neither serve nor apply it; "+
			"it may have lost entries it acknowledged, so do not restart it as it is: remove it and let it rejoin "+
			"empty (docs/operations.md#damaged-data)", "read", what, "err", err, "data_dir", n.cfg.DataDir)
	} else {
		n.logDiskHalt(what, err)
	}
	if r := n.raftRef.Load(); r != nil {
		go r.Shutdown() // called from raft's own goroutines: not waited for here
	}
}

func (n *Node) logDiskHalt(what string, err error) {
	n.log.Error("halting: the disk failed a raft write, and retrying after a failed write or sync is not safe; "+
		"nothing more will be acknowledged by this node. Check the disk, then restart the node: it re-reads and "+
		"re-verifies its data directory (docs/operations.md#a-disk-that-fails)", "write", what, "err", err, "data_dir", n.cfg.DataDir)
}

// DiskFailed is closed when the node halted on a failed write or sync of
// its disk. The process should then exit with a non-zero status.
func (n *Node) DiskFailed() <-chan struct{} { return n.disk.failedCh }

// DiskFailure is the error the node's disk failed with (nil: none).
func (n *Node) DiskFailure() error { return n.disk.failed() }

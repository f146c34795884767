package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// One process at a time may use a data directory: two nodes on one raft
// log would overwrite each other's entries. A node takes an exclusive
// flock on LOCK in the data directory for as long as it runs and writes
// its pid there, so that a second one is refused at once, told who holds
// it. The kernel drops the lock when the process ends, however it ends,
// so a stale LOCK file never stands in the way.

// lockFile is the data directory's lock.
const lockFile = "LOCK"

// ErrDataDirInUse means another process holds the data directory.
var ErrDataDirInUse = errors.New("the data directory is in use by another process")

// dirLock is a held lock on a data directory.
type dirLock struct{ f *os.File }

// lockDataDir takes the data directory's lock, or says who holds it.
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked%s; stop that node first, or give this one its own --data-dir",
				ErrDataDirInUse, path, holder(f))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// holder names the process the lock file says holds it, if it says.
func holder(f *os.File) string {
	raw := make([]byte, 32)
	n, _ := f.ReadAt(raw, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw[:n])))
	if err != nil || pid <= 0 {
		return ""
	}
	return fmt.Sprintf(" by process %d", pid)
}

// release drops the lock (closing the file releases the flock).
func (l *dirLock) release() {
	if l != nil {
		_ = l.f.Close()
	}
}

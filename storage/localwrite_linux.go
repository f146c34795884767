package storage

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// writeUnnamed writes data to an unnamed file in dir (O_TMPFILE), syncs
// it and links it at path, so the name appears only once the file is
// whole and synced, and no temporary name is left to remove. It reports
// false, having changed nothing, where the filesystem makes no unnamed
// files (FUSE, NFS, overlays of older kernels) or /proc is not mounted.
func writeUnnamed(dir, path string, data []byte) (bool, error) {
	f, err := os.OpenFile(dir, unix.O_TMPFILE|os.O_WRONLY, 0o644)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return true, err
	}
	if err := f.Sync(); err != nil {
		return true, err
	}
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	switch err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW); {
	case errors.Is(err, unix.EEXIST):
		return true, ErrExists
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOENT) && procMissing():
		return false, nil
	case err != nil:
		return true, err
	}
	return true, nil
}

// procMissing reports whether this process sees no /proc/self/fd, where
// an unnamed file cannot be linked.
func procMissing() bool {
	_, err := os.Stat("/proc/self/fd")
	return err != nil
}

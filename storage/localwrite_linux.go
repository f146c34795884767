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
// false, having named nothing, where the filesystem makes or links no
// unnamed files (NFS, FUSE, overlays of older kernels) or /proc is not
// mounted.
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
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EEXIST):
		return true, ErrExists
	default:
		// Nothing was named: no /proc here, or a filesystem that links no
		// unnamed file (go-fuse's loopback answers EXDEV). The caller writes by a
		// temporary name instead.
		return false, nil
	}
}

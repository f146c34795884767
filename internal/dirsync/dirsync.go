// Package dirsync makes directory changes durable. A file created,
// renamed or removed is only sure to survive a power cut once its
// directory has been synced, and a new directory once its parent has; a
// MkdirAll alone leaves every directory it made able to vanish, with all
// that was written below it.
package dirsync

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Sync flushes dir's entries: the names created, renamed or removed in it.
func Sync(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// MkdirAll makes dir and any missing parents, as os.MkdirAll does, and
// syncs the parent of each directory it made, so they survive a crash.
func MkdirAll(dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return Sync(filepath.Dir(dir))
}

package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/raftcat/raftcat/internal/dirsync"
)

// writeLocalExclusive creates a local file holding data, or fails with
// ErrExists if one is there, atomically: of two writers racing for one
// name exactly one succeeds, and the file is whole the moment it appears.
// The data is written to a file with no name yet (Linux's O_TMPFILE) or,
// where the filesystem has none, to a temporary file beside the target;
// it is synced and hard-linked to the target name (link(2) fails if the
// name exists), and the directory is synced so the new name survives a
// crash. Filesystems without hard links get an exclusive create (O_EXCL)
// instead, whose file may be seen half-written while it is written.
//
// fileblob's create-only write checks for the file and then renames over
// it, so two racing writers can both believe they created it; a writer
// that then removes "its" file would remove the other's.
func writeLocalExclusive(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := dirsync.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	named, err := false, error(nil)
	if unnamedFiles {
		named, err = writeUnnamed(dir, path, data)
	}
	if !named {
		err = writeByTempName(dir, path, data)
	}
	if err != nil {
		return err
	}
	return dirsync.Sync(dir)
}

// unnamedFiles turns off the unnamed way (tests drive both ways).
var unnamedFiles = true

// writeByTempName writes data to a synced temporary file in dir and
// links it at path, leaving dir unsynced.
func writeByTempName(dir, path string, data []byte) error {
	tmp, err := os.CreateTemp(dir, ".raftcat-tmp-*")
	if err != nil {
		return err
	}
	if err := writeSynced(tmp, data); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	err = os.Link(tmp.Name(), path)
	// The temporary name goes before the directory is synced: one sync
	// makes both changes durable, and no power cut brings the name back.
	os.Remove(tmp.Name())
	switch {
	case errors.Is(err, fs.ErrExist):
		return ErrExists
	case err != nil:
		return createExclusive(path, data)
	}
	return nil
}

func writeSynced(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// createExclusive is the fallback where hard links are not available;
// it leaves the directory unsynced.
func createExclusive(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return ErrExists
	}
	if err != nil {
		return err
	}
	return writeSynced(f, data)
}

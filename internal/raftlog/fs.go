package raftlog

import (
	"io"
	"os"
	"path/filepath"
)

// fsys is everything the store does with files and directories. The
// store uses the os package (osFS); the crash tests put a file system in
// its place that records each change it makes, to rebuild the states a
// crash could leave.
//
// A file made, renamed or removed is on disk only once its directory is
// synced. The store syncs it before it relies on the change: a new
// segment renamed in (roll), segments removed (remove), the cleared and
// failed files written (writeFileSynced), the failed file removed
// (recoverFailure), the log directory and each one made above it
// (mkdirAll). Removals nothing relies on are not synced: temporary files
// (Open removes any it finds) and segments the cleared file retires (they
// stay retired whether their removal lasts or not).
type fsys interface {
	OpenFile(name string, flag int, perm os.FileMode) (file, error)
	CreateTemp(dir, pattern string) (file, error)
	Rename(from, to string) error
	Remove(name string) error
	ReadFile(name string) ([]byte, error)
	Glob(pattern string) ([]string, error)
	Mkdir(name string, perm os.FileMode) error
	SyncDir(dir string) error
}

// file is an open file of an fsys.
type file interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	Name() string
	Stat() (os.FileInfo, error)
	Sync() error
	Datasync() error // the data and what is needed to read it back (fdatasync)
	Close() error
}

// osFS is the os package's file system.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) CreateTemp(dir, pattern string) (file, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Rename(from, to string) error              { return os.Rename(from, to) }
func (osFS) Remove(name string) error                  { return os.Remove(name) }
func (osFS) ReadFile(name string) ([]byte, error)      { return os.ReadFile(name) }
func (osFS) Glob(pattern string) ([]string, error)     { return filepath.Glob(pattern) }
func (osFS) Mkdir(name string, perm os.FileMode) error { return os.Mkdir(name, perm) }
func (osFS) SyncDir(dir string) error                  { return SyncDir(dir) }
func (f osFile) Datasync() error                       { return datasync(f.File) }

// osFile is an *os.File with the data-only sync.
type osFile struct{ *os.File }

// SyncDir makes the creation, removal or renaming of files in dir
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	fusefs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/raftcat/raftcat/internal/faultfs"
)

// Both ways of writing a local file, under a filesystem that loses what
// no sync covered: the unnamed file linked into place, and the temporary
// name linked into place where the filesystem makes no unnamed files.
var localWriteWays = []struct {
	name    string
	unnamed bool
}{{"unnamed file", true}, {"temporary name", false}}

// mountFaulty mounts a faultfs over an empty directory and returns it.
func mountFaulty(t *testing.T) *faultfs.FS {
	t.Helper()
	dir := t.TempDir()
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := faultfs.Mount(mnt, backing, faultfs.Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("faultfs cannot mount here; it needs /dev/fuse and fusermount3 (Debian package fuse3), as root: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return f
}

// withWay makes writeLocalExclusive take one way for the test.
func withWay(t *testing.T, unnamed bool) {
	old := unnamedFiles
	unnamedFiles = unnamed
	t.Cleanup(func() { unnamedFiles = old })
}

// Every file a write acknowledged is there, whole, after a power cut that
// loses all that was not synced (torn pages included), and nothing else
// is: no temporary name, no directory entry of a file never linked.
func TestLocalWriteSurvivesPowerCut(t *testing.T) {
	eachWay(t, func(t *testing.T, f *faultfs.FS, dir string) {
		var names []string
		for i := range 5 {
			name := fmt.Sprintf("%05d.metadata.json", i)
			if err := writeLocalExclusive(filepath.Join(dir, name), content(i)); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		if _, err := f.PowerCut(true); err != nil {
			t.Fatal(err)
		}
		checkDir(t, dir, names)
	})
}

// A write whose sync fails is refused, and leaves no name behind, before
// or after a power cut: the name appears only for a synced file.
func TestLocalWriteFailingSyncLeavesNoFile(t *testing.T) {
	eachWay(t, func(t *testing.T, f *faultfs.FS, dir string) {
		if err := writeLocalExclusive(filepath.Join(dir, "00000.metadata.json"), content(0)); err != nil {
			t.Fatal(err)
		}
		f.Inject(faultfs.Fault{Kind: faultfs.FsyncEIO})
		err := writeLocalExclusive(filepath.Join(dir, "00001.metadata.json"), content(1))
		if err == nil || errors.Is(err, ErrExists) {
			t.Fatalf("write with failing syncs: %v, want an I/O error", err)
		}
		checkDir(t, dir, []string{"00000.metadata.json"})
		f.Clear()
		if _, err := f.PowerCut(true); err != nil {
			t.Fatal(err)
		}
		checkDir(t, dir, []string{"00000.metadata.json"})
	})
}

// eachWay runs test once per way of writing, each on a fault filesystem
// of its own, with the directory the test writes in.
func eachWay(t *testing.T, test func(t *testing.T, f *faultfs.FS, dir string)) {
	for _, way := range localWriteWays {
		t.Run(way.name, func(t *testing.T) {
			withWay(t, way.unnamed)
			f := mountFaulty(t)
			if way.unnamed {
				requireUnnamed(t, f.Mountpoint())
			}
			test(t, f, filepath.Join(f.Mountpoint(), "wh", "t", "metadata"))
		})
	}
}

// requireUnnamed fails the test if the mount makes no unnamed files, so
// that the unnamed way is what the test drives.
func requireUnnamed(t *testing.T, mnt string) {
	t.Helper()
	probe := filepath.Join(mnt, "probe")
	if err := os.Mkdir(probe, 0o755); err != nil {
		t.Fatal(err)
	}
	ok, err := writeUnnamed(probe, filepath.Join(probe, "f"), []byte("x"))
	if !ok || err != nil {
		t.Fatalf("the faultfs mount makes no unnamed file (O_TMPFILE): %v %v", ok, err)
	}
}

func content(i int) []byte {
	b := make([]byte, 9000+i) // more than two pages, so a torn cut could tear it
	for j := range b {
		b[j] = byte('a' + (i+j)%26)
	}
	return b
}

// checkDir fails unless dir holds exactly names, each with its content.
func checkDir(t *testing.T, dir string, names []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Fatalf("directory holds %v, want %v", got, names)
	}
	for i, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != string(content(i)) {
			t.Fatalf("%s: %d bytes, %v; want its %d bytes", name, len(b), err, len(content(i)))
		}
	}
}

// Where a filesystem makes unnamed files but cannot link them (go-fuse's
// plain loopback answers EXDEV), the write goes by a temporary name and
// succeeds, create-only as ever.
func TestLocalWriteWhereUnnamedFilesCannotBeLinked(t *testing.T) {
	dir := t.TempDir()
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := fusefs.NewLoopbackRoot(backing)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fusefs.Mount(mnt, root, &fusefs.Options{})
	if err != nil {
		t.Fatalf("mount a FUSE loopback (needs /dev/fuse and fusermount3, as root): %v", err)
	}
	t.Cleanup(func() { _ = srv.Unmount() })
	if ok, err := writeUnnamed(mnt, filepath.Join(mnt, "probe"), []byte("x")); ok || err != nil {
		t.Fatalf("unnamed write where unnamed files cannot be linked: %v, %v; want false and no error, for the temporary name to take over", ok, err)
	}
	path := filepath.Join(mnt, "t", "00000.metadata.json")
	if err := writeLocalExclusive(path, content(0)); err != nil {
		t.Fatal(err)
	}
	if err := writeLocalExclusive(path, content(1)); !errors.Is(err, ErrExists) {
		t.Fatalf("second write of one name: %v, want ErrExists", err)
	}
	checkDir(t, filepath.Dir(path), []string{"00000.metadata.json"})
}

package faultfs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCreateWithoutDirSyncVanishes(t *testing.T) {
	m := mountWith(t, Options{}, nil)
	writeAt(t, m.path("new"), []byte("data"), 0, true)
	rep := m.cut(t, false)
	wantMissing(t, m.path("new"))
	if rep.EntriesReverted != 1 {
		t.Errorf("report %+v, want one entry reverted", rep)
	}
}

func TestCreateWithDirSyncStays(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"sub/keep": ""})
	writeAt(t, m.path("sub/new"), []byte("data"), 0, true)
	syncDir(t, m.path("sub"))
	rep := m.cut(t, false)
	wantContent(t, m.path("sub/new"), []byte("data"))
	if rep != (CutReport{}) {
		t.Errorf("report %+v, want nothing undone", rep)
	}
}

func TestRenameWithoutDirSyncIsUndone(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"old": "old content", "target": "target content"})
	if err := os.Rename(m.path("old"), m.path("target")); err != nil {
		t.Fatal(err)
	}
	wantContent(t, m.path("target"), []byte("old content"))
	m.cut(t, false)
	wantContent(t, m.path("old"), []byte("old content"))
	wantContent(t, m.path("target"), []byte("target content"))
}

// A rename between directories is durable once its destination is synced.
func TestRenameIsDurableWithItsDestinationSynced(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"src/a": "moved", "dst/b": "replaced"})
	if err := os.Rename(m.path("src/a"), m.path("dst/b")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, m.path("dst"))
	m.cut(t, false)
	wantMissing(t, m.path("src/a"))
	wantContent(t, m.path("dst/b"), []byte("moved"))
	if ents, err := os.ReadDir(m.stash); err != nil || len(ents) != 0 {
		t.Errorf("the stash should be empty once the replacement is durable: %v, %v", ents, err)
	}
}

func TestUnlinkWithoutDirSyncComesBack(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"gone": "durable", "really-gone": "x"})
	writeAt(t, m.path("gone"), []byte("UNSYNCED"), 0, false)
	for _, name := range []string{"gone", "really-gone"} {
		if err := os.Remove(m.path(name)); err != nil {
			t.Fatal(err)
		}
	}
	wantMissing(t, m.path("gone"))
	m.cut(t, false)
	wantContent(t, m.path("gone"), []byte("durable"))

	if err := os.Remove(m.path("really-gone")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, m.mnt)
	m.cut(t, false)
	wantMissing(t, m.path("really-gone"))
}

// The pattern raftcat's small JSON files are replaced with.
func TestReplaceByRenameSurvivesCut(t *testing.T) {
	for _, fsyncFile := range []bool{true, false} {
		m := mountWith(t, Options{}, map[string]string{"state.json": `{"v":1}`})
		writeAt(t, m.path("state.json.tmp"), []byte(`{"v":2}`), 0, fsyncFile)
		if err := os.Rename(m.path("state.json.tmp"), m.path("state.json")); err != nil {
			t.Fatal(err)
		}
		syncDir(t, m.mnt)
		m.cut(t, false)
		wantMissing(t, m.path("state.json.tmp"))
		if fsyncFile {
			wantContent(t, m.path("state.json"), []byte(`{"v":2}`))
		} else {
			// The rename is durable, the data it carried is not.
			wantContent(t, m.path("state.json"), nil)
		}
	}
}

func TestDirectoryChangesRevert(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"empty/.keep": "", "f": "f"})
	if err := os.Remove(m.path("empty/.keep")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, m.path("empty"))
	if err := os.Remove(m.path("empty")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(m.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeAt(t, m.path("d/x"), []byte("x"), 0, true)
	syncDir(t, m.path("d")) // d/x is durable in d, but d is not in the root
	if err := os.Symlink("f", m.path("s")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(m.path("f"), m.path("h")); err != nil {
		t.Fatal(err)
	}
	rep := m.cut(t, false)
	wantMissing(t, m.path("d"))
	wantMissing(t, m.path("s"))
	wantMissing(t, m.path("h"))
	wantMissing(t, m.path("empty/.keep"))
	if fi, err := os.Stat(m.path("empty")); err != nil || !fi.IsDir() {
		t.Errorf("the removed directory should be back: %v, %v", fi, err)
	}
	if rep.EntriesReverted != 4 {
		t.Errorf("report %+v, want 4 entries reverted (rmdir, mkdir, symlink, link; d/x goes with d)", rep)
	}
}

// A file made with O_TMPFILE and linked into a directory by its
// descriptor is a create there: it vanishes at a cut unless the directory
// was synced after, and then keeps the data synced before the link.
func TestLinkedUnnamedFileFollowsItsDirectory(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"d/keep": ""})
	linkUnnamed(t, m.path("d"), "kept", []byte("named durably"))
	syncDir(t, m.path("d"))
	linkUnnamed(t, m.path("d"), "lost", []byte("never named durably"))
	m.cut(t, true)
	wantMissing(t, m.path("d/lost"))
	wantContent(t, m.path("d/kept"), []byte("named durably"))
}

// linkUnnamed writes data to an unnamed file in dir, syncs it and links
// it as dir/name through /proc, as a process without privileges does.
func linkUnnamed(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(dir, unix.O_TMPFILE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, filepath.Join(dir, name), unix.AT_SYMLINK_FOLLOW); err != nil {
		t.Fatalf("link the unnamed file as %s: %v", name, err)
	}
}

package faultfs

import (
	"os"
	"path/filepath"
	"testing"
)

// A file left open keeps the mount busy: the cut detaches it lazily and
// still gives new opens the durable state.
func TestPowerCutDetachesABusyMount(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"f": "durable"})
	fh, err := os.OpenFile(m.path("f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt([]byte("UNSYNC"), 0); err != nil {
		t.Fatal(err)
	}
	m.cut(t, false)
	wantContent(t, m.path("f"), []byte("durable"))
	writeAt(t, m.path("f"), []byte("SYNCED"), 0, true)
	m.cut(t, false)
	wantContent(t, m.path("f"), []byte("SYNCEDe"))
}

func TestUnmountKeepsEverythingAndIsIdempotent(t *testing.T) {
	m := mountWith(t, Options{}, nil)
	writeAt(t, m.path("f"), []byte("unsynced"), 0, false)
	for range 2 {
		if err := m.Unmount(); err != nil {
			t.Fatal(err)
		}
	}
	wantContent(t, filepath.Join(m.backing, "f"), []byte("unsynced"))
	if _, err := os.Stat(m.stash); !os.IsNotExist(err) {
		t.Errorf("the stash outlived Unmount: %v", err)
	}
	if _, err := m.PowerCut(false); err == nil {
		t.Error("a power cut after Unmount succeeded")
	}
}

func TestMountNeedsDirectories(t *testing.T) {
	dir := t.TempDir()
	if f, err := Mount(filepath.Join(dir, "nowhere"), dir, Options{}); err == nil {
		f.Unmount()
		t.Fatal("mounted on a missing mountpoint")
	}
	if f, err := Mount(dir, filepath.Join(dir, "nothing"), Options{}); err == nil {
		f.Unmount()
		t.Fatal("mounted a missing backing directory")
	}
}

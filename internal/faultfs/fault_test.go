package faultfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The fsyncgate lesson: a failed fsync loses the pages it covered, and a
// later good fsync does not bring them back, though reads see them until
// the cut.
func TestFsyncEIOLosesPagesForGood(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"f": string(fill('d', 3*pageSize)), "other": ""})
	fh, err := os.OpenFile(m.path("f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt(fill('A', pageSize), 0); err != nil {
		t.Fatal(err)
	}
	m.Inject(Fault{Kind: FsyncEIO, Path: "f"})
	if err := fh.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync under FsyncEIO: %v, want EIO", err)
	}
	writeAt(t, m.path("other"), []byte("other files sync"), 0, true)
	m.Clear()
	if _, err := fh.WriteAt(fill('B', pageSize), 2*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatalf("fsync after Clear: %v", err)
	}
	want := append(append(fill('A', pageSize), fill('d', pageSize)...), fill('B', pageSize)...)
	wantContent(t, m.path("f"), want)
	fh.Close()
	m.cut(t, false)
	copy(want, fill('d', pageSize))
	wantContent(t, m.path("f"), want)
	wantContent(t, m.path("other"), []byte("other files sync"))
	if n := m.Stats().FaultsFired[FsyncEIO]; n != 1 {
		t.Errorf("FsyncEIO fired %d times, want 1", n)
	}
}

func TestWriteEIOChangesNothing(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"data/f": "durable", "g": ""})
	m.Inject(Fault{Kind: WriteEIO, Path: "data/*"})
	fh, err := os.OpenFile(m.path("data/f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt([]byte("CHANGED"), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write under WriteEIO: %v, want EIO", err)
	}
	wantContent(t, m.path("data/f"), []byte("durable"))
	wantContent(t, filepath.Join(m.backing, "data/f"), []byte("durable"))
	writeAt(t, m.path("g"), []byte("unmatched files write"), 0, false)
	m.Clear()
	if _, err := fh.WriteAt([]byte("CHANGED"), 0); err != nil {
		t.Fatalf("write after Clear: %v", err)
	}
}

func TestReadEIOFailsReadsAndPageIns(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"f": string(fill('d', pageSize)), "g": "fine"})
	fh, err := os.Open(m.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	buf := make([]byte, pageSize)
	if _, err := fh.ReadAt(buf, 0); err != nil { // now in the page cache
		t.Fatal(err)
	}
	m.Inject(Fault{Kind: ReadEIO, Path: "f"})
	if _, err := fh.ReadAt(buf, 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read under ReadEIO: %v, want EIO", err)
	}
	if out := inChild(t, "mmap-touch", m.path("f")); !bytes.HasPrefix(out, []byte("fault:")) {
		t.Fatalf("a page-in under ReadEIO: %s", out)
	}
	if out := inChild(t, "mmap-touch", m.path("g")); string(out) != "ok\n" {
		t.Fatalf("a page-in of an unmatched file: %s", out)
	}
}

func TestNoSpace(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"big": string(fill('d', 10000))})
	if n := m.Used(); n != 10000 {
		t.Errorf("Used: %d bytes, want 10000", n)
	}
	const limit = 4 * pageSize
	m.Inject(Fault{Kind: NoSpace, Limit: limit})
	var st syscall.Statfs_t
	if err := syscall.Statfs(m.mnt, &st); err != nil {
		t.Fatal(err)
	}
	if total, free := st.Blocks*uint64(st.Bsize), st.Bavail*uint64(st.Bsize); total != limit || free != pageSize {
		t.Errorf("statfs: %d bytes, %d free; want %d, %d", total, free, limit, pageSize)
	}
	err := os.WriteFile(m.path("more"), fill('m', 8192), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write past the limit: %v, want ENOSPC", err)
	}
	writeAt(t, m.path("big"), fill('w', 5000), 0, true)
	writeAt(t, m.path("small"), fill('s', 4000), 0, true)
	fh, err := os.OpenFile(m.path("small"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := unix.Fallocate(int(fh.Fd()), 0, 0, 8192); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a fallocate past the limit: %v, want ENOSPC", err)
	}
	if err := unix.Fallocate(int(fh.Fd()), 0, 0, 4000); err != nil {
		t.Fatalf("a fallocate within the file: %v", err)
	}
	m.Clear()
	if err := os.WriteFile(m.path("more"), fill('m', 8192), 0o644); err != nil {
		t.Fatalf("write after Clear: %v", err)
	}
	if n := m.Stats().FaultsFired[NoSpace]; n != 2 {
		t.Errorf("NoSpace fired %d times, want 2", n)
	}
}

func TestBitRotFlipsReadsOnly(t *testing.T) {
	content := make([]byte, 3*pageSize)
	for i := range content {
		content[i] = byte(i % 251)
	}
	m := mountWith(t, Options{}, map[string]string{"f": string(content)})
	fh, err := os.Open(m.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	got := make([]byte, len(content))
	if _, err := fh.ReadAt(got, 0); err != nil { // now in the page cache
		t.Fatal(err)
	}
	m.Inject(Fault{Kind: BitRot, Path: "f", Off: 5000, Len: 100})
	if _, err := fh.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		want := content[i]
		if i >= 5000 && i < 5100 {
			want ^= 0x01
		}
		if got[i] != want {
			t.Fatalf("byte %d: %#x, want %#x", i, got[i], want)
		}
	}
	wantContent(t, filepath.Join(m.backing, "f"), content)
	m.Clear()
	if _, err := fh.ReadAt(got, 0); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("after Clear: %v, intact %v", err, bytes.Equal(got, content))
	}
}

func TestSlowDelaysWritesAndSyncs(t *testing.T) {
	const latency = 50 * time.Millisecond
	m := mountWith(t, Options{}, map[string]string{"f": ""})
	m.Inject(Fault{Kind: Slow, Latency: latency})
	fh, err := os.OpenFile(m.path("f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	start := time.Now()
	if _, err := fh.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < latency {
		t.Errorf("a write took %v under Slow %v", took, latency)
	}
	start = time.Now()
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < latency {
		t.Errorf("an fsync took %v under Slow %v", took, latency)
	}
}

func TestKindNames(t *testing.T) {
	want := map[Kind]string{FsyncEIO: "fsync-eio", WriteEIO: "write-eio", ReadEIO: "read-eio",
		NoSpace: "disk-full", Slow: "slow", BitRot: "bitrot", 0: "kind(0)"}
	for k, name := range want {
		if k.String() != name {
			t.Errorf("%d: %q, want %q", int(k), k.String(), name)
		}
	}
}

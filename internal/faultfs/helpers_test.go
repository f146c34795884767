package faultfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the test binary as a child process when a test asks for
// one: a process faultfs can kill with its files open, or one that reads
// the mount through mmap. The test process itself must not page-fault on
// a mount it serves: Go's stop-the-world would wait for the faulting
// thread, which waits for the stopped server.
func TestMain(m *testing.M) {
	if role := os.Getenv("FAULTFS_CHILD"); role != "" {
		if err := runChild(role, os.Getenv("FAULTFS_PATH")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(role, p string) error {
	switch role {
	case "mmap-read":
		return mmapRead(p)
	case "mmap-touch":
		return mmapTouch(p)
	default:
		return boltChild(role, p)
	}
}

// childCmd is the test binary as a child process in role on p.
func childCmd(ctx context.Context, role, p string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAULTFS_CHILD="+role, "FAULTFS_PATH="+p)
	return cmd
}

// inChild runs a child process in role on p to its end and returns what
// it printed.
func inChild(t *testing.T, role, p string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := childCmd(ctx, role, p).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		t.Fatalf("child %s on %s: %v", role, p, err)
	}
	return out
}

// testMount is a faultfs mounted in a test's temporary directory.
type testMount struct {
	*FS
	backing, mnt string
}

// mountWith mounts a faultfs over a backing directory holding files
// (path → content), which are durable from the start.
func mountWith(t testing.TB, opts Options, files map[string]string) *testMount {
	t.Helper()
	dir := t.TempDir()
	m := &testMount{backing: filepath.Join(dir, "backing"), mnt: filepath.Join(dir, "mnt")}
	for _, d := range []string{m.backing, m.mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		p := filepath.Join(m.backing, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	f, err := Mount(m.mnt, m.backing, opts)
	if err != nil {
		t.Fatalf("faultfs cannot mount on this machine; its tests need /dev/fuse and fusermount3 "+
			"(Debian package fuse3), as root or with CAP_SYS_ADMIN: %v", err)
	}
	m.FS = f
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return m
}

func (m *testMount) path(rel string) string { return filepath.Join(m.mnt, rel) }

func (m *testMount) cut(t *testing.T, torn bool) CutReport {
	t.Helper()
	rep, err := m.PowerCut(torn)
	if err != nil {
		t.Fatalf("power cut: %v", err)
	}
	return rep
}

// writeAt writes data at off in the file at p, creating it, and fsyncs
// it if sync is set.
func writeAt(t *testing.T, p string, data []byte, off int64, sync bool) {
	t.Helper()
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := fh.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", dir, err)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantContent(t *testing.T, p string, want []byte) {
	t.Helper()
	if got := readFile(t, p); !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes %q, want %d bytes %q", p, len(got), clip(got), len(want), clip(want))
	}
}

func wantMissing(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: want it gone, lstat says %v", p, err)
	}
}

func clip(b []byte) []byte {
	if len(b) > 40 {
		return append(b[:40:40], "..."...)
	}
	return b
}

func fill(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

// mapped reads the file at p through a shared mapping, in a process
// started now.
func mapped(t *testing.T, p string) []byte {
	t.Helper()
	return inChild(t, "mmap-read", p)
}

// mmapRead is the child that copies the file at p to stdout through a
// mapping.
func mmapRead(p string) error {
	b, closeMap, err := mmapFile(p)
	if err != nil {
		return err
	}
	defer closeMap()
	_, err = os.Stdout.Write(b)
	return err
}

// mmapTouch is the child that reads the first byte of the file at p
// through a mapping and says whether the page-in faulted.
func mmapTouch(p string) error {
	b, closeMap, err := mmapFile(p)
	if err != nil {
		return err
	}
	defer closeMap()
	if err := touchMapped(b); err != nil {
		fmt.Println("fault:", err)
		return nil
	}
	fmt.Println("ok")
	return nil
}

func mmapFile(p string) ([]byte, func(), error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	b, err := syscall.Mmap(int(fh.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { syscall.Munmap(b) }, nil
}

var sink byte

// touchMapped reads b's first byte, a page-in, turning the SIGBUS a
// failed page-in raises into an error.
func touchMapped(b []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	sink = b[0]
	return nil
}

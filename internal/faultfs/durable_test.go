package faultfs

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestUnsyncedWriteIsLostAtCut(t *testing.T) {
	durable := fill('d', 10000)
	m := mountWith(t, Options{}, map[string]string{"f": string(durable)})
	writeAt(t, m.path("f"), []byte("UNSYNCED"), 5000, false)
	if got := readFile(t, m.path("f")); string(got[5000:5008]) != "UNSYNCED" {
		t.Fatalf("before the cut, reads should see the write: %q", got[5000:5008])
	}
	rep := m.cut(t, false)
	wantContent(t, m.path("f"), durable)
	if rep != (CutReport{Files: 1, PagesDropped: 1}) {
		t.Errorf("report %+v, want one file with one page dropped", rep)
	}
}

func TestSyncedWriteSurvivesCut(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"f": string(fill('d', 10000))})
	writeAt(t, m.path("f"), []byte("SYNCED"), 5000, true)
	rep := m.cut(t, false)
	want := fill('d', 10000)
	copy(want[5000:], "SYNCED")
	wantContent(t, m.path("f"), want)
	if rep != (CutReport{}) {
		t.Errorf("report %+v, want nothing undone", rep)
	}
}

func TestUnsyncedGrowthIsUndone(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"f": string(fill('d', 100))})
	writeAt(t, m.path("f"), fill('s', 50), 100, true)
	writeAt(t, m.path("f"), fill('u', 10000), 150, false)
	if fi, err := os.Stat(m.path("f")); err != nil || fi.Size() != 10150 {
		t.Fatalf("before the cut: %v, %v", fi, err)
	}
	m.cut(t, false)
	wantContent(t, m.path("f"), append(fill('d', 100), fill('s', 50)...))
}

func TestUnsyncedTruncateIsUndone(t *testing.T) {
	durable := bytes.Repeat([]byte("0123456789"), 1000)
	m := mountWith(t, Options{}, map[string]string{"f": string(durable), "g": string(durable)})
	if err := os.Truncate(m.path("f"), 10); err != nil {
		t.Fatal(err)
	}
	writeAt(t, m.path("f"), []byte("after"), 9000, false)
	if err := os.WriteFile(m.path("g"), []byte("short"), 0o644); err != nil { // O_TRUNC
		t.Fatal(err)
	}
	m.cut(t, false)
	wantContent(t, m.path("f"), durable)
	wantContent(t, m.path("g"), durable)
}

func TestUnsyncedFallocateIsUndone(t *testing.T) {
	durable := bytes.Repeat([]byte("0123456789"), 1000)
	m := mountWith(t, Options{}, map[string]string{"f": string(durable)})
	fh, err := os.OpenFile(m.path("f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := unix.Fallocate(int(fh.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 100, 5000); err != nil {
		t.Fatalf("punch a hole: %v", err)
	}
	if err := unix.Fallocate(int(fh.Fd()), 0, 0, 50000); err != nil {
		t.Fatalf("grow: %v", err)
	}
	if fi, err := fh.Stat(); err != nil || fi.Size() != 50000 {
		t.Fatalf("after fallocate: %v, %v", fi, err)
	}
	fh.Close()
	m.cut(t, false)
	wantContent(t, m.path("f"), durable)
}

func TestODsyncWriteIsDurable(t *testing.T) {
	for _, flag := range []int{syscall.O_DSYNC, syscall.O_SYNC} {
		m := mountWith(t, Options{}, map[string]string{"f": ""})
		fh, err := os.OpenFile(m.path("f"), os.O_WRONLY|flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.Write([]byte("at once")); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		if s := m.Stats(); s.Syncs != 1 {
			t.Errorf("%d syncs reached faultfs, want the one the kernel sends after the write", s.Syncs)
		}
		m.cut(t, false)
		wantContent(t, m.path("f"), []byte("at once"))
	}
}

// tornOutcome overwrites the 16 durable pages of a file and appends 4
// more, none synced, cuts torn with seed, and describes each page: K kept,
// . dropped (durable content back), 0 dropped past the durable size but
// before a kept page (zeros), and nothing for pages past the new end.
func tornOutcome(t *testing.T, seed uint64) (string, CutReport) {
	m := mountWith(t, Options{Seed: seed}, map[string]string{"f": string(fill('a', 16*pageSize))})
	writeAt(t, m.path("f"), fill('b', 16*pageSize), 0, false)
	writeAt(t, m.path("f"), fill('c', 4*pageSize), 16*pageSize, false)
	rep := m.cut(t, true)
	got := readFile(t, m.path("f"))
	if len(got)%pageSize != 0 || len(got) < 16*pageSize {
		t.Fatalf("size %d after a torn cut: not whole pages from the durable size on", len(got))
	}
	var out strings.Builder
	for p := 0; p < len(got)/pageSize; p++ {
		pg := got[p*pageSize : (p+1)*pageSize]
		switch {
		case bytes.Equal(pg, fill('b', pageSize)) || bytes.Equal(pg, fill('c', pageSize)):
			out.WriteByte('K')
		case p < 16 && bytes.Equal(pg, fill('a', pageSize)):
			out.WriteByte('.')
		case p >= 16 && bytes.Equal(pg, fill(0, pageSize)):
			out.WriteByte('0')
		default:
			t.Fatalf("page %d is neither kept nor put back: %q", p, clip(pg))
		}
	}
	return out.String(), rep
}

func TestTornCutKeepsAStrictSubsetPerSeed(t *testing.T) {
	outcome, rep := tornOutcome(t, 7)
	t.Logf("seed 7: %s", outcome)
	kept := strings.Count(outcome, "K")
	if kept == 0 || kept == 20 {
		t.Fatalf("seed 7 kept %d of 20 unsynced pages, want a strict subset: %s", kept, outcome)
	}
	if rep.Files != 1 || rep.PagesKept != kept || rep.PagesDropped != 20-kept {
		t.Errorf("report %+v, outcome %s", rep, outcome)
	}
	if strings.HasSuffix(outcome, "0") {
		t.Errorf("the file should end at its last kept page: %s", outcome)
	}
	if again, _ := tornOutcome(t, 7); again != outcome {
		t.Errorf("seed 7 again: %s, first %s", again, outcome)
	}
	if other, _ := tornOutcome(t, 8); other == outcome {
		t.Errorf("seed 8 gave seed 7's outcome %s", outcome)
	}
}

// A process started after a cut maps the durable content, not pages the
// kernel cached before it.
func TestMmapReaderAfterCutSeesDurableState(t *testing.T) {
	m := mountWith(t, Options{}, map[string]string{"f": string(fill('d', 2*pageSize))})
	writeAt(t, m.path("f"), fill('u', 2*pageSize), 0, false)
	if got := mapped(t, m.path("f")); !bytes.Equal(got, fill('u', 2*pageSize)) {
		t.Fatalf("mapped before the cut: %q", clip(got))
	}
	m.cut(t, false)
	if got := mapped(t, m.path("f")); !bytes.Equal(got, fill('d', 2*pageSize)) {
		t.Fatalf("mapped after the cut: %q, want the durable content", clip(got))
	}
}

package faultfs

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Several mounts, each written by several goroutines at once, each cut
// at the same time as the others: every file whose data was synced keeps
// it, every other comes back empty.
func TestManyFilesOnConcurrentMounts(t *testing.T) {
	const mounts, writers, files = 3, 4, 25
	ms := make([]*testMount, mounts)
	for i := range ms {
		ms[i] = mountWith(t, Options{Seed: uint64(i), Logf: func(string, ...any) {}}, nil)
	}
	var wg sync.WaitGroup
	errs := make(chan error, mounts*writers)
	for _, m := range ms {
		for w := range writers {
			wg.Go(func() { errs <- writeFiles(m, w, files) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	reports, cutErrs := make([]CutReport, mounts), make([]error, mounts)
	for i, m := range ms {
		syncDir(t, m.mnt)
		wg.Go(func() { reports[i], cutErrs[i] = m.PowerCut(false) })
	}
	wg.Wait()
	for i, m := range ms {
		if cutErrs[i] != nil {
			t.Fatalf("mount %d: %v", i, cutErrs[i])
		}
		if reports[i].Files != writers*(files/2) {
			t.Errorf("mount %d: %+v, want %d files reverted", i, reports[i], writers*(files/2))
		}
		for w := range writers {
			for f := range files {
				want := []byte(nil)
				if f%2 == 0 {
					want = []byte(fileName(w, f))
				}
				wantContent(t, m.path(fileName(w, f)), want)
			}
		}
	}
}

func fileName(w, f int) string { return fmt.Sprintf("w%d-f%02d", w, f) }

// writeFiles creates files and writes each its name, syncing the even
// ones.
func writeFiles(m *testMount, w, files int) error {
	for f := range files {
		name := fileName(w, f)
		fh, err := os.Create(m.path(name))
		if err != nil {
			return err
		}
		if _, err := fh.WriteString(name); err != nil {
			return err
		}
		if f%2 == 0 {
			if err := fh.Sync(); err != nil {
				return err
			}
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	return nil
}

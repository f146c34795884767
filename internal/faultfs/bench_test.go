package faultfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkAppendSync appends 4 KiB and fdatasyncs, as a raft log
// segment is written, through faultfs and straight to its backing
// directory: go test -run x -bench AppendSync ./internal/faultfs/
func BenchmarkAppendSync(b *testing.B) {
	m := mountWith(b, Options{}, nil)
	for _, dir := range []string{m.mnt, m.backing} {
		b.Run(filepath.Base(dir), func(b *testing.B) {
			fh, err := os.Create(filepath.Join(dir, "seg"))
			if err != nil {
				b.Fatal(err)
			}
			defer fh.Close()
			data := fill('x', pageSize)
			b.SetBytes(pageSize)
			for b.Loop() {
				if _, err := fh.Write(data); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Fdatasync(int(fh.Fd())); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package deltalog_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/raftcat/raftcat/deltalog"
)

// benchTable generates about 10,000 live files over 100 commits, with a
// classic checkpoint at 90 (or none).
func benchTable(b *testing.B, checkpoint int) string {
	dir := filepath.Join(b.TempDir(), "bench")
	genTable{commits: 100, addsPer: 100, checkpoint: checkpoint}.write(b, dir)
	return fileURL(dir)
}

func BenchmarkOpen(b *testing.B) {
	loc := benchTable(b, 90)
	st := newStore(b)
	b.ResetTimer()
	for b.Loop() {
		open(b, st, nil, deltalog.Source{Location: loc})
	}
}

// Latest snapshot from nothing: checkpoint plus 9 commits, or 100 commits.
func BenchmarkSnapshotCold(b *testing.B) {
	for _, c := range []struct {
		name string
		cp   int
	}{{"checkpoint", 90}, {"replay100", -1}} {
		b.Run(c.name, func(b *testing.B) {
			loc := benchTable(b, c.cp)
			st := newStore(b)
			b.ResetTimer()
			for b.Loop() {
				l := open(b, st, nil, deltalog.Source{Location: loc})
				snapshot(b, l, l.Latest())
			}
		})
	}
}

// Open plus a cached latest snapshot: the steady state of a server.
func BenchmarkSnapshotCached(b *testing.B) {
	loc := benchTable(b, 90)
	st := newStore(b)
	cache := deltalog.NewCache(0)
	snapshot(b, open(b, st, cache, deltalog.Source{Location: loc}), 99)
	b.ResetTimer()
	for b.Loop() {
		snapshot(b, open(b, st, cache, deltalog.Source{Location: loc}), 99)
	}
}

// One new commit on top of a cached snapshot of about 10,000 files (the
// cache is primed through a Log capped at the previous version; the
// priming is not timed).
func BenchmarkSnapshotIncremental(b *testing.B) {
	loc := benchTable(b, 90)
	st := newStore(b)
	for b.Loop() {
		b.StopTimer()
		cache := deltalog.NewCache(0)
		snapshot(b, open(b, st, cache, deltalog.Source{Location: loc, Latest: 98}), 98)
		b.StartTimer()
		l := open(b, st, cache, deltalog.Source{Location: loc})
		snapshot(b, l, 99)
	}
}

func BenchmarkVersionAt(b *testing.B) {
	loc := benchTable(b, 90)
	st := newStore(b)
	cache := deltalog.NewCache(0)
	l := open(b, st, cache, deltalog.Source{Location: loc})
	snapshot(b, l, 99)
	ts, err := l.Timestamp(context.Background(), 50)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if v, err := l.VersionAt(context.Background(), ts); err != nil || v < 50 {
			b.Fatal(v, err)
		}
	}
}

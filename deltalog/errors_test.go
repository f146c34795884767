package deltalog_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/raftcat/raftcat/deltalog"
)

func TestVersionOutOfRange(t *testing.T) {
	l := open(t, newStore(t), nil, deltalog.Source{Location: tableURL(t, "simple_table")})
	ctx := context.Background()
	for _, v := range []int64{5, 100, -1} {
		_, err := l.Snapshot(ctx, v)
		wantErr(t, err, deltalog.ErrVersionUnavailable, "snapshot out of range")
		_, err = l.Commit(ctx, v)
		wantErr(t, err, deltalog.ErrVersionUnavailable, "commit out of range")
	}
}

func TestNotADeltaTable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "data.parquet"), "x")
	writeFile(t, filepath.Join(dir, "_delta_log", "_last_checkpoint"), `{"version":3}`)
	writeFile(t, filepath.Join(dir, "_delta_log", "00000000000000000000.crc"), `{}`)
	st := newStore(t)
	for _, loc := range []string{fileURL(dir), fileURL(filepath.Join(dir, "missing"))} {
		_, err := deltalog.Open(context.Background(), st, nil, deltalog.Source{Location: loc})
		wantErr(t, err, deltalog.ErrNotDeltaTable, "open "+loc)
	}
}

func TestCorruptCommit(t *testing.T) {
	dir := copyTable(t, "simple_table")
	writeFile(t, filepath.Join(dir, "_delta_log", versionName(3)+".json"), "{\"add\":{\"path\":\n")
	l := open(t, newStore(t), nil, deltalog.Source{Location: fileURL(dir)})
	_, err := l.Snapshot(context.Background(), 4)
	wantErr(t, err, deltalog.ErrCorrupt, "snapshot over a broken commit")
	_, err = l.Commit(context.Background(), 3)
	wantErr(t, err, deltalog.ErrCorrupt, "broken commit")
}

// A missing commit in the middle leaves only the latest version, which
// reports the gap.
func TestMissingCommit(t *testing.T) {
	dir := copyTable(t, "simple_table")
	if err := os.Remove(filepath.Join(dir, "_delta_log", versionName(2)+".json")); err != nil {
		t.Fatal(err)
	}
	l := open(t, newStore(t), nil, deltalog.Source{Location: fileURL(dir)})
	_, err := l.Snapshot(context.Background(), 4)
	wantErr(t, err, deltalog.ErrCorrupt, "snapshot after a gap")
	_, err = l.Snapshot(context.Background(), 1)
	wantErr(t, err, deltalog.ErrVersionUnavailable, "snapshot before a gap")
}

// An unreadable checkpoint falls back to replaying the commits.
func TestBrokenCheckpointFallsBack(t *testing.T) {
	dir := copyTable(t, "basic-with-inserts-deletes-checkpoint")
	writeFile(t, filepath.Join(dir, "_delta_log", versionName(10)+".checkpoint.parquet"), "not parquet")
	st := newStore(t)
	l := open(t, st, nil, deltalog.Source{Location: fileURL(dir)})
	if got := rowCount(t, st, l, snapshot(t, l, 13)); got != 41 {
		t.Fatalf("rows %d, want 41", got)
	}
	// Without the commits before it, the broken checkpoint is an error.
	if err := os.Remove(filepath.Join(dir, "_delta_log", versionName(0)+".json")); err != nil {
		t.Fatal(err)
	}
	l = open(t, st, nil, deltalog.Source{Location: fileURL(dir)})
	_, err := l.Snapshot(context.Background(), 13)
	wantErr(t, err, deltalog.ErrCorrupt, "snapshot over a broken checkpoint")
}

package deltalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/deltalog"
	"github.com/raftcat/raftcat/storage"
)

// cdc_ict_table's in-commit timestamps; v1 was hand-edited upstream to a
// value years before v0, so they are not monotonic.
var ictTimes = []int64{1783874203271, 1683874206883, 1783874212175, 1783874213881}

func TestInCommitTimestamps(t *testing.T) {
	ctx := context.Background()
	l := open(t, newStore(t), nil, deltalog.Source{Location: tableURL(t, "cdc_ict_table")})
	for v, want := range ictTimes {
		ts, err := l.Timestamp(ctx, int64(v))
		if err != nil || ts != want {
			t.Errorf("Timestamp(%d) = %d, %v; want %d", v, ts, err, want)
		}
		c, err := l.Commit(ctx, int64(v))
		if err != nil || c.Timestamp != want {
			t.Errorf("Commit(%d).Timestamp = %v, %v; want %d", v, c, err, want)
		}
		if s := snapshot(t, l, int64(v)); s.Timestamp != want {
			t.Errorf("Snapshot(%d).Timestamp = %d, want %d", v, s.Timestamp, want)
		}
	}
}

func TestVersionAtFollowsInCommitTimestamps(t *testing.T) {
	l := open(t, newStore(t), nil, deltalog.Source{Location: tableURL(t, "cdc_ict_table")})
	at := []struct {
		ts   int64
		want int64 // -1: out of range
	}{
		{ictTimes[1], 1},
		{ictTimes[1] + 1, 1},
		{ictTimes[1] - 1, -1}, // before every commit
		{ictTimes[0], 1},      // v1's ts is older, and v1 is the later version
		{ictTimes[2], 2},
		{ictTimes[3] - 1, 2},
		{ictTimes[3], 3},
		{ictTimes[3] + 1, -1}, // after the latest commit
	}
	for _, c := range at {
		checkVersion(t, "VersionAt", l.VersionAt, c.ts, c.want)
	}
	after := []struct {
		ts   int64
		want int64
	}{
		{0, 0},
		{ictTimes[1], 0},
		{ictTimes[0] + 1, 2},
		{ictTimes[2], 2},
		{ictTimes[3], 3},
		{ictTimes[3] + 1, -1},
	}
	for _, c := range after {
		checkVersion(t, "VersionAtOrAfter", l.VersionAtOrAfter, c.ts, c.want)
	}
}

func checkVersion(t *testing.T, name string, fn func(context.Context, int64) (int64, error), ts, want int64) {
	t.Helper()
	got, err := fn(context.Background(), ts)
	if want < 0 {
		wantErr(t, err, deltalog.ErrTimestampOutOfRange, name)
		return
	}
	if err != nil || got != want {
		t.Errorf("%s(%d) = %d, %v; want %d", name, ts, got, err, want)
	}
}

// Without in-commit timestamps the file times count, made monotonic.
func TestFileTimestampsAreMonotonic(t *testing.T) {
	dir := copyTable(t, "simple_table")
	base := time.UnixMilli(1_700_000_000_000)
	mtimes := []time.Time{base, base, base.Add(-time.Hour), base.Add(time.Minute), base.Add(time.Minute)}
	for v, mt := range mtimes {
		p := filepath.Join(dir, "_delta_log", versionName(int64(v))+".json")
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	b := base.UnixMilli()
	want := []int64{b, b + 1, b + 2, b + 60_000, b + 60_001}
	l := open(t, newStore(t), nil, deltalog.Source{Location: fileURL(dir)})
	for v, w := range want {
		if ts, err := l.Timestamp(context.Background(), int64(v)); err != nil || ts != w {
			t.Errorf("Timestamp(%d) = %d, %v; want %d", v, ts, err, w)
		}
	}
	checkVersion(t, "VersionAt", l.VersionAt, b+1, 1)
	checkVersion(t, "VersionAt", l.VersionAt, b+59_999, 2)
	checkVersion(t, "VersionAt", l.VersionAt, b-1, -1)
	checkVersion(t, "VersionAt", l.VersionAt, b+60_002, -1)
	checkVersion(t, "VersionAtOrAfter", l.VersionAtOrAfter, b+3, 3)
	checkVersion(t, "VersionAtOrAfter", l.VersionAtOrAfter, b-100, 0)
	_, err := l.Timestamp(context.Background(), 5)
	wantErr(t, err, deltalog.ErrVersionUnavailable, "timestamp beyond latest")
}

// In-commit timestamps enabled at version 2 of a table: older versions keep
// their file times.
func TestInCommitTimestampEnablementVersion(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "_delta_log")
	writeFile(t, filepath.Join(log, versionName(0)+".json"), `{"commitInfo":{"timestamp":5}}
{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"t","format":{"provider":"parquet"},"schemaString":"{}","partitionColumns":[],"configuration":{}}}
`)
	writeFile(t, filepath.Join(log, versionName(1)+".json"), `{"commitInfo":{"timestamp":6}}
{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":3}"}}
`)
	writeFile(t, filepath.Join(log, versionName(2)+".json"), `{"commitInfo":{"inCommitTimestamp":1800000000000,"timestamp":7}}
{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["inCommitTimestamp"]}}
{"metaData":{"id":"t","format":{"provider":"parquet"},"schemaString":"{}","partitionColumns":[],"configuration":{"delta.enableInCommitTimestamps":"true","delta.inCommitTimestampEnablementVersion":"2","delta.inCommitTimestampEnablementTimestamp":"1800000000000"}}}
`)
	writeFile(t, filepath.Join(log, versionName(3)+".json"), `{"commitInfo":{"inCommitTimestamp":1800000000500,"timestamp":8}}
{"add":{"path":"b.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":4}"}}
`)
	mt := time.UnixMilli(1_700_000_000_000)
	for v := 0; v < 4; v++ {
		if err := os.Chtimes(filepath.Join(log, versionName(int64(v))+".json"), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	l := open(t, newStore(t), nil, deltalog.Source{Location: fileURL(dir)})
	want := []int64{1_700_000_000_000, 1_700_000_000_001, 1_800_000_000_000, 1_800_000_000_500}
	for v, w := range want {
		if ts, err := l.Timestamp(context.Background(), int64(v)); err != nil || ts != w {
			t.Errorf("Timestamp(%d) = %d, %v; want %d", v, ts, err, w)
		}
	}
	checkVersion(t, "VersionAt", l.VersionAt, 1_800_000_000_499, 2)
	checkVersion(t, "VersionAtOrAfter", l.VersionAtOrAfter, 1_700_000_000_001, 1)
}

// rangeStore is a recorder that also serves (and counts) ranged reads.
type rangeStore struct {
	*recorder
	blobs  *storage.Blobs
	ranges map[string]int
}

func (r *rangeStore) ReadRange(ctx context.Context, loc string, off, n int64) ([]byte, error) {
	r.mu.Lock()
	r.ranges[loc[strings.LastIndex(loc, "/")+1:]]++
	r.mu.Unlock()
	return r.blobs.ReadRange(ctx, loc, off, n)
}

// The in-commit timestamp of a large commit comes from a ranged read of
// its head.
func TestInCommitTimestampReadsTheHeadOnly(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "_delta_log")
	var big strings.Builder
	big.WriteString(`{"commitInfo":{"inCommitTimestamp":1800000000000,"timestamp":1}}` + "\n" + protocolLine + "\n")
	big.WriteString(strings.Replace(metadataLine, `"configuration":{}`, `"configuration":{"delta.enableInCommitTimestamps":"true"}`, 1) + "\n")
	for i := 0; i < 400; i++ {
		big.WriteString(addLine(fmt.Sprintf("part-%04d.parquet", i), 1) + "\n")
	}
	writeFile(t, filepath.Join(log, versionName(0)+".json"), big.String())
	writeFile(t, filepath.Join(log, versionName(1)+".json"), `{"commitInfo":{"inCommitTimestamp":1800000000007}}`+"\n"+addLine("x.parquet", 1)+"\n")
	blobs := newStore(t)
	st := &rangeStore{recorder: record(blobs), blobs: blobs, ranges: map[string]int{}}
	l := open(t, st, nil, deltalog.Source{Location: fileURL(dir)})
	if s := snapshot(t, l, 1); s.Timestamp != 1800000000007 || len(s.Files) != 401 {
		t.Fatalf("snapshot 1: ts %d, %d files", s.Timestamp, len(s.Files))
	}
	st.readNames()
	if ts, err := l.Timestamp(context.Background(), 0); err != nil || ts != 1800000000000 {
		t.Fatalf("Timestamp(0) = %d, %v", ts, err)
	}
	if reads := st.readNames(); len(reads) != 0 || st.ranges[versionName(0)+".json"] != 1 {
		t.Fatalf("reads %v, ranged reads %v", reads, st.ranges)
	}
}

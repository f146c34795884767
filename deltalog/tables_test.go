package deltalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/deltalog"
	"github.com/raftcat/raftcat/internal/goldentables"
	"github.com/raftcat/raftcat/internal/parquettest"
)

// expectedRows is the README's row count at every version, by table.
var expectedRows = goldentables.Rows

func TestRowCountsAtEveryVersion(t *testing.T) {
	st := newStore(t)
	cache := deltalog.NewCache(0)
	for name, want := range expectedRows {
		t.Run(name, func(t *testing.T) {
			l := open(t, st, cache, deltalog.Source{Location: tableURL(t, name)})
			if l.Latest() != int64(len(want)-1) || l.Earliest() != 0 {
				t.Fatalf("versions %d..%d, want 0..%d", l.Earliest(), l.Latest(), len(want)-1)
			}
			for v, rows := range want {
				s := snapshot(t, l, int64(v))
				if got := rowCount(t, st, l, s); got != rows || s.Version != int64(v) {
					t.Errorf("v%d: %d rows (snapshot version %d), want %d", v, got, s.Version, rows)
				}
				checkSorted(t, s)
			}
		})
	}
}

// Every version again, each from a fresh cache: checkpoints and full
// replays rather than incremental builds.
func TestRowCountsWithoutSharedCache(t *testing.T) {
	st := newStore(t)
	for name, want := range expectedRows {
		for v := len(want) - 1; v >= 0; v-- {
			l := open(t, st, nil, deltalog.Source{Location: tableURL(t, name)})
			if got := rowCount(t, st, l, snapshot(t, l, int64(v))); got != want[v] {
				t.Errorf("%s v%d: %d rows, want %d", name, v, got, want[v])
			}
		}
	}
}

func checkSorted(t *testing.T, s *deltalog.Snapshot) {
	t.Helper()
	for i := 1; i < len(s.Files); i++ {
		if s.Files[i-1].Key() >= s.Files[i].Key() {
			t.Fatalf("files not sorted by key at %d: %q, %q", i, s.Files[i-1].Key(), s.Files[i].Key())
		}
	}
}

func TestLatestMetadataAndProtocolWin(t *testing.T) {
	st := newStore(t)
	l := open(t, st, nil, deltalog.Source{Location: tableURL(t, "log-replay-latest-metadata-protocol")})
	s0, s1, s2 := snapshot(t, l, 0), snapshot(t, l, 1), snapshot(t, l, 2)
	if strings.Contains(s0.Metadata.SchemaString, "col2") || !strings.Contains(s0.Metadata.SchemaString, "col1") {
		t.Errorf("v0 schema %s", s0.Metadata.SchemaString)
	}
	if !strings.Contains(s1.Metadata.SchemaString, "col2") || !strings.Contains(s2.Metadata.SchemaString, "col2") {
		t.Errorf("v1/v2 schema lacks col2: %s / %s", s1.Metadata.SchemaString, s2.Metadata.SchemaString)
	}
	if p := s0.Protocol; p.MinReaderVersion != 1 || p.MinWriterVersion != 2 {
		t.Errorf("v0 protocol %+v", p)
	}
	p := s2.Protocol
	if p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || !slices.Equal(p.WriterFeatures, []string{"appendOnly", "invariants"}) || len(p.ReaderFeatures) != 0 {
		t.Errorf("v2 protocol %+v", p)
	}
	if s2.Metadata.Format.Options == nil || s2.Metadata.Configuration == nil || s2.Metadata.PartitionColumns == nil {
		t.Errorf("metadata maps/slices must not be nil: %+v", s2.Metadata)
	}
}

// The snapshot at or after a checkpoint reads the checkpoint and only the
// commits after it.
func TestCheckpointsAreUsed(t *testing.T) {
	cases := []struct {
		table   string
		version int64
		want    []string // name fragments of the files read
		files   int
	}{
		{"basic-with-inserts-deletes-checkpoint", 13, []string{"10.checkpoint.parquet", "11.json", "12.json", "13.json"}, 7},
		{"checkpoint-v2-table", 9, []string{"08.checkpoint.e5ac4dc4-be27-4106-8a55-609707487f83.json", "08.checkpoint.0000000001.0000000001.d55fb2cb-b8d3-4362-8572-c52142a9da1f.parquet", "09.json"}, 8},
		{"checkpoint-v2-table", 6, []string{"06.checkpoint.f5ee283b-37c7-46af-b64c-8f77c6a5c43a.json", "06.checkpoint.0000000001.0000000001.1a1516f4-8a39-48f0-9ccd-cc3790d824c7.parquet"}, 5},
		{"v2-checkpoint-parquet", 2, []string{"02.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet", "02.checkpoint.0000000001.0000000002.055454d8-329c-4e0e-864d-7f867075af33.parquet", "02.checkpoint.0000000002.0000000002.33321cc1-9c55-4d1f-8511-fafe6d2e1133.parquet"}, 4},
		{"kernel-pagination-multi-part-checkpoints", 2, []string{"00.checkpoint.0000000001.0000000003.parquet", "00.checkpoint.0000000002.0000000003.parquet", "00.checkpoint.0000000003.0000000003.parquet", "01.json", "02.json"}, 20},
		{"dv-with-columnmapping", 15, []string{"10.checkpoint.parquet", "11.json", "12.json", "13.json", "14.json", "15.json"}, 0},
	}
	for _, c := range cases {
		rec := record(newStore(t))
		l := open(t, rec, nil, deltalog.Source{Location: tableURL(t, c.table)})
		if c.version != l.Latest() {
			// Timestamps need the latest metadata (in-commit timestamps).
			snapshot(t, l, l.Latest())
			rec.readNames()
		}
		s := snapshot(t, l, c.version)
		got := rec.readNames()
		if len(got) != len(c.want) {
			t.Errorf("%s v%d read %v, want %v", c.table, c.version, got, c.want)
		}
		for _, w := range c.want {
			if got["000000000000000000"+w] != 1 {
				t.Errorf("%s v%d: %s read %d times (reads %v)", c.table, c.version, w, got["000000000000000000"+w], got)
			}
		}
		if c.files > 0 && len(s.Files) != c.files {
			t.Errorf("%s v%d: %d files, want %d", c.table, c.version, len(s.Files), c.files)
		}
	}
}

func TestV2CheckpointProtocol(t *testing.T) {
	st := newStore(t)
	for _, name := range []string{"checkpoint-v2-table", "v2-checkpoint-parquet"} {
		l := open(t, st, nil, deltalog.Source{Location: tableURL(t, name)})
		s := snapshot(t, l, l.Latest())
		if p := s.Protocol; p.MinReaderVersion != 3 || !slices.Equal(p.ReaderFeatures, []string{"v2Checkpoint"}) {
			t.Errorf("%s protocol %+v", name, p)
		}
		if s.Metadata.Configuration["delta.checkpointPolicy"] != "v2" {
			t.Errorf("%s configuration %v", name, s.Metadata.Configuration)
		}
	}
}

func TestIncompleteMultiPartCheckpointIsIgnored(t *testing.T) {
	dir := copyTable(t, "kernel-pagination-multi-part-checkpoints")
	if err := os.Remove(filepath.Join(dir, "_delta_log", "00000000000000000000.checkpoint.0000000002.0000000003.parquet")); err != nil {
		t.Fatal(err)
	}
	rec := record(newStore(t))
	l := open(t, rec, nil, deltalog.Source{Location: fileURL(dir)})
	if got := rowCount(t, rec, l, snapshot(t, l, 2)); got != 2000 {
		t.Fatalf("rows %d", got)
	}
	for name := range rec.readNames() {
		if strings.Contains(name, "checkpoint") {
			t.Errorf("read %s of an incomplete checkpoint", name)
		}
	}
}

// With the commits before a checkpoint cleaned up, the checkpoint is the
// earliest version.
func TestEarliestAfterLogCleanup(t *testing.T) {
	dir := copyTable(t, "basic-with-inserts-deletes-checkpoint")
	for v := 0; v < 10; v++ {
		if err := os.Remove(filepath.Join(dir, "_delta_log", versionName(int64(v))+".json")); err != nil {
			t.Fatal(err)
		}
	}
	st := newStore(t)
	l := open(t, st, nil, deltalog.Source{Location: fileURL(dir)})
	if l.Earliest() != 10 || l.Latest() != 13 {
		t.Fatalf("versions %d..%d, want 10..13", l.Earliest(), l.Latest())
	}
	for v, want := range map[int64]int64{10: 35, 11: 45, 13: 41} {
		if got := rowCount(t, st, l, snapshot(t, l, v)); got != want {
			t.Errorf("v%d: %d rows, want %d", v, got, want)
		}
	}
	_, err := l.Snapshot(context.Background(), 9)
	wantErr(t, err, deltalog.ErrVersionUnavailable, "snapshot below earliest")
}

func TestTmpDirectoryIsIgnored(t *testing.T) {
	st := newStore(t)
	l := open(t, st, nil, deltalog.Source{Location: tableURL(t, "simple_table")})
	if l.Latest() != 4 {
		t.Fatalf("latest %d, want 4", l.Latest())
	}
	s := snapshot(t, l, 4)
	if len(s.Files) != 5 {
		t.Errorf("%d files, want 5", len(s.Files))
	}
	for _, f := range s.Files {
		if strings.Contains(f.Path, "c1777d7d-89d9-4790-b38a-6ee7e24456b1-c001") {
			t.Errorf("file of the uncommitted .tmp commit is live: %s", f.Path)
		}
	}
}

func TestColumnMappingUsesPhysicalPartitionNames(t *testing.T) {
	st := newStore(t)
	for _, name := range []string{"dv-with-columnmapping", "table_with_column_mapping"} {
		l := open(t, st, nil, deltalog.Source{Location: tableURL(t, name)})
		s := snapshot(t, l, l.Latest())
		if len(s.Metadata.PartitionColumns) != 1 {
			t.Fatalf("%s partition columns %v", name, s.Metadata.PartitionColumns)
		}
		for _, f := range s.Files {
			if len(f.PartitionValues) != 1 {
				t.Fatalf("%s: partition values %v", name, f.PartitionValues)
			}
			for k, v := range f.PartitionValues {
				if !strings.HasPrefix(k, "col-") || v == nil {
					t.Errorf("%s: partition key %q (value %v) is not a physical name", name, k, v)
				}
			}
		}
	}
}

// Partition values from a checkpoint and from JSON commits decode alike.
func TestPartitionValuesFromCheckpoint(t *testing.T) {
	st := newStore(t)
	l := open(t, st, nil, deltalog.Source{Location: tableURL(t, "dv-with-columnmapping")})
	s := snapshot(t, l, 10) // straight from the checkpoint
	seen := map[string]bool{}
	for _, f := range s.Files {
		for _, v := range f.PartitionValues {
			seen[*v] = true
		}
		if !strings.Contains(f.Path, "=") {
			t.Errorf("path %q", f.Path)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no partition values")
	}
}

func TestDeletionVectorFiles(t *testing.T) {
	st := newStore(t)
	for _, name := range []string{"basic-dv-no-checkpoint", "dv-with-columnmapping"} {
		l := open(t, st, nil, deltalog.Source{Location: tableURL(t, name)})
		s := snapshot(t, l, l.Latest())
		n := 0
		for _, f := range s.Files {
			if f.DeletionVector == nil {
				continue
			}
			n++
			loc, ok := f.DeletionVector.FileLocation(l.Location())
			if !ok || !strings.Contains(loc, "/deletion_vector_") {
				t.Fatalf("DV location %q %v", loc, ok)
			}
			if _, err := st.Read(context.Background(), loc); err != nil {
				t.Errorf("%s: DV file: %v", name, err)
			}
			if !strings.HasSuffix(f.Key(), "#"+f.DeletionVector.UniqueID()) {
				t.Errorf("key %q lacks the DV id", f.Key())
			}
		}
		if n == 0 {
			t.Errorf("%s: no file with a deletion vector", name)
		}
	}
}

func TestChangeDataFiles(t *testing.T) {
	st := newStore(t)
	cases := []struct {
		table   string
		version int64
		files   int
		want    map[string]int
	}{
		{"cdf-table", 1, 6, map[string]int{"update_preimage": 3, "update_postimage": 3}},
		{"cdf-table", 2, 6, map[string]int{"update_preimage": 3, "update_postimage": 3}},
		{"cdf-table", 3, 1, map[string]int{"delete": 1}},
		{"cdc_ict_table", 2, 2, map[string]int{"delete": 2}},
		{"cdc_ict_table", 3, 2, map[string]int{"update_preimage": 2, "update_postimage": 2}},
	}
	for _, c := range cases {
		l := open(t, st, nil, deltalog.Source{Location: tableURL(t, c.table)})
		commit, err := l.Commit(context.Background(), c.version)
		if err != nil {
			t.Fatal(err)
		}
		got, files := map[string]int{}, 0
		for _, a := range commit.Actions {
			if a.CDC == nil {
				continue
			}
			files++
			for _, ct := range changeTypes(t, st, l.FileLocation(a.CDC.Path)) {
				got[ct]++
			}
		}
		if files != c.files || !mapsEqual(got, c.want) {
			t.Errorf("%s v%d: %d cdc files with %v, want %d with %v", c.table, c.version, files, got, c.files, c.want)
		}
	}
}

func changeTypes(t *testing.T, st deltalog.Store, loc string) []string {
	t.Helper()
	data, err := st.Read(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := parquettest.StringColumn(data, "_change_type")
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Each commit's actions come back in file order, one field set each.
func TestCommitActions(t *testing.T) {
	st := newStore(t)
	l := open(t, st, nil, deltalog.Source{Location: tableURL(t, "simple_table")})
	c, err := l.Commit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	adds, removes := 0, 0
	for i, a := range c.Actions {
		set := 0
		for _, p := range []bool{a.Add != nil, a.Remove != nil, a.CDC != nil, a.Metadata != nil, a.Protocol != nil, a.CommitInfo != nil} {
			if p {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("action %d has %d fields set", i, set)
		}
		if a.Add != nil {
			adds++
		}
		if a.Remove != nil {
			removes++
		}
	}
	if adds != 21 || removes != 5 || c.Actions[0].CommitInfo == nil || c.Actions[0].CommitInfo["operation"] != "MERGE" {
		t.Errorf("commit 1: %d adds, %d removes, first %+v", adds, removes, c.Actions[0])
	}
	if c.Version != 1 || c.Timestamp <= 0 {
		t.Errorf("commit version %d ts %d", c.Version, c.Timestamp)
	}
}

func TestFileLocation(t *testing.T) {
	l := open(t, newStore(t), nil, deltalog.Source{Location: tableURL(t, "simple_table") + "/"})
	root := tableURL(t, "simple_table")
	cases := map[string]string{
		"part-0.parquet":                       root + "/part-0.parquet",
		"date%3D2021-04-28/a%20b.parquet":      root + "/date=2021-04-28/a b.parquet",
		"s3://bucket/t/x.parquet":              "s3://bucket/t/x.parquet",
		"file:/tmp/t/x.parquet":                "file:/tmp/t/x.parquet",
		"abfss://c@a.dfs.core.windows.net/x":   "abfss://c@a.dfs.core.windows.net/x",
		"/mnt/data/x%20y.parquet":              "file:///mnt/data/x y.parquet",
		"col-1=a%3Ab/part-1.parquet":           root + "/col-1=a:b/part-1.parquet",
		"BH/part-00000-4d6e.c000.zstd.parquet": root + "/BH/part-00000-4d6e.c000.zstd.parquet",
	}
	for in, want := range cases {
		if got := l.FileLocation(in); got != want {
			t.Errorf("FileLocation(%q) = %q, want %q", in, got, want)
		}
	}
}

func versionName(v int64) string { return fmt.Sprintf("%020d", v) }

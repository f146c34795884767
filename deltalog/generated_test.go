package deltalog_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/deltalog"
)

// A generated 2,000-file table with a Parquet checkpoint written by Arrow:
// the checkpoint (maps, nested structs, null rows, tombstones) reads back
// to the same state as replaying every commit.
func TestGeneratedCheckpointMatchesReplay(t *testing.T) {
	g := genTable{commits: 40, addsPer: 50, checkpoint: 30}
	dir := filepath.Join(t.TempDir(), "gen")
	live := g.write(t, dir)
	st := newStore(t)
	rec := record(st)
	l := open(t, rec, nil, deltalog.Source{Location: fileURL(dir)})
	withCP := snapshot(t, l, 39)
	if got := rec.readNames(); got[versionName(30)+".checkpoint.parquet"] != 1 || got[versionName(29)+".json"] != 0 {
		t.Fatalf("reads %v", got)
	}
	checkLive(t, withCP, live)
	fromCP := map[int64]*deltalog.Snapshot{}
	for _, v := range []int64{30, 31, 39} {
		fromCP[v] = snapshot(t, open(t, st, nil, deltalog.Source{Location: fileURL(dir)}), v)
	}
	if err := os.Remove(filepath.Join(dir, "_delta_log", versionName(30)+".checkpoint.parquet")); err != nil {
		t.Fatal(err)
	}
	for v, want := range fromCP {
		replayed := snapshot(t, open(t, st, nil, deltalog.Source{Location: fileURL(dir)}), v)
		if !reflect.DeepEqual(replayed, want) {
			t.Fatalf("v%d: checkpoint state differs from replay", v)
		}
	}
	if withCP.Metadata.Configuration["delta.enableDeletionVectors"] != "true" || withCP.Metadata.PartitionColumns[0] != "part" {
		t.Errorf("metadata %+v", withCP.Metadata)
	}
}

func checkLive(t *testing.T, s *deltalog.Snapshot, live map[string]genFile) {
	t.Helper()
	if len(s.Files) != len(live) {
		t.Fatalf("%d files, want %d", len(s.Files), len(live))
	}
	for _, f := range s.Files {
		g, ok := live[f.Path]
		n, _ := f.NumRecords()
		if !ok || n != int64(g.rows) || *f.PartitionValues["part"] != g.part || (f.DeletionVector != nil) != g.dv {
			t.Fatalf("file %+v, generated %+v", f, g)
		}
		if g.dv && (f.DeletionVector.Cardinality != 1 || *f.DeletionVector.Offset != 1 || !strings.HasPrefix(f.DeletionVector.PathOrInlineDv, "ab")) {
			t.Fatalf("deletion vector %+v", f.DeletionVector)
		}
	}
}

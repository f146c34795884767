package deltalog_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/raftcat/raftcat/deltalog"
)

const (
	protocolLine = `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["catalogManaged"],"writerFeatures":["catalogManaged","inCommitTimestamp"]}}`
	metadataLine = `{"metaData":{"id":"cm","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{}}}`
)

func addLine(path string, rows int) string {
	return `{"add":{"path":"` + path + `","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":` + strconv.Itoa(rows) + `}"}}`
}

func removeLine(path string) string {
	return `{"remove":{"path":"` + path + `","deletionTimestamp":2,"dataChange":true}}`
}

// catalogTable writes a catalog-managed table: 0 and 1 published, 2 and 3
// only staged, and a stray published 4 the catalog never ratified.
func catalogTable(t *testing.T) (string, []deltalog.Ratified) {
	dir := t.TempDir()
	log := filepath.Join(dir, "_delta_log")
	writeFile(t, filepath.Join(log, versionName(0)+".json"), protocolLine+"\n"+metadataLine+"\n"+addLine("a.parquet", 1)+"\n")
	writeFile(t, filepath.Join(log, versionName(1)+".json"), addLine("b.parquet", 2)+"\n")
	staged2 := filepath.Join(log, "_staged_commits", versionName(2)+".0b6c1f0e-0000-4000-8000-000000000002.json")
	staged3 := filepath.Join(log, "_staged_commits", versionName(3)+".0b6c1f0e-0000-4000-8000-000000000003.json")
	writeFile(t, staged2, removeLine("a.parquet")+"\n"+addLine("c.parquet", 4)+"\n")
	writeFile(t, staged3, `{"commitInfo":{"operation":"WRITE"}}`+"\n"+addLine("d.parquet", 8)+"\n")
	writeFile(t, filepath.Join(log, versionName(4)+".json"), addLine("stray.parquet", 100)+"\n")
	return dir, []deltalog.Ratified{
		{Version: 2, Location: fileURL(staged2), Timestamp: 1_900_000_000_000},
		{Version: 3, Location: fileURL(staged3), Timestamp: 1_900_000_001_000},
	}
}

func TestCatalogManagedStagedCommits(t *testing.T) {
	dir, ratified := catalogTable(t)
	st := newStore(t)
	ctx := context.Background()
	l := open(t, st, nil, deltalog.Source{Location: fileURL(dir), Ratified: ratified})
	if l.Latest() != 3 || l.Earliest() != 0 {
		t.Fatalf("versions %d..%d, want 0..3", l.Earliest(), l.Latest())
	}
	s := snapshot(t, l, 3)
	if got := filePaths(s); !slices.Equal(got, []string{"b.parquet", "c.parquet", "d.parquet"}) {
		t.Fatalf("files at 3: %v", got)
	}
	if got := filePaths(snapshot(t, l, 2)); !slices.Equal(got, []string{"b.parquet", "c.parquet"}) {
		t.Fatalf("files at 2: %v", got)
	}
	if s.Timestamp != 1_900_000_001_000 {
		t.Errorf("timestamp of staged 3 = %d", s.Timestamp)
	}
	c, err := l.Commit(ctx, 3)
	if err != nil || len(c.Actions) != 2 || c.Actions[1].Add == nil || c.Actions[1].Add.Path != "d.parquet" {
		t.Fatalf("commit 3: %+v %v", c, err)
	}
	_, err = l.Snapshot(ctx, 4)
	wantErr(t, err, deltalog.ErrVersionUnavailable, "unratified published version")
	_, err = l.Commit(ctx, 4)
	wantErr(t, err, deltalog.ErrVersionUnavailable, "unratified published commit")
}

// Ratified versions that are published already are read from _delta_log.
func TestCatalogManagedPublishedRatified(t *testing.T) {
	dir, ratified := catalogTable(t)
	rec := record(newStore(t))
	all := append([]deltalog.Ratified{{Version: 1, Location: "file:///nonexistent/1.json", Timestamp: 1}}, ratified...)
	l := open(t, rec, nil, deltalog.Source{Location: fileURL(dir), Ratified: all})
	if got := filePaths(snapshot(t, l, 3)); !slices.Equal(got, []string{"b.parquet", "c.parquet", "d.parquet"}) {
		t.Fatalf("files at 3: %v", got)
	}
	if rec.readNames()["1.json"] != 0 {
		t.Error("read the staged location of a published commit")
	}
}

func TestSourceLatestCapsVersions(t *testing.T) {
	dir, ratified := catalogTable(t)
	st := newStore(t)
	l := open(t, st, nil, deltalog.Source{Location: fileURL(dir), Ratified: ratified, Latest: 2})
	if l.Latest() != 2 {
		t.Fatalf("latest %d, want 2", l.Latest())
	}
	// Without the catalog's view the stray commit is the latest, and it
	// cannot be read: commits 2 and 3 are missing from _delta_log.
	l = open(t, st, nil, deltalog.Source{Location: fileURL(dir), Latest: -1})
	if l.Latest() != 4 || l.Earliest() != 4 {
		t.Fatalf("published log: versions %d..%d, want 4..4", l.Earliest(), l.Latest())
	}
	_, err := l.Snapshot(context.Background(), 4)
	wantErr(t, err, deltalog.ErrCorrupt, "snapshot after a gap")
}

func filePaths(s *deltalog.Snapshot) []string {
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Path)
	}
	return out
}

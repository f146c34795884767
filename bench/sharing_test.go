package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/deltalog"
	"github.com/raftcat/raftcat/storage"
)

// The generated log reads back, through the reader the server uses, as
// the table it describes: every file once, its partition and its stats.
func TestSharingTableLog(t *testing.T) {
	g := sharingTable{commits: 3, filesPerCommit: 40, partitions: 7}
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	size, err := g.write(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	if size <= 0 {
		t.Fatalf("log size %d", size)
	}
	for _, d := range dirs {
		lg, err := deltalog.Open(context.Background(), storage.NewBlobs(storage.BlobOptions{}), nil, deltalog.Source{Location: "file://" + d})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := lg.Snapshot(context.Background(), lg.Latest())
		if err != nil {
			t.Fatal(err)
		}
		if lg.Latest() != 3 || len(snap.Files) != 120 || snap.Metadata.PartitionColumns[0] != "part" || snap.Protocol.MinReaderVersion != 1 {
			t.Fatalf("version %d, %d files, metadata %+v, protocol %+v", lg.Latest(), len(snap.Files), snap.Metadata, snap.Protocol)
		}
		perPart := map[string]int{}
		for _, f := range snap.Files {
			perPart[*f.PartitionValues["part"]]++
			if n, ok := f.NumRecords(); !ok || n != 1000 || f.Size <= 0 || !strings.HasPrefix(f.Path, "part=") {
				t.Fatalf("file %+v", f)
			}
		}
		total := 0
		for p := range 7 {
			if got := perPart[strconv.Itoa(p)]; got != g.filesOf(p) {
				t.Fatalf("part %d has %d files, want %d", p, got, g.filesOf(p))
			}
			total += g.filesOf(p)
		}
		if total != 120 {
			t.Fatalf("filesOf adds up to %d", total)
		}
		// A snapshot clears dataChange, as Delta's replay does; the commits
		// carry it.
		raw, err := os.ReadFile(filepath.Join(d, "_delta_log", "00000000000000000002.json"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(raw), `"dataChange":true`); n != 40 {
			t.Fatalf("commit 2 has %d adds with dataChange true, want 40", n)
		}
	}
}

// An answer is counted and checked line by line.
func TestSharingScanAnswer(t *testing.T) {
	head := `{"protocol":{"minReaderVersion":1}}` + "\n" + `{"metaData":{"id":"x"}}` + "\n"
	file := func(p string) string { return `{"file":{"url":"u","partitionValues":{"part":"` + p + `"}}}` + "\n" }
	a, err := scanAnswer([]byte(head+file("1")+file("1")+`{"endStreamAction":{"nextPageToken":"t"}}`+"\n"), 1)
	if err != nil || a.files != 2 || a.next != "t" {
		t.Fatalf("%+v %v", a, err)
	}
	for name, bad := range map[string]string{
		"other partition": head + file("1") + file("2"),
		"no protocol":     file("1"),
		"error at end":    head + file("1") + `{"endStreamAction":{"errorMessage":"boom"}}` + "\n",
		"junk line":       head + "nonsense\n",
	} {
		if _, err := scanAnswer([]byte(bad), 1); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// RunSharing end to end at a tiny size against three real node
// processes with authentication on: the provider's requests carry the
// admin token, the recipient's queries its own; every kind is measured,
// and every answer held the files the table has.
func TestRunSharingSmall(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "raftcat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/raftcat/raftcat/cmd/raftcat").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log strings.Builder
	cfg := SharingConfig{Bin: bin, Dir: filepath.Join(dir, "run"), Commits: 2, FilesPerCommit: 50, Partitions: 7,
		Tables: 2, Clients: 3, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, MaxFiles: 30, Auth: AuthToken}
	rep, err := RunSharing(ctx, cfg, &log)
	if err != nil {
		t.Fatalf("RunSharing: %v\n%s", err, log.String())
	}
	if !rep.Verified || rep.Auth != AuthToken || rep.Table.Files != 100 || rep.Nodes != 3 || rep.LeaderURL == "" || rep.Table.LogBytes <= 0 {
		t.Fatalf("report %+v\n%s", rep, log.String())
	}
	want := map[string][2]int{"cold": {100, 100}, "cached": {100, 100}, "cached_concurrent": {100, 100},
		"predicate": {14, 15}, "paged": {100, 100}}
	for _, k := range rep.Kinds {
		w, ok := want[k.Kind]
		if !ok {
			t.Fatalf("unexpected kind %q", k.Kind)
		}
		delete(want, k.Kind)
		if k.Queries == 0 || k.Errors != 0 || k.FilesMin != w[0] || k.FilesMax != w[1] || k.BytesPerAnswer <= 0 ||
			k.Latency.P50 <= 0 || k.Latency.P99 < k.Latency.P50 || k.QueriesPerSec <= 0 {
			t.Fatalf("%s: %+v\n%s", k.Kind, k, log.String())
		}
		switch k.Kind {
		case "cold":
			if k.Queries != 2 {
				t.Fatalf("cold: %d queries, want one per copy", k.Queries)
			}
		case "cached_concurrent":
			if k.Clients != 3 {
				t.Fatalf("concurrent with %d clients", k.Clients)
			}
		case "paged":
			if k.Pages != 4 || k.PageLatency == nil {
				t.Fatalf("paged: %d pages a read, want 4", k.Pages)
			}
		}
	}
	if len(want) > 0 {
		t.Fatalf("kinds not measured: %v", want)
	}
	raw, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(raw), `"kind":"predicate"`) {
		t.Fatalf("JSON %s: %v", raw, err)
	}
	if text := rep.Text(); !strings.Contains(text, "cached_concurrent") || !strings.Contains(text, "every answer held the expected files") {
		t.Fatalf("text:\n%s", text)
	}
}

// A predicate that matched every file would not pass: the bench checks
// the count it expects of each partition.
func TestSharingFilesOf(t *testing.T) {
	g := sharingTable{commits: 100, filesPerCommit: 100, partitions: 100}
	if g.files() != 10000 || g.filesOf(0) != 100 || g.filesOf(99) != 100 {
		t.Fatalf("%d files, part 0 %d, part 99 %d", g.files(), g.filesOf(0), g.filesOf(99))
	}
	g = sharingTable{commits: 2, filesPerCommit: 50, partitions: 7}
	if g.filesOf(0) != 15 || g.filesOf(1) != 15 || g.filesOf(2) != 14 {
		t.Fatalf("part 0 %d, part 1 %d, part 2 %d", g.filesOf(0), g.filesOf(1), g.filesOf(2))
	}
}

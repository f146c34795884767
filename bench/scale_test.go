package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/fsm"
)

// The builder's state is what the commands say: every table at the last
// version with one tracked commit, and equal sizes give equal states.
func TestBuildScaleState(t *testing.T) {
	a, err := buildScaleState("file:///warehouse", 30, 4, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(1 + 4 + 30*(2+3)); a.commands != want || a.index != want {
		t.Fatalf("applied %d commands up to index %d, want %d", a.commands, a.index, want)
	}
	catalogs, schemas, tables, commits := a.state.Counts()
	if catalogs != 1 || schemas != 5 || tables != 30 || commits != 30 {
		t.Fatalf("counts %d %d %d %d", catalogs, schemas, tables, commits)
	}
	tb, ok := a.state.Table(scaleCatalog, scaleSchemaName(7%4), scaleTableName(7))
	if !ok || tb.ID != scaleTableID(7) || tb.Type != fsm.TableManaged || tb.LatestVersion() != 3 ||
		len(tb.UnbackfilledCommits()) != 1 || tb.Properties[fsm.PropTableID] != tb.ID || len(tb.ColumnNames) != 6 {
		t.Fatalf("table 7 = %+v", tb)
	}
	b, err := buildScaleState("file:///warehouse", 30, 4, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.state.Digest() != b.state.Digest() {
		t.Fatal("two builds of the same size differ")
	}
}

// RunScale end to end at a tiny size, with real node processes.
func TestRunScaleSmall(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "raftcat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/raftcat/raftcat/cmd/raftcat").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var log strings.Builder
	cfg := ScaleConfig{Bin: bin, Dir: filepath.Join(dir, "run"), Tables: 200, Schemas: 4, CommitsPerTable: 3,
		BaselineTables: 50, Loads: 100, HTTPCommits: 20, Seed: 7, Timeout: 2 * time.Minute}
	res, err := RunScale(ctx, cfg, &log)
	if err != nil {
		t.Fatalf("RunScale: %v\n%s", err, log.String())
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bench-scale.json")
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var got ScaleResult
	raw, _ = os.ReadFile(out)
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	fail := func(what string) { t.Helper(); t.Fatalf("%s\nresult: %s\nlog:\n%s", what, raw, log.String()) }
	switch {
	case got.Tables != 200 || got.Schemas != 4 || got.CommitsPerTable != 3 || got.CommandsApplied != 1+4+200*5:
		fail("sizes")
	case got.BytesPerTable <= 0 || got.RestoredBytesPerTable <= 0 || got.HeapBytes == 0:
		fail("memory not measured")
	case got.SnapshotBytes <= 0 || got.SnapshotWriteMs <= 0 || got.SnapshotReadMs <= 0:
		fail("snapshot not measured")
	case got.RestoreMs <= 0 || got.RestoreConvergedMs < got.RestoreMs || len(got.NodeRSSBytes) != 3:
		fail("restore")
	case got.Baseline.Tables != 50 || got.Full.Tables != 200 || got.Baseline.Loads != 100 || got.Full.Loads != 100 ||
		got.FullSettled.Tables != 200 || got.FullSettled.P50Ms <= 0:
		fail("loads")
	case got.Baseline.P50Ms <= 0 || got.Full.P50Ms <= 0 || got.Full.P99Ms < got.Full.P50Ms:
		fail("load latencies")
	case got.HTTPCommits != 20:
		fail("HTTP commits")
	case got.Restart.Node == "" || got.Restart.ReadyMs <= 0 || got.Restart.CaughtUpMs < got.Restart.ReadyMs ||
		got.Restart.ConvergedMs < got.Restart.CaughtUpMs || got.Restart.SnapshotRestores == 0 || got.Restart.LogEntries < 20:
		fail("restart: snapshot plus replayed log")
	case got.Install.Node != "node4" || got.Install.SnapshotRestores == 0 || got.Install.ConvergedMs < got.Install.ReadyMs:
		fail("new node")
	case len(got.Digest) != 64:
		fail("digest")
	}
	for _, n := range got.NodeRSSBytes {
		if n <= 0 {
			fail("node RSS")
		}
	}
	if _, err := os.Stat(got.SnapshotFile); err != nil {
		fail("snapshot file: " + err.Error())
	}
	if txt := got.Text(); !strings.Contains(txt, "200 tables") || !strings.Contains(txt, got.Digest) {
		t.Fatalf("summary:\n%s", txt)
	}
}

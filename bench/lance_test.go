package bench

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/internal/localcluster"
)

// A staging manifest is named as a Lance client names it with the V2
// scheme, and is the same size whatever it describes.
func TestLanceStagingManifest(t *testing.T) {
	name := lanceStagingName(1)
	if !strings.HasPrefix(name, "18446744073709551614.manifest-") || len(name) != len("18446744073709551614.manifest-")+36 {
		t.Fatalf("staging name of version 1: %s", name)
	}
	if a, b := lanceManifest("t1", 7, 3, 12), lanceManifest("t12", 123456, 31, 99999); len(a) != lanceManifestBytes ||
		len(b) != lanceManifestBytes || string(a) == string(b) {
		t.Fatalf("manifests of %d and %d bytes", len(a), len(b))
	}
	if got := lancePath("bench", "lance", "t 1"); got != "bench%24lance%24t%201" {
		t.Fatalf("path id %s", got)
	}
}

// lanceBinary builds raftcat into dir.
func lanceBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "raftcat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/raftcat/raftcat/cmd/raftcat").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// checkLanceReport checks what every run must show, not how fast it was.
func checkLanceReport(t *testing.T, rep LanceReport, log string) {
	t.Helper()
	for _, r := range []*Result{rep.Commits, rep.Batches} {
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 {
			t.Fatalf("result %+v\n%s", r, log)
		}
	}
	if rep.Commits.System != "lance" || rep.Batches.System != "batch" || rep.TableVersionsPerSec != rep.Batches.CommitsPerSec*float64(rep.Batch) {
		t.Fatalf("report %+v", rep)
	}
	raw, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(raw), `"version_create":{"system":"lance"`) || !strings.Contains(string(raw), `"batch_commit":{"system":"batch"`) {
		t.Fatalf("JSON %s: %v", raw, err)
	}
	if text := rep.Text(); !strings.Contains(text, "commits/s") || !strings.Contains(text, "batches/s") ||
		!strings.Contains(text, "every table's latest version counts the versions acknowledged") {
		t.Fatalf("text:\n%s", text)
	}
}

// RunLance end to end at a tiny size against three real node processes
// (one build of raftcat for both runs):
//
//   - started: the cluster RunLance starts, with authentication on (every
//     request carrying its admin token) and more clients than tables, so
//     that writers conflict and retry;
//   - urls: a cluster given by URL, twice in the same directory, the
//     second time to the leader: the second run replaces the tables the
//     first declared and starts them afresh.
//
// Every table's versions are verified after each run; no timing is
// judged.
func TestRunLance(t *testing.T) {
	dir := t.TempDir()
	bin := lanceBinary(t, dir)
	t.Run("started", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		var log strings.Builder
		cfg := LanceConfig{Bin: bin, Dir: filepath.Join(dir, "started"), Tables: 2, Batch: 3, Clients: 4,
			Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, Auth: AuthToken}
		rep, err := RunLance(ctx, cfg, &log)
		if err != nil {
			t.Fatalf("RunLance: %v\n%s", err, log.String())
		}
		checkLanceReport(t, rep, log.String())
		if rep.Nodes != 3 || rep.Auth != AuthToken || rep.LeaderURL == "" || rep.BatchGroups != 2 || rep.Rounds != 1 || rep.Clients != 4 ||
			!strings.HasPrefix(rep.Warehouse, "file:///") {
			t.Fatalf("report %+v\n%s", rep, log.String())
		}
	})
	t.Run("urls", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cl, err := localcluster.Start(ctx, localcluster.Options{Bin: bin, Dir: filepath.Join(dir, "cluster"), Nodes: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Stop()
		for run := range 2 {
			var log strings.Builder
			cfg := LanceConfig{URLs: cl.URLs(), Dir: filepath.Join(dir, "urls"), Tables: 1, Batch: 2, Clients: 2,
				Duration: 200 * time.Millisecond, Rounds: 2, Leader: run == 1}
			rep, err := RunLance(ctx, cfg, &log)
			if err != nil {
				t.Fatalf("run %d: %v\n%s", run, err, log.String())
			}
			checkLanceReport(t, rep, log.String())
			if replaced := strings.Contains(log.String(), "replaced 3 tables an earlier run had declared"); replaced != (run == 1) {
				t.Fatalf("run %d: replaced %v\n%s", run, replaced, log.String())
			}
			if rep.Rounds != 2 || (run == 1 && rep.Target != "leader") {
				t.Fatalf("run %d: report %+v", run, rep)
			}
		}
	})
}

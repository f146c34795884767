package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/bench"
	"github.com/raftcat/raftcat/internal/testcluster"
)

// TestBenchSmoke runs `raftcat bench` for a few seconds against the
// three-node cluster it starts (and against etcd when etcd is installed,
// as CI does): it must commit, verify every table afterwards, and write
// the JSON result. The numbers themselves are not judged here.
func TestBenchSmoke(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	args := []string{"bench", "--duration", "2s", "--warmup", "1s", "--rounds", "2", "--clients", "4", "--tables", "2", "--out", out}
	_, etcdErr := exec.LookPath("etcd")
	if etcdErr == nil {
		args = append(args, "--against-etcd")
	}
	output, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench: %v\n%s", err, output)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, raw)
	}
	results := []*bench.Result{rep.Raftcat}
	if rep.Rounds != 2 || rep.DurationS != 2 {
		t.Errorf("report says %d rounds of %v s, want 2 of 2 s", rep.Rounds, rep.DurationS)
	}
	if etcdErr == nil {
		results = append(results, rep.Etcd)
		if rep.ThroughputRatio <= 0 {
			t.Errorf("no throughput ratio in %s", raw)
		}
		if len(rep.RoundRatios) != 2 || rep.RoundRatios[0] <= 0 || rep.RoundRatios[1] <= 0 {
			t.Errorf("want a throughput ratio for each of 2 rounds, got %v", rep.RoundRatios)
		}
	}
	for _, r := range results {
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
		// Every client commits: a starved one (a request stuck on its way
		// to the leader, say) shows as a client with none.
		if r.ClientCommitsMin <= 0 || r.ClientCommitsMax < r.ClientCommitsMin || r.ClientCommitsMax > r.Commits {
			t.Errorf("%s: commits per client %d-%d of %d in all", r.System, r.ClientCommitsMin, r.ClientCommitsMax, r.Commits)
		}
	}
	if !strings.Contains(string(output), "commits/s") {
		t.Errorf("no human summary printed:\n%s", output)
	}
}

// TestBenchIcebergSmoke runs `raftcat bench --protocol iceberg` for a few
// seconds: the Iceberg REST and the Delta commit paths of one started
// cluster, in alternating rounds, must both commit, verify every table
// afterwards and be compared.
func TestBenchIcebergSmoke(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	output, err := exec.Command(bin, "bench", "--protocol", "iceberg", "--duration", "2s", "--warmup", "1s", "--rounds", "2",
		"--clients", "4", "--tables", "2", "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench --protocol iceberg: %v\n%s", err, output)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, raw)
	}
	if rep.Protocol != "iceberg" || rep.Iceberg == nil || rep.Iceberg.System != "iceberg" || rep.Etcd != nil {
		t.Fatalf("report %s", raw)
	}
	for _, r := range []*bench.Result{rep.Raftcat, rep.Iceberg} {
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 ||
			r.ClientCommitsMin <= 0 {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
	}
	if rep.IcebergThroughputRatio <= 0 || rep.IcebergP99Ratio <= 0 || len(rep.IcebergRoundRatios) != 2 {
		t.Fatalf("ratios %v, %v by round %v", rep.IcebergThroughputRatio, rep.IcebergP99Ratio, rep.IcebergRoundRatios)
	}
	if !strings.Contains(string(output), "iceberg/delta: throughput x") {
		t.Errorf("no comparison printed:\n%s", output)
	}
}

// TestBenchLanceSmoke runs `raftcat bench --protocol lance` for a few
// seconds: version/create and batch-commit commits on the Lance Namespace
// API of the cluster it starts must both be acknowledged, verify every
// table afterwards and be written as JSON.
func TestBenchLanceSmoke(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	output, err := exec.Command(bin, "bench", "--protocol", "lance", "--duration", "1s", "--warmup", "0s", "--rounds", "2",
		"--clients", "4", "--lance-tables", "2", "--lance-batch", "3", "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("raftcat bench --protocol lance: %v\n%s", err, output)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.LanceReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, raw)
	}
	if rep.Protocol != "lance" || rep.Tables != 2 || rep.Batch != 3 || rep.Clients != 4 || rep.Rounds != 2 || rep.DurationS != 1 {
		t.Fatalf("report %s", raw)
	}
	for _, r := range []*bench.Result{rep.Commits, rep.Batches} {
		if r == nil || r.Commits == 0 || r.Errors != 0 || !r.Verified {
			t.Fatalf("implausible result %+v\n%s", r, output)
		}
	}
	if !strings.Contains(string(output), "commits/s") || !strings.Contains(string(output), "batches/s") {
		t.Errorf("no human summary printed:\n%s", output)
	}
}

// TestBenchToTheLeader runs `raftcat bench --target leader` against three
// real processes: every request must go to the node that leads, found as a
// load balancer checking GET /readyz?leader finds it. The URLs list the
// followers first, and then leave the leader out: its address then comes
// from the followers' answers.
func TestBenchToTheLeader(t *testing.T) {
	procs := startProcesses(t, 3)
	leader := func() string {
		for _, p := range procs {
			if testcluster.Do(t, http.MethodGet, p.url+"/v1/cluster", nil).Body["state"] == "Leader" {
				return p.url
			}
		}
		return ""
	}
	before := leader()
	var followers []string
	for _, p := range procs {
		if p.url != before {
			followers = append(followers, p.url)
		}
	}
	bin := raftcatBinary(t)
	for _, urls := range [][]string{append(slices.Clone(followers), before), followers} {
		out := filepath.Join(t.TempDir(), "bench.json")
		output, err := exec.Command(bin, "bench", "--target", "leader", "--urls", strings.Join(urls, ","),
			"--duration", "1s", "--warmup", "0s", "--clients", "2", "--tables", "1", "--out", out).CombinedOutput()
		if err != nil {
			t.Fatalf("raftcat bench --target leader --urls %v: %v\n%s", urls, err, output)
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var rep bench.Report
		if err := json.Unmarshal(raw, &rep); err != nil || rep.Target != "leader" || rep.Raftcat == nil ||
			rep.Raftcat.Commits == 0 || rep.Raftcat.Errors != 0 {
			t.Fatalf("result %s (%v)\n%s", raw, err, output)
		}
		if after := leader(); rep.LeaderURL != before && rep.LeaderURL != after {
			t.Fatalf("--urls %v: requests went to %q, but %s led before and %s after", urls, rep.LeaderURL, before, after)
		}
	}
}

// TestBenchAgainstMissingEtcdSaysWhatToInstall asks for the etcd
// comparison with a binary that does not exist.
func TestBenchAgainstMissingEtcdSaysWhatToInstall(t *testing.T) {
	bin := raftcatBinary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	output, err := exec.Command(bin, "bench", "--duration", "1s", "--warmup", "0s", "--clients", "1", "--tables", "1",
		"--against-etcd", "--etcd-bin", "/nonexistent/etcd", "--out", out).CombinedOutput()
	if err == nil {
		t.Fatalf("bench succeeded without etcd:\n%s", output)
	}
	if !strings.Contains(string(output), "etcd-server") {
		t.Fatalf("error does not say what to install:\n%s", output)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/chaos"
)

func writeHistory(t *testing.T, ops []chaos.Op) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := chaos.WriteHistory(f, ops); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestChaosCheckCommand(t *testing.T) {
	good := []chaos.Op{
		{Client: 0, Table: "t", Op: chaos.OpCommit, Version: 1, FileName: "a", InvokeNs: 0, CompleteNs: 1, Outcome: chaos.OutcomeOK},
		{Client: 1, Table: "t", Op: chaos.OpLoad, LatestVersion: 1, Final: true, Commits: map[int64]string{1: "a"}, InvokeNs: 2, CompleteNs: 3, Outcome: chaos.OutcomeOK},
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"chaos", "check", writeHistory(t, good)}, &out, &errOut); code != 0 {
		t.Fatalf("good history: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	lost := append([]chaos.Op{}, good...)
	lost[1].LatestVersion, lost[1].Commits = 0, nil
	out.Reset()
	if code := run([]string{"chaos", "check", writeHistory(t, lost)}, &out, &errOut); code != 1 || !strings.Contains(out.String(), "lost") {
		t.Fatalf("history with a lost commit: exit %d\n%s", code, out.String())
	}
	if code := run([]string{"chaos", "check"}, &out, &errOut); code != 2 {
		t.Fatalf("usage error exit %d", code)
	}
}

// TestChaosDrillFindsNoViolation runs a short drill with real processes:
// kills and pauses of the leader and followers under a commit load. The
// recorded history must check clean, also when re-checked from its file.
func TestChaosDrillFindsNoViolation(t *testing.T) {
	bin := raftcatBinary(t)
	out := t.TempDir()
	cmd := exec.Command(bin, "chaos", "--duration", "90s", "--fault-every", "3s", "--fault-for", "1500ms",
		"--seed", "42", "--tables", "2", "--clients", "2", "--out", out)
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chaos drill: %v\n%s", err, output)
	}
	var sum chaos.Summary
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if !sum.Linearizable || !sum.Converged || sum.LostCommits != 0 || len(sum.Violations) != 0 ||
		sum.AcknowledgedCommits == 0 || len(sum.Faults) < 15 {
		t.Fatalf("drill summary: %s\n%s", raw, output)
	}
	if fi, err := os.Stat(filepath.Join(out, "report.html")); err != nil || fi.Size() == 0 {
		t.Fatalf("no HTML report: %v", err)
	}
	var check bytes.Buffer
	if code := run([]string{"chaos", "check", filepath.Join(out, "history.jsonl")}, &check, &check); code != 0 {
		t.Fatalf("re-check of the recorded history: exit %d\n%s", code, check.String())
	}
}

// TestChaosSecureDrillFindsNoViolation runs a short drill against a
// cluster with everything on (--secure): authentication, TLS on every
// node's HTTP port, mutual TLS between nodes (raft, relayed requests,
// snapshots) and encrypted gossip. Every request of the workload and of
// the checks goes over HTTPS with the admin token the drill made, the
// leader is killed and paused under the commit load (seed 19 aims every
// fault at it), and the history must check clean as without security.
func TestChaosSecureDrillFindsNoViolation(t *testing.T) {
	bin := raftcatBinary(t)
	out := t.TempDir()
	cmd := exec.Command(bin, "chaos", "--secure", "--duration", "18s", "--fault-every", "3s", "--fault-for", "1s",
		"--faults", "kill,pause", "--netns=false", "--seed", "19", "--tables", "2", "--clients", "2", "--out", out)
	cmd.Env = append(os.Environ(), "RAFTCAT_TOKEN=") // the drill makes its own token
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chaos drill: %v\n%s", err, output)
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum chaos.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	// A restarted node that has not caught up yet still takes the valid
	// token: no answer may be a 401.
	if sum.Auth != "token" || !sum.Secure || !sum.Linearizable || !sum.Converged || sum.LostCommits != 0 || len(sum.Violations) != 0 ||
		sum.AcknowledgedCommits == 0 || len(sum.Faults) == 0 || sum.Unauthenticated != 0 {
		t.Fatalf("drill summary: %s\n%s", raw, output)
	}
	fi, err := os.Stat(filepath.Join(out, "admin.token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v (mode %v)", err, fi.Mode())
	}
	t.Logf("%d operations, %d faults, %d answers 401 to the valid token", sum.Operations, len(sum.Faults), sum.Unauthenticated)
	for _, node := range []string{"node1", "node2", "node3"} {
		log, err := os.ReadFile(filepath.Join(out, node+".log"))
		for _, want := range []string{"authentication on", "tls=true", "mutual_tls=true", "gossip is encrypted"} {
			if err != nil || !strings.Contains(string(log), want) {
				t.Fatalf("%s: no %q in its log (%v)", node, want, err)
			}
		}
	}
	var check bytes.Buffer
	if code := run([]string{"chaos", "check", filepath.Join(out, "history.jsonl")}, &check, &check); code != 0 {
		t.Fatalf("re-check of the recorded history: exit %d\n%s", code, check.String())
	}
}

// TestChaosIcebergDrillFindsNoViolation runs a short drill of Iceberg REST
// commit clients against real processes while the leader is killed (seed
// 19 aims every fault at the leader) in the middle of the commit load: no
// acknowledged commit may be lost, and the history must check clean.
func TestChaosIcebergDrillFindsNoViolation(t *testing.T) {
	bin := raftcatBinary(t)
	out := t.TempDir()
	cmd := exec.Command(bin, "chaos", "--protocol", "iceberg", "--duration", "18s", "--fault-every", "3s", "--fault-for", "1s",
		"--faults", "kill", "--netns=false", "--seed", "19", "--tables", "2", "--clients", "2", "--out", out)
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chaos drill: %v\n%s", err, output)
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum chaos.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	leaderKills := 0
	for _, f := range sum.Faults {
		if f.Kind == "kill" && f.Leader {
			leaderKills++
		}
	}
	if sum.Protocol != "iceberg" || !sum.Linearizable || !sum.Converged || sum.LostCommits != 0 || len(sum.Violations) != 0 ||
		sum.AcknowledgedCommits == 0 || leaderKills == 0 {
		t.Fatalf("drill summary (%d leader kills): %s\n%s", leaderKills, raw, output)
	}
	f, err := os.Open(filepath.Join(out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops, err := chaos.ReadHistory(f)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	for _, op := range ops {
		if op.Protocol != chaos.ProtocolIceberg {
			t.Fatalf("a %s operation on a non-Iceberg path: %+v", op.Op, op)
		}
		if op.Op == chaos.OpCommit {
			outcomes[op.Outcome]++
		}
	}
	t.Logf("%d leader kills; commit outcomes %v", leaderKills, outcomes)
	var check bytes.Buffer
	if code := run([]string{"chaos", "check", filepath.Join(out, "history.jsonl")}, &check, &check); code != 0 {
		t.Fatalf("re-check of the recorded history: exit %d\n%s", code, check.String())
	}
}

// TestChaosTransactionsDrillFindsNoViolation runs a short drill of
// transactions across formats (each advancing a group's Delta, Iceberg
// and Lance tables together) while the leader is killed (seed 19 aims
// every fault at the leader) in the middle of them: every transaction,
// whatever its answer, must be in all three tables of its group or in
// none, and the history must check clean.
//
// Two clients per group race for the same versions, so transactions also
// lose to each other; two groups make as many clients as the other drills
// have, and so, with seed 19, the same fault schedule as the Iceberg
// drill's.
func TestChaosTransactionsDrillFindsNoViolation(t *testing.T) {
	bin := raftcatBinary(t)
	out := t.TempDir()
	cmd := exec.Command(bin, "chaos", "--protocol", "transactions", "--duration", "18s", "--fault-every", "3s", "--fault-for", "1s",
		"--faults", "kill", "--netns=false", "--seed", "19", "--tables", "2", "--clients", "2", "--out", out)
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chaos drill: %v\n%s", err, output)
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum chaos.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	leaderKills := 0
	for _, f := range sum.Faults {
		if f.Kind == "kill" && f.Leader {
			leaderKills++
		}
	}
	tx := sum.Transactions
	if sum.Protocol != "transactions" || !sum.Linearizable || !sum.Converged || sum.LostCommits != 0 || len(sum.Violations) != 0 ||
		sum.AcknowledgedCommits == 0 || leaderKills == 0 || tx == nil || tx.Partial != 0 || tx.Acknowledged != sum.AcknowledgedCommits ||
		tx.UnknownApplied+tx.UnknownAbsent != tx.Unknown {
		t.Fatalf("drill summary (%d leader kills): %s\n%s", leaderKills, raw, output)
	}
	f, err := os.Open(filepath.Join(out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops, err := chaos.ReadHistory(f)
	if err != nil {
		t.Fatal(err)
	}
	finals := map[string]int{}
	for _, op := range ops {
		if op.Protocol != chaos.ProtocolTransactions {
			t.Fatalf("a %s operation outside a transactions group: %+v", op.Op, op)
		}
		if op.Final {
			finals[op.Part]++
		}
	}
	if finals[chaos.PartDelta] != 2 || finals[chaos.PartIceberg] != 2 || finals[chaos.PartLance] != 2 {
		t.Fatalf("final loads per table of the groups: %v", finals)
	}
	t.Logf("%d leader kills; transactions %+v", leaderKills, *tx)
	var check bytes.Buffer
	if code := run([]string{"chaos", "check", filepath.Join(out, "history.jsonl")}, &check, &check); code != 0 {
		t.Fatalf("re-check of the recorded history: exit %d\n%s", code, check.String())
	}
}

// TestChaosDrillTakesARelativeOutDir runs a drill, as its default
// --out chaos-out does, with an output directory relative to the working
// directory: the nodes' file:// warehouse inside it must still be an
// absolute location, or no node starts.
func TestChaosDrillTakesARelativeOutDir(t *testing.T) {
	bin := raftcatBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "chaos", "--nodes", "1", "--duration", "2s", "--fault-every", "3s", "--fault-for", "1s",
		"--faults", "pause", "--netns=false", "--tables", "1", "--clients", "1", "--out", "drill")
	cmd.Dir = dir
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chaos drill with --out drill: %v\n%s", err, output)
	}
	if _, err := os.Stat(filepath.Join(dir, "drill", "summary.json")); err != nil {
		t.Fatal(err)
	}
}

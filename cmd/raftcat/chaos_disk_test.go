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

// Drills on fault filesystems: every node's data directory is a FUSE
// mount (internal/faultfs) whose power the drill cuts and whose disk it
// fails, fills, slows and rots. Every drill runs with authentication,
// TLS and mutual TLS on.

// diskDrill is one such drill's result: its summary, history and output.
type diskDrill struct {
	sum    chaos.Summary
	ops    []chaos.Op
	output string
	err    error // the drill's exit: nil, or exit status 1 on a violation
	out    string
}

// runDiskDrill runs `raftcat chaos --secure --disk-faults` with args on
// three nodes (two tables or groups, two clients each).
func runDiskDrill(t *testing.T, args ...string) diskDrill {
	t.Helper()
	d := diskDrill{out: t.TempDir()}
	cmd := exec.Command(raftcatBinary(t), append([]string{"chaos", "--secure", "--disk-faults", "--netns=false",
		"--tables", "2", "--clients", "2", "--out", d.out}, args...)...)
	cmd.Env = append(os.Environ(), "RAFTCAT_TOKEN=") // the drill makes its own token
	output, err := cmd.CombinedOutput()
	d.output, d.err = string(output), err
	raw, rerr := os.ReadFile(filepath.Join(d.out, "summary.json"))
	if rerr != nil {
		t.Fatalf("chaos drill: %v (no summary: %v)\n%s", err, rerr, output)
	}
	if err := json.Unmarshal(raw, &d.sum); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(d.out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if d.ops, err = chaos.ReadHistory(f); err != nil {
		t.Fatal(err)
	}
	return d
}

// lostNothing fails the test unless the drill found nothing wrong: no
// acknowledged commit lost, a linearizable history, every node up and
// converged, on fault filesystems with security on.
func (d diskDrill) lostNothing(t *testing.T) {
	t.Helper()
	s := d.sum
	if d.err != nil || !s.DiskFaults || !s.Secure || s.Auth != "token" || s.LostCommits != 0 || !s.Linearizable ||
		!s.Converged || len(s.Violations) != 0 || s.AcknowledgedCommits == 0 {
		t.Fatalf("drill (seed %d, output in %s): %v\n%s", s.Seed, d.out, d.err, d.output)
	}
	var check bytes.Buffer
	if code := run([]string{"chaos", "check", filepath.Join(d.out, "history.jsonl")}, &check, &check); code != 0 {
		t.Fatalf("re-check of the recorded history: exit %d\n%s", code, check.String())
	}
}

// faults are the drill's faults of the given kinds.
func (d diskDrill) faults(kinds ...string) []chaos.Fault {
	var out []chaos.Fault
	for _, f := range d.sum.Faults {
		for _, k := range kinds {
			if f.Kind == k {
				out = append(out, f)
			}
		}
	}
	return out
}

// cuts checks that the drill cut the power at least n times, each cut
// reported and followed by a restart, and returns the cuts.
// only is the drill's one fault of kind.
func (d diskDrill) only(t *testing.T, kind string) chaos.Fault {
	t.Helper()
	fs := d.faults(kind)
	if len(fs) != 1 {
		t.Fatalf("faults %+v", d.sum.Faults)
	}
	return fs[0]
}

func (d diskDrill) cuts(t *testing.T, n int, kinds ...string) []chaos.Fault {
	t.Helper()
	cuts := d.faults(kinds...)
	for _, f := range cuts {
		if f.Cut == nil || !strings.HasSuffix(f.Outcome, "restarted") {
			t.Errorf("%s %s: cut %+v, outcome %q", f.Kind, f.Target, f.Cut, f.Outcome)
		}
	}
	if len(cuts) < n {
		t.Fatalf("%d power cuts (%v), want at least %d\n%s", len(cuts), kinds, n, d.output)
	}
	return cuts
}

// TestChaosPowerCutAllLosesNothing cuts the power of every node at once,
// three times, under Delta commits: whatever the nodes had not synced is
// gone, and every acknowledged commit must still be there.
func TestChaosPowerCutAllLosesNothing(t *testing.T) {
	d := runDiskDrill(t, "--faults", "power-cut-all", "--duration", "16s", "--fault-every", "4s", "--fault-for", "1s", "--seed", "7")
	cuts := d.cuts(t, 2, "power-cut-all")
	d.lostNothing(t)
	for _, f := range cuts {
		if f.Target != "all" {
			t.Errorf("a power cut of all aimed at %q", f.Target)
		}
	}
	if !strings.Contains(d.output, "power-cut-all all") || !strings.Contains(d.output, " reverted; restarted") {
		t.Errorf("the drill's lines do not tell the cuts' outcomes:\n%s", d.output)
	}
	t.Logf("%d cuts, %d acknowledged commits, longest unavailable %d ms; %s", len(cuts), d.sum.AcknowledgedCommits,
		d.sum.LongestUnavailableMs, cuts[0].Outcome)
}

// TestChaosPowerCutIcebergLosesNothing cuts the power of every node, and
// tears one node's unsynced writes, under Iceberg REST commits (seed 3:
// a cut of all, then a torn cut of the leader and of another node).
func TestChaosPowerCutIcebergLosesNothing(t *testing.T) {
	d := runDiskDrill(t, "--protocol", "iceberg", "--faults", "power-cut-all,torn", "--duration", "16s",
		"--fault-every", "4s", "--fault-for", "1s", "--seed", "3")
	cuts := d.cuts(t, 2, "power-cut-all", "torn")
	d.lostNothing(t)
	if d.sum.Protocol != "iceberg" || len(d.faults("power-cut-all")) == 0 || len(d.faults("torn")) == 0 {
		t.Fatalf("drill: %s, faults %+v", d.sum.Protocol, d.sum.Faults)
	}
	t.Logf("%d cuts, %d acknowledged commits", len(cuts), d.sum.AcknowledgedCommits)
}

// TestChaosPowerCutTransactionsLosesNothing does the same under
// transactions across formats (seed 7: a cut of all, a torn cut, a cut
// of all): every transaction must be in all three tables of its group or
// in none.
func TestChaosPowerCutTransactionsLosesNothing(t *testing.T) {
	d := runDiskDrill(t, "--protocol", "transactions", "--faults", "power-cut-all,torn", "--duration", "16s",
		"--fault-every", "4s", "--fault-for", "1s", "--seed", "7")
	cuts := d.cuts(t, 2, "power-cut-all", "torn")
	d.lostNothing(t)
	tx := d.sum.Transactions
	if d.sum.Protocol != "transactions" || tx == nil || tx.Partial != 0 || tx.UnknownApplied+tx.UnknownAbsent != tx.Unknown ||
		len(d.faults("power-cut-all")) == 0 || len(d.faults("torn")) == 0 {
		t.Fatalf("drill: %+v, faults %+v", tx, d.sum.Faults)
	}
	t.Logf("%d cuts; transactions %+v", len(cuts), *tx)
}

// TestChaosFsyncEIOHaltsTheNode fails every sync of a follower's disk:
// it must halt with exit status 4 while the others keep committing, and
// after a reboot (a power cut, the disk mended, a restart) nothing
// acknowledged is lost.
func TestChaosFsyncEIOHaltsTheNode(t *testing.T) {
	d := runDiskDrill(t, "--faults", "fsync-eio", "--aim", "follower", "--duration", "10s",
		"--fault-every", "5s", "--fault-for", "2s", "--seed", "7")
	d.lostNothing(t)
	f := d.only(t, "fsync-eio")
	if f.Leader || f.ExitStatus == nil || *f.ExitStatus != 4 || !strings.HasPrefix(f.Outcome, "halted, exit 4") ||
		f.Cut == nil || !strings.HasSuffix(f.Outcome, "restarted") || f.Acknowledged == 0 {
		t.Fatalf("fsync-eio of a follower: %+v\n%s", f, d.output)
	}
	log, err := os.ReadFile(filepath.Join(d.out, f.Target+".log"))
	if err != nil || !strings.Contains(string(log), "halting: the disk failed a raft write") {
		t.Fatalf("%s's log does not say it halted (%v)", f.Target, err)
	}
	t.Logf("%s: %s; %d commits acknowledged meanwhile", f.Target, f.Outcome, f.Acknowledged)
}

// TestChaosDiskFullRefusesAndRecovers fills the leader's disk: it must
// stay up and not stop the cluster writing (it refuses writes with 507
// until it has handed leadership to a node with room), and once the disk
// has room again commits resume without anything acknowledged lost.
func TestChaosDiskFullRefusesAndRecovers(t *testing.T) {
	d := runDiskDrill(t, "--faults", "disk-full", "--aim", "leader", "--duration", "12s",
		"--fault-every", "6s", "--fault-for", "3s", "--seed", "7")
	d.lostNothing(t)
	f := d.only(t, "disk-full")
	if !f.Leader || f.Refused507+f.Acknowledged == 0 || f.ExitStatus != nil || !strings.Contains(f.Outcome, "kept running") {
		t.Fatalf("disk-full of the leader: %+v\n%s", f, d.output)
	}
	after := 0
	for _, op := range d.ops {
		if op.Op == chaos.OpCommit && op.Outcome == chaos.OutcomeOK && op.InvokeNs > f.EndNs {
			after++
		}
	}
	if after == 0 {
		t.Fatalf("no commit acknowledged after the disk had room again\n%s", d.output)
	}
	t.Logf("%s: %s; %d commits after, the first %d ms after the heal", f.Target, f.Outcome, after, f.RecoveryMs)
}

// TestChaosPowerCutSlowReadEIOAndBitrot mixes torn power cuts with a
// slow disk, failing reads of the raft log and bit rot in the synced
// part of the oldest raft log file, seen by the node as it restarts
// (seed 22 gives each kind, bit rot twice). A slow disk slows the node
// down and no more; a node whose log reads back damaged refuses to start
// (exit status 4) or runs on without the damage.
func TestChaosPowerCutSlowReadEIOAndBitrot(t *testing.T) {
	d := runDiskDrill(t, "--faults", "torn,read-eio,slow,bitrot", "--duration", "24s",
		"--fault-every", "3s", "--fault-for", "1500ms", "--seed", "22")
	d.lostNothing(t)
	for _, f := range d.faults("slow") {
		if !strings.Contains(f.Outcome, "slowed; kept running") || strings.HasPrefix(f.Outcome, "0 ") {
			t.Errorf("slow %s: %q", f.Target, f.Outcome)
		}
	}
	for _, f := range d.faults("bitrot") {
		refused := f.ExitStatus != nil && *f.ExitStatus == 4 && strings.Contains(f.Outcome, "refused to start: damaged data, exit 4")
		ranOn := f.ExitStatus == nil && strings.Contains(f.Outcome, "kept running") && !strings.Contains(f.Outcome, "dropped the entries")
		if !refused && !ranOn || strings.HasPrefix(f.Outcome, "0 reads rotted") {
			t.Errorf("bitrot %s (%s): %q", f.Target, f.Detail, f.Outcome)
		}
	}
	if len(d.faults("slow")) == 0 || len(d.faults("bitrot")) == 0 || len(d.faults("read-eio")) == 0 || len(d.faults("torn")) == 0 {
		t.Fatalf("faults %+v", d.sum.Faults)
	}
	for _, f := range d.sum.Faults {
		t.Logf("%-8s %s: %s", f.Kind, f.Target, f.Outcome)
	}
}

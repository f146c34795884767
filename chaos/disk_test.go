package chaos

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The answers 507 are counted from a fault's start until the next
// fault's (a leader notices room again within a second of healing), the
// acknowledged commits only while the fault lasted.
func TestHistoryOutcomesCountRefusalsAndCommits(t *testing.T) {
	refused := func(at int64) Op {
		return Op{Op: OpCommit, Outcome: OutcomeUnknown, Answer: http.StatusInsufficientStorage, InvokeNs: at - 1, CompleteNs: at}
	}
	ops := h{
		refused(5), // before the first fault
		commit(0, "t", 1, "a", 10, 12, OutcomeOK, 200), // during it
		refused(15), refused(25), // during it, and after its heal
		commit(0, "t", 2, "b", 30, 31, OutcomeOK, 200), // after it
		refused(45), // during the second fault
		{Op: OpCommit, Outcome: OutcomeUnknown, Answer: http.StatusServiceUnavailable, InvokeNs: 46, CompleteNs: 47},
	}
	faults := []Fault{{Kind: "disk-full", StartNs: 10, EndNs: 20, Outcome: "kept running"}, {Kind: "kill", StartNs: 40, EndNs: 50}}
	historyOutcomes(faults, ops)
	if f := faults[0]; f.Refused507 != 2 || f.Acknowledged != 1 || f.Outcome != "kept running; refused 2 writes with 507" {
		t.Errorf("first fault: %+v", f)
	}
	if f := faults[1]; f.Refused507 != 1 || f.Acknowledged != 0 || f.Outcome != "refused 1 write with 507" {
		t.Errorf("second fault: %+v", f)
	}
}

// A 5xx leaves the outcome unknown but keeps the status it answered, so
// that the refusals of a full disk can be counted.
func TestSettleKeepsTheStatusOfAnUnknownOutcome(t *testing.T) {
	var op Op
	if op.settle(http.StatusInsufficientStorage, nil) != OutcomeUnknown || op.Answer != 507 || op.Status != 0 {
		t.Errorf("507: %+v", op)
	}
	op = Op{}
	if op.settle(0, context.DeadlineExceeded) != OutcomeUnknown || op.Answer != 0 {
		t.Errorf("no answer: %+v", op)
	}
}

// The report shows each fault's kind, target and outcome on the timeline
// (hover) and in a table under it.
func TestReportListsFaultsWithTheirOutcomes(t *testing.T) {
	ops := h{commit(0, "t", 1, "a1", 0, 1_000_000, OutcomeOK, 200), final("t", 1, map[int64]string{1: "a1"})}
	four := 4
	sum := Summary{Result: Check(ops, 0), Faults: []Fault{
		{Kind: "fsync-eio", Target: "node2", StartNs: 100, EndNs: 900, ExitStatus: &four,
			Outcome: "halted, exit 4 (3 syncs failed); power cut: 1 page dropped, 2 entries reverted; restarted"},
		{Kind: "bitrot", Target: "node3", Leader: true, StartNs: 200, EndNs: 800, Detail: "16 bytes at offset 40 of raft/segments/x.seg"}}}
	var buf bytes.Buffer
	if err := WriteReport(&buf, ops, sum); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		"<title>fsync-eio node2 (leader false): halted, exit 4 (3 syncs failed); power cut",
		`<table class="ops" id="faults">`, "<td>fsync-eio</td><td>node2</td>", "<td>4</td>",
		"<td>bitrot</td><td>node3 (leader)</td>", "16 bytes at offset 40 of raft/segments/x.seg",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// fakeTarget is a cluster for chooseFault: node2 leads.
type fakeTarget struct{ target }

func (fakeTarget) LeaderIndex() int { return 1 }
func (fakeTarget) Names() []string  { return []string{"node1", "node2", "node3"} }

// Aimed at the leader every fault hits it, aimed at followers none does,
// and a power cut of all names them all.
func TestChooseFaultAims(t *testing.T) {
	rec := &recorder{}
	for _, tc := range []struct {
		aim    string
		leader func(int) bool
	}{{AimLeader, func(n int) bool { return n == 50 }}, {AimFollower, func(n int) bool { return n == 0 }},
		{"", func(n int) bool { return n > 10 && n < 50 }}} {
		rng, leaders := rand.New(rand.NewPCG(1, 2)), 0
		for range 50 {
			f, i := chooseFault(fakeTarget{}, Config{Nodes: 3, Aim: tc.aim}, []string{"kill"}, rng, rec)
			if f.Leader != (i == 1) || f.Target != (fakeTarget{}).Names()[i] {
				t.Fatalf("aim %q: %+v on node %d", tc.aim, f, i)
			}
			if f.Leader {
				leaders++
			}
		}
		if !tc.leader(leaders) {
			t.Errorf("aim %q: %d of 50 faults on the leader", tc.aim, leaders)
		}
	}
	f, _ := chooseFault(fakeTarget{}, Config{Nodes: 3}, []string{"power-cut-all"}, rand.New(rand.NewPCG(1, 2)), rec)
	if f.Target != "all" || !f.Leader {
		t.Errorf("power-cut-all: %+v", f)
	}
}

// segmentRecords finds each record of a segment file by its header up
// to the zeros after the last; usedPages finds the pages not all zeros.
func TestRotRangesFindWhatWasWritten(t *testing.T) {
	var seg []byte
	for _, n := range []int{30, 5000, 12} {
		seg = binary.LittleEndian.AppendUint32(seg, 0xdeadbeef)
		seg = binary.LittleEndian.AppendUint32(seg, uint32(n))
		seg = append(seg, bytes.Repeat([]byte{7}, n)...)
	}
	seg = append(seg, make([]byte, 3*4096)...)
	p := filepath.Join(t.TempDir(), "1.seg")
	if err := os.WriteFile(p, seg, 0o600); err != nil {
		t.Fatal(err)
	}
	spans, err := segmentRecords(p)
	want := []span{{0, 38}, {38, 5008}, {5046, 20}}
	if err != nil || len(spans) != len(want) || spans[0] != want[0] || spans[1] != want[1] || spans[2] != want[2] {
		t.Errorf("records %v, %v; want %v", spans, err, want)
	}
	pages, err := usedPages(p, 1)
	if err != nil || len(pages) != 1 || pages[0] != (span{4096, 4096}) {
		t.Errorf("used pages past the first: %v, %v", pages, err)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 4096: "4,096", 1234567: "1,234,567", -4096: "-4,096"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCutSummarySaysWhatWasDropped(t *testing.T) {
	for s, want := range map[CutSummary]string{
		{PagesDropped: 1, EntriesReverted: 1}:                  "1 page dropped, 1 entry reverted",
		{PagesDropped: 4096, PagesKept: 3, EntriesReverted: 0}: "4,096 pages dropped, 3 kept, 0 entries reverted",
	} {
		if got := s.String(); got != want {
			t.Errorf("%+v: %q, want %q", s, got, want)
		}
	}
}

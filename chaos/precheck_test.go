package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// bigHistory is a generated linearizable history of about 20,000
// operations (see histgen_test.go), made once.
var bigHistory = sync.OnceValue(func() []Op { return genHistory(1, 20_000) })

// doctored is a copy of a history with one operation changed: at is the
// index of the operation at fault, also the other one the violation must
// name (-1: none).
type doctored struct {
	kind      string
	ops       []Op
	at, also  int
	changeLog string
}

// doctors make one violation of each kind in a copy of ops.
var doctors = []struct {
	kind   string
	doctor func(ops []Op) doctored
}{
	{KindStaleRead, doctorStaleRead},
	{KindLostCommit, doctorLostCommit},
	{KindTwoFiles, doctorTwoFiles},
	{KindFutureRead, doctorFutureRead},
}

// ackedBefore is the acknowledged commit of table with the highest
// version among those acknowledged before t (-1: none).
func ackedBefore(ops []Op, table string, t int64) int {
	best := -1
	for i, op := range ops {
		if op.Table == table && op.Op == OpCommit && op.Outcome == OutcomeOK && op.CompleteNs < t &&
			(best < 0 || op.Version > ops[best].Version) {
			best = i
		}
	}
	return best
}

// doctorStaleRead makes a load in the middle of a Delta table's history
// see the version before the last one acknowledged before it began.
func doctorStaleRead(ops []Op) doctored {
	ops = slices.Clone(ops)
	for i := len(ops) / 2; i < len(ops); i++ {
		op := ops[i]
		if op.Table != "t0" || op.Op != OpLoad || op.Outcome != OutcomeOK || op.Final {
			continue
		}
		if c := ackedBefore(ops, op.Table, op.InvokeNs); c >= 0 && ops[c].Version > 1 {
			ops[i].LatestVersion = ops[c].Version - 1
			return doctored{KindStaleRead, ops, i, c, fmt.Sprintf("load #%d sees version %d", i, ops[c].Version-1)}
		}
	}
	panic("no load to make stale")
}

// doctorLostCommit makes the final load of a Delta table miss its last
// acknowledged version.
func doctorLostCommit(ops []Op) doctored {
	ops = slices.Clone(ops)
	last := ackedBefore(ops, "t1", 1<<62)
	for i, op := range ops {
		if op.Table == "t1" && op.Final {
			v := ops[last].Version
			ops[i].LatestVersion, ops[i].Commits = v-1, map[int64]string{}
			for k, f := range op.Commits {
				if k < v {
					ops[i].Commits[k] = f
				}
			}
			return doctored{KindLostCommit, ops, last, i, fmt.Sprintf("final load #%d at version %d", i, v-1)}
		}
	}
	panic("no final load")
}

// doctorTwoFiles acknowledges a commit of a Delta table that was refused
// because another file had taken its version (one the final load no
// longer lists).
func doctorTwoFiles(ops []Op) doctored {
	ops = slices.Clone(ops)
	for i, op := range ops {
		if op.Table != "t2" || op.Op != OpCommit || op.Status != 409 || op.Version > 100 {
			continue
		}
		for j, o := range ops {
			if o.Table == op.Table && o.Op == OpCommit && o.Outcome == OutcomeOK && o.Version == op.Version {
				ops[i].Outcome, ops[i].Status = OutcomeOK, 200
				return doctored{KindTwoFiles, ops, i, j, fmt.Sprintf("commit #%d acknowledged", i)}
			}
		}
	}
	panic("no refused commit")
}

// doctorFutureRead makes a load in the middle of an Iceberg table's
// history see a snapshot whose commit began after it returned.
func doctorFutureRead(ops []Op) doctored {
	ops = slices.Clone(ops)
	for i := len(ops) / 2; i < len(ops); i++ {
		op := ops[i]
		if op.Table != "t3" || op.Op != OpLoad || op.Outcome != OutcomeOK || op.Final {
			continue
		}
		if c := laterCommit(ops, op); c >= 0 {
			ops[i].LatestVersion, ops[i].Head = ops[c].Version, ops[c].FileName
			return doctored{KindFutureRead, ops, i, -1, fmt.Sprintf("load #%d sees version %d", i, ops[c].Version)}
		}
	}
	panic("no load to make see the future")
}

// laterCommit is an acknowledged commit of r's table whose version no
// commit had begun to make when r returned (-1: none).
func laterCommit(ops []Op, r Op) int {
	for i, op := range ops {
		if op.Table != r.Table || op.Op != OpCommit || op.Outcome != OutcomeOK || op.Version <= r.LatestVersion+1 {
			continue
		}
		early := false
		for _, w := range ops {
			early = early || (w.Table == r.Table && w.Op == OpCommit && w.Version == op.Version && w.InvokeNs <= r.CompleteNs)
		}
		if !early {
			return i
		}
	}
	return -1
}

func TestPrecheckNamesTheViolationInLargeHistories(t *testing.T) {
	clean := bigHistory()
	res := Check(clean, 5*time.Minute)
	if !res.OK() || res.LinearizabilityOK != "ok" || res.Precheck.Verdict != "ok" || res.DecidedBy != "porcupine" {
		t.Fatalf("the undoctored history of %d operations: %s, decided by %q, pre-check %q, violations %q",
			len(clean), res.LinearizabilityOK, res.DecidedBy, res.Precheck.Verdict, res.Violations)
	}
	for _, d := range doctors {
		t.Run(d.kind, func(t *testing.T) {
			doc := d.doctor(clean)
			res := Check(doc.ops, 5*time.Minute)
			if res.Linearizable || res.OK() || res.LinearizabilityOK != "illegal" || res.DecidedBy != "precheck" {
				t.Fatalf("%s: linearizable %v, check %q, decided by %q", doc.changeLog, res.Linearizable, res.LinearizabilityOK, res.DecidedBy)
			}
			if len(res.Precheck.Violations) != 1 {
				t.Fatalf("%s: want one violation, got %q", doc.changeLog, res.Violations)
			}
			assertNames(t, res.Precheck.Violations[0], doc)
		})
	}
}

// assertNames checks the violation is of the doctored kind and names the
// doctored operation (and the one it contradicts), in its operations and
// its message.
func assertNames(t *testing.T, v Violation, doc doctored) {
	t.Helper()
	if v.Kind != doc.kind || v.Table != doc.ops[doc.at].Table {
		t.Fatalf("%s: violation %s on %s, want %s on %s", doc.changeLog, v.Kind, v.Table, doc.kind, doc.ops[doc.at].Table)
	}
	for _, i := range []int{doc.at, doc.also} {
		if i < 0 {
			continue
		}
		found := slices.ContainsFunc(v.Ops, func(r OpRef) bool {
			op := doc.ops[i]
			return r.Index == i && r.Client == op.Client && r.InvokeNs == op.InvokeNs && r.CompleteNs == op.CompleteNs
		})
		if !found || !strings.Contains(v.Message, fmt.Sprintf("#%d ", i)) {
			t.Fatalf("%s: violation does not name #%d: %s (%+v)", doc.changeLog, i, v.Message, v.Ops)
		}
	}
}

// The pre-check never proves a violation porcupine would not find: for
// random corruptions of small generated histories, whatever it proves
// outside the final loads (which porcupine does not see), porcupine finds
// the history not linearizable too; and it proves nothing on the
// histories as generated.
func TestPrecheckAgreesWithPorcupine(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	proved := 0
	for seed := uint64(1); seed <= 12; seed++ {
		ops := genHistory(seed, 400)
		if p := precheck(ops); p.Verdict != "ok" {
			t.Fatalf("seed %d: the generated history flagged: %+v", seed, p.Violations)
		}
		for range 25 {
			bad, what := corrupt(ops, rng)
			p := precheck(bad)
			if !provesOutsideFinals(bad, p) {
				continue
			}
			proved++
			verdict := porcupine.CheckOperationsTimeout(tableModel, operations(bad), time.Minute)
			if verdict != porcupine.Illegal {
				t.Fatalf("seed %d, %s: the pre-check proved %q, porcupine says %v", seed, what, p.Violations[0].Message, verdict)
			}
		}
	}
	if proved < 50 {
		t.Fatalf("only %d corrupted histories had a violation the pre-check proved", proved)
	}
}

// provesOutsideFinals reports whether the pre-check proved a violation
// naming no final load.
func provesOutsideFinals(ops []Op, p Precheck) bool {
	for _, v := range p.Violations {
		if !slices.ContainsFunc(v.Ops, func(r OpRef) bool { return ops[r.Index].Final }) {
			return true
		}
	}
	return false
}

// corrupt changes one operation of a copy of ops at random.
func corrupt(ops []Op, rng *rand.Rand) ([]Op, string) {
	ops = slices.Clone(ops)
	for {
		i := rng.IntN(len(ops))
		op := &ops[i]
		if op.Final {
			continue
		}
		switch k := rng.IntN(5); {
		case op.Op == OpLoad && op.Outcome == OutcomeOK && k < 2:
			op.LatestVersion += int64(rng.IntN(5)) - 2
			return ops, fmt.Sprintf("load #%d sees version %d", i, op.LatestVersion)
		case op.Op == OpLoad && op.Head != "" && k == 2:
			op.Head = ops[rng.IntN(len(ops))].FileName
			return ops, fmt.Sprintf("load #%d sees head %q", i, op.Head)
		case op.Op == OpCommit && op.Outcome != OutcomeOK && k == 3:
			op.Outcome, op.Status = OutcomeOK, 200
			return ops, fmt.Sprintf("commit #%d acknowledged", i)
		case op.Op == OpCommit && k == 4:
			shift := int64(rng.IntN(20)-10) * ms
			op.InvokeNs, op.CompleteNs = op.InvokeNs+shift, op.CompleteNs+shift
			return ops, fmt.Sprintf("commit #%d shifted by %v", i, time.Duration(shift))
		}
	}
}

// Operations that leave the state open are not evidence: a commit of
// unknown outcome may have made what a load saw, a refused commit made
// nothing, a load without an answer saw nothing, operations that touch
// are concurrent, and a group's final loads are checkTransactions'.
func TestPrecheckProvesOnlyWhatTheHistoryShows(t *testing.T) {
	ok := map[string]h{
		"a load sees a commit of unknown outcome": {commit(0, "t", 1, "a", 0, 5, OutcomeUnknown, 0), load(1, "t", 1, 1, 2)},
		"a load touching the acknowledgement":     {commit(0, "t", 1, "a", 0, 5, OutcomeOK, 200), load(1, "t", 0, 5, 6)},
		"a load touching the commit's start":      {load(1, "t", 1, 0, 5), commit(0, "t", 1, "a", 5, 6, OutcomeOK, 200)},
		"a refused commit of another file":        {commit(0, "t", 1, "a", 0, 1, OutcomeOK, 200), commit(1, "t", 1, "b", 2, 3, OutcomeFail, 409)},
		"a load that got no answer": {commit(0, "t", 1, "a", 0, 1, OutcomeOK, 200),
			{Client: 1, Table: "t", Op: OpLoad, InvokeNs: 2, CompleteNs: 3, Outcome: OutcomeUnknown}},
		"an untracked version in the final load": {commit(0, "t", 1, "a", 0, 1, OutcomeOK, 200), final("t", 3, map[int64]string{3: "c"}),
			commit(0, "t", 2, "b", 2, 3, OutcomeUnknown, 0), commit(0, "t", 3, "c", 4, 5, OutcomeUnknown, 0)},
		"a group's final load": {{Protocol: ProtocolTransactions, Client: 0, Table: "g", Op: OpCommit, Version: 1, FileName: "x",
			InvokeNs: 0, CompleteNs: 1, Outcome: OutcomeOK, Status: 200},
			{Protocol: ProtocolTransactions, Client: 9, Table: "g", Op: OpLoad, Part: PartDelta, Final: true, InvokeNs: 5, CompleteNs: 6, Outcome: OutcomeOK}},
	}
	for name, ops := range ok {
		if p := precheck(ops); p.Verdict != "ok" || len(p.Violations) != 0 {
			t.Errorf("%s: %+v", name, p.Violations)
		}
	}
	bad := map[string]struct {
		kind string
		ops  h
	}{
		"a stale read":  {KindStaleRead, h{commit(0, "t", 1, "a", 0, 4, OutcomeOK, 200), load(1, "t", 0, 5, 6)}},
		"a future read": {KindFutureRead, h{load(1, "t", 1, 0, 4), commit(0, "t", 1, "a", 5, 6, OutcomeOK, 200)}},
		"a load against an acknowledged commit": {KindTwoFiles, h{icommit(0, "t", 1, "a", "", 0, 1, OutcomeOK, 200),
			iload(1, "t", 1, "b", 0, 6)}},
		"a load against the final load": {KindTwoFiles, h{icommit(0, "t", 1, "a", "", 0, 5, OutcomeUnknown, 0),
			icommit(1, "t", 1, "b", "", 0, 5, OutcomeUnknown, 0), iload(2, "t", 1, "b", 6, 7), ifinal("t", 1, map[int64]string{1: "a"})}},
		"a lost commit": {KindLostCommit, h{commit(0, "t", 1, "a", 0, 1, OutcomeOK, 200), final("t", 0, nil)}},
	}
	for name, c := range bad {
		if p := precheck(c.ops); len(p.Violations) != 1 || p.Violations[0].Kind != c.kind || p.Verdict != "violations" {
			t.Errorf("%s: %+v", name, p.Violations)
		}
	}
}

// BenchmarkCheckDoctored decides each doctored history of about 20,000
// operations, and the undoctored one.
func BenchmarkCheckDoctored(b *testing.B) {
	clean := bigHistory()
	b.Run("clean", func(b *testing.B) { benchCheck(b, clean) })
	for _, d := range doctors {
		doc := d.doctor(clean)
		b.Run(d.kind, func(b *testing.B) { benchCheck(b, doc.ops) })
	}
}

func benchCheck(b *testing.B, ops []Op) {
	for b.Loop() {
		if res := Check(ops, 5*time.Minute); res.LinearizabilityOK == "unknown" {
			b.Fatal("not decided")
		}
	}
	b.ReportMetric(float64(len(ops)), "ops/history")
}

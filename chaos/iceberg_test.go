package chaos

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// icommit is an Iceberg commit of snapshot id at sequence number v on base.
func icommit(client int, table string, v int64, id, base string, from, to int64, outcome string, status int) Op {
	return Op{Protocol: ProtocolIceberg, Client: client, Table: table, Op: OpCommit, Version: v, FileName: id, Base: base,
		InvokeNs: from, CompleteNs: to, Outcome: outcome, Status: status}
}

// iload is an Iceberg load that saw snapshot head at sequence number v.
func iload(client int, table string, v int64, head string, from, to int64) Op {
	return Op{Protocol: ProtocolIceberg, Client: client, Table: table, Op: OpLoad, LatestVersion: v, Head: head,
		InvokeNs: from, CompleteNs: to, Outcome: OutcomeOK}
}

func ifinal(table string, latest int64, commits map[int64]string) Op {
	op := final(table, latest, commits)
	op.Protocol, op.Head = ProtocolIceberg, commits[latest]
	return op
}

func TestCheckAcceptsAHealthyIcebergHistory(t *testing.T) {
	ops := h{
		iload(0, "t", 0, "", 0, 1), iload(1, "t", 0, "", 0, 1),
		icommit(0, "t", 1, "a1", "", 2, 5, OutcomeOK, 200),
		icommit(1, "t", 1, "b1", "", 3, 6, OutcomeFail, 409), // lost the race: the table has a snapshot now
		iload(1, "t", 1, "a1", 7, 8),
		icommit(1, "t", 2, "b2", "a1", 9, 12, OutcomeUnknown, 0), // leader killed under it
		iload(1, "t", 1, "a1", 13, 14),                           // not there yet: retried identically
		icommit(1, "t", 2, "b2", "a1", 15, 16, OutcomeOK, 200),
		icommit(0, "t", 2, "a2", "a1", 10, 17, OutcomeFail, 409), // concurrent with both
		iload(0, "t", 2, "b2", 18, 19),
		icommit(0, "t", 3, "a3", "b2", 20, 22, OutcomeUnknown, 0),
		iload(0, "t", 3, "a3", 23, 24),                            // found out: it applied
		icommit(1, "t", 3, "b3", "b2", 21, 25, OutcomeUnknown, 0), // and this one never will
		iload(1, "t", 3, "a3", 26, 27),
		icommit(0, "u", 1, "x", "", 1, 2, OutcomeUnknown, 0), // never applied: fine too
		ifinal("t", 3, map[int64]string{1: "a1", 2: "b2", 3: "a3"}),
	}
	res := Check(ops, 10*time.Second)
	if !res.OK() || res.AcknowledgedCommits != 2 || res.LostCommits != 0 {
		t.Fatalf("healthy history flagged: %+v", res)
	}
}

func TestCheckFlagsDoctoredIcebergHistories(t *testing.T) {
	acked := h{
		icommit(0, "t", 1, "a1", "", 0, 1, OutcomeOK, 200),
		icommit(1, "t", 2, "b2", "a1", 2, 3, OutcomeOK, 200),
	}
	cases := []struct {
		name   string
		ops    h
		want   string
		lost   int
		linear bool
	}{
		{name: "lost acknowledged commit", ops: append(acked[:2:2], ifinal("t", 1, map[int64]string{1: "a1"})),
			want: "acknowledged version 2 lost", lost: 1},
		{name: "acknowledged commit replaced", ops: append(acked[:2:2], ifinal("t", 2, map[int64]string{1: "a1", 2: "x2"})),
			want: "replaced by x2", lost: 1},
		{name: "a load misses an acknowledged commit", ops: append(acked[:2:2], iload(2, "t", 1, "a1", 4, 5),
			ifinal("t", 2, map[int64]string{1: "a1", 2: "b2"})), want: "not linearizable"},
		{name: "a load sees another snapshot at an acknowledged version", ops: append(acked[:2:2], iload(2, "t", 2, "x2", 4, 5),
			ifinal("t", 2, map[int64]string{1: "a1", 2: "b2"})), want: "not linearizable"},
		{name: "two commits acknowledged on one base", ops: h{acked[0], acked[1],
			icommit(2, "t", 2, "c2", "a1", 4, 5, OutcomeOK, 200), ifinal("t", 2, map[int64]string{1: "a1", 2: "b2"})},
			want: "acknowledged with two files", lost: 1},
		{name: "acknowledged on a base that is not current", ops: h{acked[0],
			icommit(1, "t", 2, "b2", "zz", 2, 3, OutcomeOK, 200), ifinal("t", 2, map[int64]string{1: "a1", 2: "b2"})},
			want: "not linearizable"},
		{name: "conflict reported on the current base", ops: h{acked[0],
			icommit(1, "t", 2, "b2", "a1", 2, 3, OutcomeFail, 409), iload(1, "t", 1, "a1", 4, 5),
			ifinal("t", 1, map[int64]string{1: "a1"})}, want: "not linearizable"},
		{name: "an unknown commit applies after the table moved on", ops: h{acked[0],
			icommit(2, "t", 2, "c2", "a1", 2, 3, OutcomeUnknown, 0), acked[1], iload(2, "t", 2, "b2", 4, 5),
			iload(2, "t", 3, "c2", 6, 7), ifinal("t", 2, map[int64]string{1: "a1", 2: "b2"})}, want: "not linearizable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Check(c.ops, 10*time.Second)
			if res.OK() {
				t.Fatalf("doctored history passed: %+v", res)
			}
			if !strings.Contains(strings.Join(res.Violations, "\n"), c.want) {
				t.Fatalf("violations %q lack %q", res.Violations, c.want)
			}
			if res.Linearizable != c.linear {
				t.Fatalf("linearizable = %v, want %v", res.Linearizable, c.linear)
			}
			if res.LostCommits != c.lost {
				t.Fatalf("lost = %d, want %d", res.LostCommits, c.lost)
			}
		})
	}
}

// The same history written as Delta commits and as Iceberg commits gets
// the same verdict on what was acknowledged and lost.
func TestIcebergTablesAreCheckedLikeDeltaTables(t *testing.T) {
	delta := h{commit(0, "t", 1, "a1", 0, 1, OutcomeOK, 200), commit(0, "t", 2, "a2", 2, 3, OutcomeOK, 200),
		final("t", 1, map[int64]string{1: "a1"})}
	ice := h{icommit(0, "t", 1, "a1", "", 0, 1, OutcomeOK, 200), icommit(0, "t", 2, "a2", "a1", 2, 3, OutcomeOK, 200),
		ifinal("t", 1, map[int64]string{1: "a1"})}
	d, i := Check(delta, 10*time.Second), Check(ice, 10*time.Second)
	if d.OK() || i.OK() || d.LostCommits != i.LostCommits || d.AcknowledgedCommits != i.AcknowledgedCommits ||
		strings.Join(d.Violations, "\n") != strings.Join(i.Violations, "\n") {
		t.Fatalf("delta %+v\niceberg %+v", d, i)
	}
}

func TestUnknownIcebergCommitsAreBoundedByLoads(t *testing.T) {
	ops := h{
		icommit(0, "t", 2, "a2", "x1", 10, 11, OutcomeUnknown, 0),
		iload(1, "t", 1, "x1", 12, 13), // still at the base: no bound
		iload(1, "t", 2, "b2", 14, 15), // moved on: bounded here
		iload(1, "t", 3, "b3", 16, 17),
		commit(2, "d", 2, "a2", 10, 11, OutcomeUnknown, 0), // a Delta commit is bounded by its retries only
		iload(2, "d", 3, "", 12, 13),
	}
	got := settledBy(ops)
	if got[0] != 15 || got[4] != math.MaxInt64 {
		t.Fatalf("bounds %v, want 15 for the Iceberg commit and none for the Delta one", got)
	}
}

// A drill's history with many unknown Iceberg outcomes, each found out by
// a load, is decided; the bounds keep violations visible.
func TestManyUnknownIcebergOutcomesAreDecided(t *testing.T) {
	var ops h
	at, head := int64(0), ""
	for v := int64(1); v <= 40; v++ {
		c, id := int(v%2), fmt.Sprint("f", v)
		ops = append(ops,
			icommit(c, "t", v, id, head, at, at+2, OutcomeUnknown, 0),
			icommit(1-c, "t", v, "lost"+id, head, at+1, at+3, OutcomeUnknown, 0),
			iload(c, "t", v, id, at+4, at+5))
		at, head = at+10, id
	}
	ops = append(ops, ifinal("t", 40, nil))
	res := Check(ops, 20*time.Second)
	if !res.OK() {
		t.Fatalf("history flagged: %+v", res.Violations)
	}
	bad := append(h{}, ops[:len(ops)-1]...)
	bad = append(bad, iload(0, "t", 39, "f39", at+1, at+2), ifinal("t", 40, nil))
	if res := Check(bad, 20*time.Second); res.LinearizabilityOK != "illegal" {
		t.Fatalf("a load going back a version: linearizability %q, want illegal", res.LinearizabilityOK)
	}
}

func TestIcebergHistoryRoundTrip(t *testing.T) {
	ops := h{icommit(0, "t", 1, "7", "", 0, 1, OutcomeOK, 200), iload(1, "t", 1, "7", 2, 3)}
	var buf bytes.Buffer
	if err := WriteHistory(&buf, ops); err != nil {
		t.Fatal(err)
	}
	back, err := ReadHistory(&buf)
	if err != nil || len(back) != 2 || back[0].Protocol != ProtocolIceberg || back[1].Head != "7" {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if _, err := ReadHistory(strings.NewReader(`{"op":"load","table":"t","outcome":"ok","protocol":"hudi"}`)); err == nil {
		t.Fatal("accepted an unknown protocol")
	}
}

package chaos

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// h builds histories compactly: times are in ms.
type h []Op

func commit(client int, table string, v int64, file string, from, to int64, outcome string, status int) Op {
	return Op{Client: client, Table: table, Op: OpCommit, Version: v, FileName: file,
		InvokeNs: from, CompleteNs: to, Outcome: outcome, Status: status}
}

func load(client int, table string, latest int64, from, to int64) Op {
	return Op{Client: client, Table: table, Op: OpLoad, LatestVersion: latest, InvokeNs: from, CompleteNs: to, Outcome: OutcomeOK}
}

func final(table string, latest int64, commits map[int64]string) Op {
	return Op{Client: 99, Table: table, Op: OpLoad, LatestVersion: latest, Final: true, Commits: commits,
		InvokeNs: 1000, CompleteNs: 1001, Outcome: OutcomeOK}
}

func TestCheckAcceptsAHealthyConcurrentHistory(t *testing.T) {
	ops := h{
		load(0, "t", 0, 0, 1), load(1, "t", 0, 0, 1),
		commit(0, "t", 1, "a1", 2, 5, OutcomeOK, 200),
		commit(1, "t", 1, "b1", 3, 6, OutcomeFail, 409), // lost the race
		load(1, "t", 1, 7, 8),
		commit(1, "t", 2, "b2", 9, 12, OutcomeUnknown, 0), // timed out, then retried byte-identically
		commit(1, "t", 2, "b2", 13, 14, OutcomeOK, 200),   // the retry is a replay or the commit itself
		commit(0, "t", 2, "a2", 10, 15, OutcomeFail, 409), // concurrent with the unknown one
		commit(0, "t", 4, "a4", 16, 17, OutcomeFail, 400), // a gap
		commit(0, "u", 1, "x", 1, 2, OutcomeUnknown, 0),   // never applied: fine too
		final("t", 2, map[int64]string{2: "b2"}),
	}
	res := Check(ops, 10*time.Second)
	if !res.OK() || res.AcknowledgedCommits != 2 || res.LostCommits != 0 {
		t.Fatalf("healthy history flagged: %+v", res)
	}
}

func TestCheckFlagsDoctoredHistories(t *testing.T) {
	cases := []struct {
		name    string
		ops     h
		want    string
		linear  bool
		lostOps int
	}{
		{name: "lost acknowledged commit", ops: h{
			commit(0, "t", 1, "a1", 0, 1, OutcomeOK, 200),
			commit(0, "t", 2, "a2", 2, 3, OutcomeOK, 200),
			final("t", 1, map[int64]string{1: "a1"}),
		}, want: "acknowledged version 2 lost", lostOps: 1},
		{name: "acknowledged commit replaced", ops: h{
			commit(0, "t", 1, "a1", 0, 1, OutcomeOK, 200),
			final("t", 1, map[int64]string{1: "other"}),
		}, want: "replaced by other", lostOps: 1},
		{name: "stale read", ops: h{
			commit(0, "t", 1, "a1", 0, 1, OutcomeOK, 200),
			load(1, "t", 0, 2, 3),
			final("t", 1, nil),
		}, want: "not linearizable"},
		{name: "version acknowledged twice with different files", ops: h{
			commit(0, "t", 1, "a1", 0, 1, OutcomeOK, 200),
			commit(1, "t", 1, "b1", 2, 3, OutcomeOK, 200),
			final("t", 1, map[int64]string{1: "a1"}),
		}, want: "acknowledged with two files", lostOps: 1},
		{name: "conflict reported for a free version", ops: h{
			commit(0, "t", 1, "a1", 0, 1, OutcomeFail, 409),
			final("t", 0, nil),
		}, want: "not linearizable", linear: false},
		{name: "no final load", ops: h{
			commit(0, "t", 1, "a1", 0, 1, OutcomeOK, 200),
		}, want: "no final load", linear: true},
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
			if res.LostCommits != c.lostOps {
				t.Fatalf("lost = %d, want %d", res.LostCommits, c.lostOps)
			}
		})
	}
}

// A commit refused before the table was looked at (not authenticated,
// not allowed, throttled) says nothing of its version; a refusal that
// claims to have looked (404 for a table that exists) hides a commit.
func TestRefusalsBeforeTheTableAreNeutral(t *testing.T) {
	for _, status := range []int{401, 403, 429} {
		ops := h{
			commit(0, "t", 1, "a1", 0, 1, OutcomeFail, status),
			commit(0, "t", 1, "a1", 2, 3, OutcomeOK, 200),
			final("t", 1, map[int64]string{1: "a1"}),
		}
		if res := Check(ops, 10*time.Second); !res.OK() {
			t.Errorf("a %d refusal of the next version flagged: %v", status, res.Violations)
		}
	}
	hidden := h{
		commit(0, "t", 1, "a1", 0, 1, OutcomeFail, 404),
		final("t", 0, nil),
	}
	if res := Check(hidden, 10*time.Second); res.Linearizable {
		t.Error("a 404 refusal of the next version passed")
	}
}

func TestEtagUpdatesAreChecked(t *testing.T) {
	ok := h{
		{Client: 0, Table: "t", Op: OpLoad, ETag: "e1", InvokeNs: 0, CompleteNs: 1, Outcome: OutcomeOK},
		{Client: 0, Table: "t", Op: OpUpdate, ETag: "e1", NewETag: "e2", InvokeNs: 2, CompleteNs: 3, Outcome: OutcomeOK},
		{Client: 1, Table: "t", Op: OpUpdate, ETag: "e1", InvokeNs: 4, CompleteNs: 5, Outcome: OutcomeFail, Status: 409},
		{Client: 1, Table: "t", Op: OpLoad, ETag: "e2", InvokeNs: 6, CompleteNs: 7, Outcome: OutcomeOK},
	}
	if res := Check(ok, 10*time.Second); !res.Linearizable {
		t.Fatalf("valid etag history flagged: %+v", res)
	}
	stale := append(h{}, ok[:2]...)
	stale = append(stale, Op{Client: 1, Table: "t", Op: OpLoad, ETag: "e1", InvokeNs: 6, CompleteNs: 7, Outcome: OutcomeOK})
	if res := Check(stale, 10*time.Second); res.Linearizable {
		t.Fatal("a load seeing the etag from before an acknowledged update passed")
	}
	// An update of unknown outcome that applied leaves the etag unknown
	// until a load sees it: an update asserting the old one is refused.
	unknown := h{ok[0],
		{Client: 1, Table: "t", Op: OpLoad, ETag: "e1", InvokeNs: 0, CompleteNs: 1, Outcome: OutcomeOK},
		{Client: 0, Table: "t", Op: OpUpdate, ETag: "e1", InvokeNs: 2, CompleteNs: 3, Outcome: OutcomeUnknown},
		{Client: 1, Table: "t", Op: OpUpdate, ETag: "e1", InvokeNs: 4, CompleteNs: 5, Outcome: OutcomeFail, Status: 409},
		{Client: 1, Table: "t", Op: OpLoad, ETag: "e2", InvokeNs: 6, CompleteNs: 7, Outcome: OutcomeOK},
	}
	if res := Check(unknown, 10*time.Second); !res.OK() {
		t.Fatalf("a refusal after an update of unknown outcome flagged: %v", res.Violations)
	}
}

func TestHistoryRoundTripAndValidation(t *testing.T) {
	ops := h{commit(0, "t", 1, "a", 0, 1, OutcomeOK, 200), final("t", 1, map[int64]string{1: "a"})}
	var buf bytes.Buffer
	if err := WriteHistory(&buf, ops); err != nil {
		t.Fatal(err)
	}
	back, err := ReadHistory(&buf)
	if err != nil || len(back) != 2 || back[1].Commits[1] != "a" {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	for _, bad := range []string{`{"op":"scan","table":"t","outcome":"ok"}`, `{"op":"load","table":"t","outcome":"maybe"}`,
		`{"op":"load","outcome":"ok"}`, `{"op":"load","table":"t","outcome":"ok","invoke_ns":5,"complete_ns":1}`, `not json`} {
		if _, err := ReadHistory(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// A history with many operations of unknown outcome, as a drill under
// heavy load records them (loads that timed out, commits retried until
// acknowledged), is decided quickly; left pending for ever they multiply
// the search until it runs out of time or memory.
func TestManyUnknownOutcomesAreDecided(t *testing.T) {
	var ops h
	at := int64(0)
	for v := int64(1); v <= 40; v++ {
		c := int(v % 2)
		ops = append(ops,
			Op{Client: 2 + c, Table: "t", Op: OpLoad, InvokeNs: at, CompleteNs: at + 1, Outcome: OutcomeUnknown},
			commit(c, "t", v, fmt.Sprint("f", v), at, at+2, OutcomeUnknown, 0),
			commit(c, "t", v, fmt.Sprint("f", v), at+3, at+4, OutcomeOK, 200),
			load(1-c, "t", v, at+5, at+6))
		at += 10
	}
	ops = append(ops, final("t", 40, nil))
	start := time.Now()
	res := Check(ops, 20*time.Second)
	if !res.OK() {
		t.Fatalf("history flagged: %+v", res.Violations)
	}
	t.Logf("decided in %v", time.Since(start))
	// The bound keeps violations visible: a load after an acknowledged
	// retry that misses the version is illegal.
	bad := append(h{}, ops[:len(ops)-1]...)
	bad = append(bad, load(0, "t", 39, at+1, at+2), final("t", 40, nil))
	if res := Check(bad, 20*time.Second); res.LinearizabilityOK != "illegal" {
		t.Fatalf("a load missing an acknowledged commit: linearizability %q, want illegal", res.LinearizabilityOK)
	}
}

// outage is a history of two clients that retry the commit of version 2
// through a long outage, each retry of unknown outcome, until one is
// acknowledged and the other refused; loads see only version 1 meanwhile.
func outage(retries int) h {
	ops := h{commit(0, "t", 1, "a1", 0, 1, OutcomeOK, 200)}
	for k := int64(0); k < int64(retries); k++ {
		at := 10 + 10*k
		ops = append(ops, commit(0, "t", 2, "a2", at, at+2, OutcomeUnknown, 0),
			commit(1, "t", 2, "b2", at+1, at+3, OutcomeUnknown, 0),
			load(2, "t", 1, at+4, at+5))
	}
	end := 10 + 10*int64(retries)
	return append(ops, commit(0, "t", 2, "a2", end, end+1, OutcomeOK, 200),
		commit(1, "t", 2, "b2", end+2, end+3, OutcomeFail, 409),
		load(2, "t", 2, end+4, end+5), final("t", 2, map[int64]string{2: "a2"}))
}

// The identical retries of an unknown commit are stood for by the first:
// a long outage's retries leave porcupine two operations to place, not
// eighty, and the history is decided linearizable.
func TestCheckStandsForRetriesByTheFirst(t *testing.T) {
	ops := outage(40)
	if n, want := len(operations(ops)), len(ops)-1-2*39; n != want {
		t.Errorf("%d porcupine operations, want %d", n, want)
	}
	if res := Check(ops, time.Minute); !res.OK() || res.LinearizabilityOK != "ok" {
		t.Fatalf("outage history: %+v", res)
	}
	// Retrying the same commit is no licence to apply it twice, nor to
	// lose it: the checks still see through the retries.
	lost := outage(40)
	lost[len(lost)-1] = final("t", 1, nil)
	if res := Check(lost, time.Minute); res.OK() {
		t.Fatalf("a lost acknowledged commit after an outage passed: %+v", res)
	}
}

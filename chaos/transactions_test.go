package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/raftcat/raftcat/storage"
)

// tcommit is a transaction tx of group g making version v on base (the
// transaction of version v-1); part names the refused operation.
func tcommit(client int, g string, v int64, tx, base string, from, to int64, outcome string, status int, part string) Op {
	return Op{Protocol: ProtocolTransactions, Client: client, Table: g, Op: OpCommit, Version: v, FileName: tx, Base: base,
		InvokeNs: from, CompleteNs: to, Outcome: outcome, Status: status, Part: part}
}

// tload is a load of one table of group g that saw version v made by head.
func tload(client int, g, part string, v int64, head string, from, to int64) Op {
	return Op{Protocol: ProtocolTransactions, Client: client, Table: g, Op: OpLoad, Part: part, LatestVersion: v, Head: head,
		InvokeNs: from, CompleteNs: to, Outcome: OutcomeOK}
}

// tloads is a load of the whole group: its three tables, one after the other.
func tloads(client int, g string, v int64, head string, from int64) []Op {
	return []Op{tload(client, g, PartDelta, v, head, from, from+1), tload(client, g, PartIceberg, v, head, from+1, from+2),
		tload(client, g, PartLance, v, head, from+2, from+3)}
}

// tfinal is the final load of one table of group g.
func tfinal(g, part string, latest int64, commits map[int64]string) Op {
	op := final(g, latest, commits)
	op.Protocol, op.Part, op.Head = ProtocolTransactions, part, commits[latest]
	return op
}

// tfinals are the final loads of a healthy group whose versions were made
// by txs (index 0 is version 1): the Delta table only tracks the latest.
func tfinals(g string, txs ...string) []Op {
	all := map[int64]string{}
	for i, tx := range txs {
		all[int64(i+1)] = tx
	}
	n := int64(len(txs))
	delta := map[int64]string{}
	if n > 0 {
		delta[n] = txs[n-1]
	}
	return []Op{tfinal(g, PartDelta, n, delta), tfinal(g, PartIceberg, n, all), tfinal(g, PartLance, n, all)}
}

func cat(parts ...[]Op) h {
	var out h
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// healthy is a drill's history of group g: two clients race, a leader is
// killed under a transaction that then turns out to have applied, and
// under another that turns out never to have.
func healthy() h {
	return cat(
		tloads(0, "g", 0, "", 0), tloads(1, "g", 0, "", 0),
		h{tcommit(0, "g", 1, "a1", "", 4, 8, OutcomeOK, 200, ""),
			tcommit(1, "g", 1, "b1", "", 5, 9, OutcomeFail, 409, PartLance)}, // lost the race on the final manifest
		tloads(1, "g", 1, "a1", 10),
		// The leader is killed under b2; it is not there yet, so it is
		// retried identically.
		h{tcommit(1, "g", 2, "b2", "a1", 14, 16, OutcomeUnknown, 0, "")},
		tloads(1, "g", 1, "a1", 17),
		h{tcommit(1, "g", 2, "b2", "a1", 21, 22, OutcomeUnknown, 0, "")},
		tloads(1, "g", 2, "b2", 23), // found out: it applied, whole
		tloads(0, "g", 2, "b2", 24),
		h{tcommit(0, "g", 3, "a3", "b2", 28, 30, OutcomeUnknown, 0, "")},
		h{tcommit(1, "g", 3, "b3", "b2", 29, 31, OutcomeOK, 200, "")},
		tloads(0, "g", 3, "b3", 32), // a3 never applied: b3 took version 3
		// c3, sent on b2 after b3 landed, has a stale base; c4, on the
		// current one, is refused by Lance (another transaction's final
		// manifest in its way), which proves nothing about the base.
		h{tcommit(2, "g", 3, "c3", "b2", 33, 34, OutcomeFail, 409, PartIceberg)},
		tloads(2, "g", 3, "b3", 35),
		h{tcommit(2, "g", 4, "c4", "b3", 39, 40, OutcomeFail, 409, PartLance)},
		tfinals("g", "a1", "b2", "b3"),
	)
}

func TestCheckAcceptsAHealthyTransactionsHistory(t *testing.T) {
	res := Check(healthy(), 10*time.Second)
	if !res.OK() || res.AcknowledgedCommits != 2 || res.LostCommits != 0 {
		t.Fatalf("healthy history flagged: %+v", res)
	}
	want := TxSummary{Acknowledged: 2, Refused: 3, Unknown: 2, UnknownApplied: 1, UnknownAbsent: 1}
	if res.Transactions == nil || *res.Transactions != want {
		t.Fatalf("transactions %+v, want %+v", res.Transactions, want)
	}
}

func TestCheckFlagsPartialTransactions(t *testing.T) {
	base := healthy()
	body := base[:len(base)-3]
	all := map[int64]string{1: "a1", 2: "b2", 3: "b3"}
	cases := []struct {
		name   string
		ops    h
		want   []string
		lost   int
		linear bool
	}{
		{name: "a leader killed mid-transaction left it in two tables of three",
			ops: cat(body, h{tfinal("g", PartDelta, 2, map[int64]string{2: "b2"}), tfinal("g", PartIceberg, 3, all), tfinal("g", PartLance, 3, all)}),
			want: []string{"transaction b3 (acknowledged, version 3) is partially present: in iceberg, lance; missing from delta (at version 2)",
				"end at different versions (delta 2, iceberg 3, lance 3)"},
			lost: 1, linear: true},
		{name: "a transaction of unknown outcome in one table only",
			ops: cat(body[:len(body)-10], h{tcommit(0, "g", 3, "a3", "b2", 28, 30, OutcomeUnknown, 0, "")},
				tfinals("g", "a1", "b2")[:2], h{tfinal("g", PartLance, 3, map[int64]string{1: "a1", 2: "b2", 3: "a3"})}),
			want:   []string{"transaction a3 (of unknown outcome, version 3) is partially present: in lance; missing from delta (at version 2), iceberg (at version 2)"},
			linear: true},
		{name: "one version made by two transactions",
			ops: cat(body, h{tfinal("g", PartDelta, 3, map[int64]string{3: "a3"}), tfinal("g", PartIceberg, 3, all), tfinal("g", PartLance, 3, all)}),
			want: []string{"transaction a3 (of unknown outcome, version 3) is partially present: in delta; missing from iceberg (its version 3 is transaction b3)",
				"transaction b3 (acknowledged, version 3) is partially present: in iceberg, lance; missing from delta (its version 3 is transaction a3)"},
			lost: 1, linear: true},
		{name: "a refused transaction applied",
			ops:    cat(body, tfinals("g", "a1", "b2", "b3", "c4")),
			want:   []string{"transaction c4 was refused with 409 at its lance operation but is in its delta, iceberg, lance table(s)"},
			linear: true},
		{name: "an acknowledged transaction lost from every table",
			ops:  cat(body, tfinals("g", "a1", "b2")),
			want: []string{"acknowledged transaction b3 (version 3) lost: missing from delta (at version 2), iceberg (at version 2), lance (at version 2)"},
			lost: 1, linear: true},
		{name: "Lance versions without their manifest",
			ops: func() h {
				ops := cat(body, tfinals("g", "a1", "b2", "b3"))
				ops[len(ops)-1].BadManifests = map[int64]string{2: "no manifest", 3: "the manifest staged by transaction c3"}
				return ops
			}(),
			want: []string{"its lance table's version 2 (transaction b2) has no manifest in the store",
				"its lance table's version 3 (transaction b3) has the manifest staged by transaction c3 in the store"}, linear: true},
		{name: "a gap in the Iceberg snapshots",
			ops: cat(body, h{tfinal("g", PartDelta, 3, map[int64]string{3: "b3"}), tfinal("g", PartIceberg, 3, map[int64]string{1: "a1", 3: "b3"}),
				tfinal("g", PartLance, 3, all)}),
			want: []string{"its iceberg table lacks versions 2 below its latest 3",
				"transaction b2 (of unknown outcome, version 2) is partially present: in lance; missing from iceberg (it has no version 2)"},
			linear: true},
		{name: "a transaction no client sent",
			ops: cat(body, h{tfinal("g", PartDelta, 3, map[int64]string{3: "b3"}), tfinal("g", PartIceberg, 3, all),
				tfinal("g", PartLance, 3, map[int64]string{1: "a1", 2: "zz", 3: "b3"})}),
			want: []string{"transaction zz, which no client sent, is in its lance (version 2) table(s)"}, linear: true},
		{name: "no final load of one table", ops: cat(body, tfinals("g", "a1", "b2", "b3")[:2]),
			want: []string{"group g: no final load of its lance table after healing"}, linear: true},
		{name: "a load of one table misses a transaction a load of another saw",
			ops:  cat(body, h{tload(2, "g", PartLance, 2, "b2", 33, 34)}, tfinals("g", "a1", "b2", "b3")),
			want: []string{"not linearizable"}},
		{name: "a refusal for a stale base on the current one",
			ops: cat(body, h{tcommit(0, "g", 4, "a4", "b3", 41, 42, OutcomeFail, 409, PartIceberg)},
				tloads(0, "g", 3, "b3", 43), tfinals("g", "a1", "b2", "b3")),
			want: []string{"not linearizable"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Check(c.ops, 10*time.Second)
			if res.OK() {
				t.Fatalf("doctored history passed: %+v", res)
			}
			got := strings.Join(res.Violations, "\n")
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("violations lack %q:\n%s", w, got)
				}
			}
			if res.Linearizable != c.linear {
				t.Errorf("linearizable = %v, want %v", res.Linearizable, c.linear)
			}
			if res.LostCommits != c.lost {
				t.Errorf("lost = %d, want %d", res.LostCommits, c.lost)
			}
		})
	}
}

// A Lance refusal proves nothing about the group (another transaction's
// final manifest may be in the way): it neither constrains the model nor
// bounds an earlier attempt. Delta and Iceberg refusals do both.
func TestTransactionRefusals(t *testing.T) {
	ops := cat(tloads(0, "g", 0, "", 0),
		h{tcommit(0, "g", 1, "a1", "", 4, 5, OutcomeFail, 409, PartLance)}, // on the current base: fine
		tloads(0, "g", 0, "", 6))
	if res := Check(append(ops, tfinals("g")...), 10*time.Second); !res.OK() {
		t.Fatalf("a Lance refusal on the current base flagged: %+v", res.Violations)
	}
	bounds := settledBy(h{
		tcommit(0, "g", 1, "a1", "", 10, 11, OutcomeUnknown, 0, ""),
		tcommit(0, "g", 1, "a1", "", 12, 13, OutcomeFail, 409, PartLance),
		tcommit(1, "g", 1, "b1", "", 10, 11, OutcomeUnknown, 0, ""),
		tcommit(1, "g", 1, "b1", "", 12, 14, OutcomeFail, 409, PartDelta),
		tcommit(2, "g", 1, "c1", "", 10, 11, OutcomeUnknown, 0, ""),
		tload(3, "g", PartIceberg, 0, "", 12, 13), // still at version 0: no bound
		tload(3, "g", PartLance, 1, "b1", 14, 15), // any table of the group at version 1 bounds it
	})
	if bounds[0] != 15 || bounds[2] != 14 || bounds[4] != 15 {
		t.Fatalf("bounds %v: want the Lance refusal to bound nothing (15, from the load), the Delta one to bound (14)", bounds)
	}
	if bounds[1] != math.MaxInt64 {
		t.Fatalf("a definite answer got bound %d", bounds[1])
	}
}

// A history of many transactions of unknown outcome, each found out by
// loading the group, is decided quickly; the bounds keep violations
// visible.
func TestManyUnknownTransactionsAreDecided(t *testing.T) {
	var ops h
	at, head := int64(0), ""
	var txs []string
	for v := int64(1); v <= 40; v++ {
		c, id := int(v%2), "t"+string(rune('a'+v%26))+strings.Repeat("x", int(v/26))
		ops = append(ops, tcommit(c, "g", v, id, head, at, at+2, OutcomeUnknown, 0, ""),
			tcommit(1-c, "g", v, "lost"+id, head, at+1, at+3, OutcomeUnknown, 0, ""))
		ops = append(ops, tloads(c, "g", v, id, at+4)...)
		at, head, txs = at+10, id, append(txs, id)
	}
	res := Check(append(ops, tfinals("g", txs...)...), 20*time.Second)
	if !res.OK() || res.Transactions.UnknownApplied != 40 || res.Transactions.UnknownAbsent != 40 {
		t.Fatalf("history flagged: %+v %+v", res.Violations, res.Transactions)
	}
	bad := append(ops, tload(0, "g", PartDelta, 39, txs[38], at+1, at+2))
	if res := Check(append(bad, tfinals("g", txs...)...), 20*time.Second); res.LinearizabilityOK != "illegal" {
		t.Fatalf("a Delta load going back a version: linearizability %q, want illegal", res.LinearizabilityOK)
	}
}

func TestTransactionsHistoryRoundTrip(t *testing.T) {
	ops := healthy()
	ops[len(ops)-1].BadManifests = map[int64]string{1: "no manifest"}
	var buf bytes.Buffer
	if err := WriteHistory(&buf, ops); err != nil {
		t.Fatal(err)
	}
	back, err := ReadHistory(&buf)
	if err != nil || len(back) != len(ops) || back[0].Part != PartDelta || back[len(back)-1].BadManifests[1] != "no manifest" {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	for _, bad := range []string{
		`{"op":"load","table":"g","outcome":"ok","protocol":"transactions"}`,            // a load of no table of the group
		`{"op":"load","table":"g","outcome":"ok","protocol":"transactions","part":"x"}`, // of no known table
		`{"op":"load","table":"g","outcome":"ok","part":"delta"}`,                       // a part outside a group
	} {
		if _, err := ReadHistory(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// The refusal's operation is read from UC REST's error envelope, as the
// transactions route answers it.
func TestFailedPart(t *testing.T) {
	for raw, want := range map[string]string{
		`{"error_code":"ABORTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"ABORTED","metadata":{"operation_index":"2","operation":"lance"}}]}`: PartLance,
		`{"details":[{"metadata":{"operation_index":"1"}}]}`:             PartIceberg,
		`{"details":[{"@type":"x"},{"metadata":{"operation":"delta"}}]}`: PartDelta,
		`{"error_code":"INVALID_ARGUMENT"}`:                              "",
		`null`:                                                           "",
	} {
		var body map[string]any
		_ = json.Unmarshal([]byte(raw), &body)
		if got := failedPart(body); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
	if txOfDeltaFile(deltaTxFile(7, "3000000012")) != "3000000012" || txOfDeltaFile("00000000000000000007.c1-2.json") != "00000000000000000007.c1-2.json" {
		t.Fatal("Delta commit files do not name their transaction")
	}
}

// A transaction body holds the three operations in the order failedPart
// maps indexes to, each advancing its table to version v.
func TestTransactionBody(t *testing.T) {
	g := &txGroup{name: "g", delta: "g_delta", uuid: "u", iceberg: "g_iceberg", lance: "g_lance", catalog: "unity"}
	b := g.txBody(txHead{version: 4, tx: "1000000004", ice: icebergHead{seq: 4, id: 1000000004, location: "file:///w/i"}}, 5, 2000000001,
		"file:///w/l/_versions/x.manifest-tx2000000001")
	raw, _ := json.Marshal(b)
	var got struct {
		Operations []map[string]map[string]any `json:"operations"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got.Operations) != 3 {
		t.Fatalf("%s: %v", raw, err)
	}
	d, i, l := got.Operations[0][PartDelta], got.Operations[1][PartIceberg], got.Operations[2][PartLance]
	s := string(raw)
	if d["name"] != "g_delta" || i["name"] != "g_iceberg" || l == nil || i["identifier"] != nil ||
		!strings.Contains(s, `"version":5`) || !strings.Contains(s, `"sequence-number":5`) || !strings.Contains(s, `"snapshot-id":1000000004`) ||
		!strings.Contains(s, deltaTxFile(5, "2000000001")) || !strings.Contains(s, `"chaos_tx":"2000000001"`) {
		t.Fatalf("transaction body: %s", raw)
	}
}

// The final load reads every Lance version's manifest: a missing one, or
// one holding what another transaction staged, is reported.
func TestBadManifests(t *testing.T) {
	dir := t.TempDir()
	g := &txGroup{lanceLoc: "file://" + dir + "/l", objects: storage.NewBlobs(storage.BlobOptions{})}
	write := func(v int64, data string) string {
		loc := fmt.Sprintf("%s/_versions/%020d.manifest", g.lanceLoc, ^uint64(0)-uint64(v))
		if err := g.objects.Write(context.Background(), loc, []byte(data)); err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(loc, "file:///")
	}
	versions := []lanceVersion{
		{Version: 1, ManifestPath: write(1, stagedManifest("a")), Metadata: map[string]string{lanceTxKey: "a"}},
		{Version: 2, ManifestPath: write(2, stagedManifest("x")), Metadata: map[string]string{lanceTxKey: "b"}},
		{Version: 3, ManifestPath: strings.TrimPrefix(dir, "/") + "/l/_versions/none.manifest", Metadata: map[string]string{lanceTxKey: "c"}},
		{Version: 4, ManifestPath: write(4, "junk"), Metadata: map[string]string{lanceTxKey: "d"}},
	}
	got := g.badManifests(versions)
	want := map[int64]string{2: "the manifest staged by transaction x", 3: "no manifest", 4: "a manifest of 4 bytes no transaction staged"}
	if !maps.Equal(got, want) {
		t.Fatalf("bad manifests %v, want %v", got, want)
	}
	if g.badManifests(versions[:1]) != nil {
		t.Fatal("a good manifest reported")
	}
}

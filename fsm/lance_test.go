package fsm_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

var lanceNS = []string{"unity", "default"}

func (e *env) declareLance(ns []string, name string) *fsm.Table {
	e.t.Helper()
	st := e.st()
	st.Rules = fsm.CurrentRules
	return e.changed(&fsm.DeclareLanceTable{Stamp: st, ID: e.newID("lance"), Namespace: ns, Name: name,
		TableType: fsm.TableExternal, Location: "s3://lake/" + name + ".lance"}).Table
}

func manifestOf(name string, v int64) string {
	return fmt.Sprintf("s3://lake/%s.lance/_versions/%d.manifest", name, v)
}

func (e *env) lanceVersion(tb *fsm.Table, v int64) *fsm.CreateLanceVersion {
	return &fsm.CreateLanceVersion{Stamp: e.st(), Namespace: tb.NamespacePath(), Name: tb.Name, TableID: tb.ID,
		Version: fsm.LanceVersion{Version: v, ManifestPath: manifestOf(tb.Name, v), ManifestSize: 100 + v,
			Source: manifestOf(tb.Name, v) + "-staging"}}
}

func lanceVersionsOf(st *fsm.State, tb *fsm.Table, desc bool) []int64 {
	out := []int64{}
	for _, v := range st.LanceVersions(tb, -1, desc, 0) {
		out = append(out, v.Version)
	}
	return out
}

func TestLanceVersions(t *testing.T) {
	e := newEnv(t)
	tb := e.declareLance(lanceNS, "emb")
	if tb.Format != fsm.FormatLance || !tb.Lance.OnlyDeclared {
		t.Fatalf("declared table = %+v", tb)
	}
	for v := int64(1); v <= 4; v++ {
		res := e.changed(e.lanceVersion(tb, v))
		if res.Lance.Version.Version != v || res.Lance.Version.TimestampMillis == 0 || res.Table.Lance.OnlyDeclared {
			t.Fatalf("version %d: %+v %+v", v, res.Lance.Version, res.Table.Lance)
		}
	}
	replay := e.lanceVersion(tb, 2)
	if res := e.noop(replay); res.Lance.Version.ManifestSize != 102 {
		t.Fatalf("replay answered %+v", res.Lance.Version)
	}
	other := e.lanceVersion(tb, 2)
	other.Version.Source += "-other"
	e.fail(other, fsm.CodeCommitVersionConflict, "already exists")

	st := e.m.State()
	cur, _ := st.TableIn(lanceNS, "emb")
	if got := lanceVersionsOf(st, cur, true); !slices.Equal(got, []int64{4, 3, 2, 1}) {
		t.Fatalf("descending = %v", got)
	}
	if got := st.LanceVersions(cur, 3, true, 1); len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("page after 3 = %+v", got)
	}
	if got := st.LanceVersions(cur, 2, false, 0); len(got) != 2 || got[0].Version != 3 {
		t.Fatalf("ascending after 2 = %+v", got)
	}

	res := e.changed(&fsm.DeleteLanceVersions{Stamp: e.st(), Namespace: lanceNS, Name: "emb",
		Ranges: []fsm.VersionRange{{Start: 3, End: -1}}})
	if res.Lance.Deleted != 2 || res.Table.Lance.Count != 2 || res.Table.Lance.Latest != 2 {
		t.Fatalf("delete = %+v, state %+v", res.Lance, res.Table.Lance)
	}
	restored := roundTrip(t, e.m.State())
	cur, _ = restored.TableIn(lanceNS, "emb")
	if got := lanceVersionsOf(restored, cur, false); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("restored versions = %v", got)
	}

	e.changed(&fsm.DropLanceTable{Stamp: e.st(), Namespace: lanceNS, Name: "emb"})
	if got := lanceVersionsOf(e.m.State(), cur, false); len(got) != 0 {
		t.Fatalf("a dropped table's versions stayed: %v", got)
	}
	again := e.declareLance(lanceNS, "emb")
	e.fail(e.lanceVersion(tb, 5), fsm.CodeRequirementConflict, "replaced")
	e.changed(e.lanceVersion(again, 1))
}

func TestTransactionIsAllOrNothing(t *testing.T) {
	e := newEnv(t)
	a := e.declareLance(lanceNS, "a")
	b := e.declareLance(lanceNS, "b")
	e.changed(e.lanceVersion(b, 1))

	tr, err := fsm.NewTransaction(e.st(), e.lanceVersion(a, 1), e.lanceVersion(a, 2), e.lanceVersion(b, 1))
	if err != nil {
		t.Fatal(err)
	}
	tr.Ops[2].Command = []byte(`{"namespace":["unity","default"],"name":"b","table_id":"` + b.ID +
		`","version":{"version":1,"manifest_path":"s3://lake/b.lance/_versions/1.manifest","manifest_size":1,"source":"elsewhere"}}`)
	before := e.m.State()
	res := e.apply(tr)
	if res.Err == nil || res.Err.Code != fsm.CodeCommitVersionConflict || len(res.Steps) != 3 || e.m.State() != before {
		t.Fatalf("failing transaction: err %v, %d steps, state moved %v", res.Err, len(res.Steps), e.m.State() != before)
	}

	// A later command sees what an earlier one did: drop, declare again,
	// then commit to the new table, all in one entry.
	st := e.st()
	st.Rules = fsm.CurrentRules
	fresh := &fsm.DeclareLanceTable{Stamp: st, ID: "fresh-id", Namespace: lanceNS, Name: "b", TableType: fsm.TableExternal,
		Location: "s3://lake/b2.lance"}
	v1 := &fsm.CreateLanceVersion{Stamp: e.st(), Namespace: lanceNS, Name: "b", TableID: "fresh-id",
		Version: fsm.LanceVersion{Version: 1, ManifestPath: "s3://lake/b2.lance/_versions/1.manifest"}}
	tr, _ = fsm.NewTransaction(st, &fsm.DropLanceTable{Stamp: e.st(), Namespace: lanceNS, Name: "b"}, fresh, v1)
	res = e.changed(tr)
	if len(res.Steps) != 3 || res.Steps[2].Table.ID != "fresh-id" || res.Steps[2].Table.Lance.Count != 1 {
		t.Fatalf("steps = %+v", res.Steps)
	}

	nested, _ := fsm.NewTransaction(e.st(), e.lanceVersion(a, 1))
	if _, err := fsm.NewTransaction(e.st(), nested); err == nil {
		t.Fatal("a transaction nested in another was built")
	}
	raw := &fsm.Transaction{Stamp: e.st(), Ops: []fsm.TransactionOp{{Type: fsm.CmdCreateCatalog, Command: []byte(`{}`)}}}
	e.fail(raw, fsm.CodeInvalid, "cannot be part of a transaction")
	e.fail(&fsm.Transaction{Stamp: e.st()}, fsm.CodeInvalid, "at least one")
}

package fsm_test

import (
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// external is an EXTERNAL create at loc under the given rules.
func (e *env) external(name, loc string, rules uint16) *fsm.CreateTable {
	c := e.externalCreate("unity", "default", name)
	c.Location, c.Rules = loc, rules
	return c
}

func TestTableLocationsMayNotOverlap(t *testing.T) {
	e := newEnv(t)
	e.ok(e.external("t1", "s3://lake/t1", fsm.CurrentRules))
	for _, tc := range []struct{ name, loc string }{
		{"same", "s3://lake/t1"},
		{"same with a trailing slash", "s3://lake/t1/"},
		{"same through s3a", "s3a://lake/t1"},
		{"inside", "s3://lake/t1/part"},
		{"above", "s3://lake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.fail(e.external("o_"+tc.name[:4], tc.loc, fsm.CurrentRules), fsm.CodeInvalid, "LOCATION_OVERLAP")
		})
	}
	e.t = t
	e.ok(e.external("t10", "s3://lake/t10", fsm.CurrentRules)) // a sibling sharing a name prefix
	e.ok(e.external("other", "gs://lake/t1", fsm.CurrentRules))
}

// Entries proposed before the rule existed keep applying as they did.
func TestOverlapRuleAppliesOnlyToEntriesThatCarryIt(t *testing.T) {
	e := newEnv(t)
	e.ok(e.external("t1", "s3://lake/t1", fsm.RulesOriginal))
	e.ok(e.external("t2", "s3://lake/t1", fsm.RulesOriginal))
	e.fail(e.external("t3", "s3://lake/t1/x", fsm.CurrentRules), fsm.CodeInvalid, "LOCATION_OVERLAP")
}

func TestDeletedTablesFreeTheirLocation(t *testing.T) {
	e := newEnv(t)
	e.ok(e.external("t1", "s3://lake/t1", fsm.CurrentRules))
	e.ok(&fsm.DeleteTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "t1"})
	e.ok(e.external("t1b", "s3://lake/t1", fsm.CurrentRules))

	e.createSchema("unity", "gone", "")
	c := e.externalCreate("unity", "gone", "t")
	c.Location, c.Rules = "s3://lake/gone", fsm.CurrentRules
	e.ok(c)
	e.ok(&fsm.DeleteSchema{Stamp: e.st(), CatalogName: "unity", Name: "gone", Force: true})
	e.ok(e.external("again", "s3://lake/gone", fsm.CurrentRules))
}

func TestStorageRootsAndManagedStorageDoNotOverlapTables(t *testing.T) {
	e := newEnv(t)
	e.ok(e.external("t1", "s3://lake/t1", fsm.CurrentRules))
	cat := &fsm.CreateCatalog{Stamp: e.st(), ID: e.newID("cat"), Name: "inside", StorageRoot: "s3://lake/t1/cat"}
	cat.Rules = fsm.CurrentRules
	e.fail(cat, fsm.CodeInvalid, "LOCATION_OVERLAP")
	sch := &fsm.CreateSchema{Stamp: e.st(), ID: e.newID("sch"), CatalogName: "unity", Name: "inside", StorageRoot: "s3://lake/t1"}
	sch.Rules = fsm.CurrentRules
	e.fail(sch, fsm.CodeInvalid, "LOCATION_OVERLAP")

	e.createCatalog("rooted", "s3://croot")
	e.fail(e.external("atroot", "s3://croot", fsm.CurrentRules), fsm.CodeInvalid, "managed storage")
	e.ok(e.external("beside", "s3://croot/ext/t", fsm.CurrentRules))
}

// The location index is derived: a restored state refuses what the state
// it was taken from refuses.
func TestRestoredStateKeepsRefusingOverlaps(t *testing.T) {
	e := newEnv(t)
	e.ok(e.external("t1", "s3://lake/t1", fsm.CurrentRules))
	restored := fsm.NewMachine()
	restored.Replace(roundTrip(t, e.m.State()))
	e.m = restored
	e.fail(e.external("t2", "s3://lake/t1/x", fsm.CurrentRules), fsm.CodeInvalid, "LOCATION_OVERLAP")
}

// roundTrip writes a state as its records and builds it again.
func roundTrip(t *testing.T, st *fsm.State) *fsm.State {
	t.Helper()
	b := fsm.NewBuilder()
	if err := st.WriteRecords(func(kind byte, payload []byte) error { return b.Add(kind, payload) }); err != nil {
		t.Fatal(err)
	}
	return b.State()
}

// An entry proposed under rules this build does not know is not applied
// by older rules: the machine refuses it, and the node halts.
func TestUnknownRulesLevelIsNotApplied(t *testing.T) {
	e := newEnv(t)
	c := e.external("future", "s3://lake/future", fsm.CurrentRules+1)
	b, err := fsm.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	before := e.m.State()
	if _, err := e.m.Apply(e.next, b); err == nil {
		t.Fatal("an entry of an unknown rules level applied")
	}
	if e.m.State() != before {
		t.Fatal("the refused entry changed the state")
	}
}

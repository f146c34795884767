package fsm_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

var nestedNS = []string{"unity", "default", "ice"}

// icebergEnv is an env with a nested namespace unity.default.ice.
func icebergEnv(t *testing.T) *env {
	e := newEnv(t)
	e.createNamespace(nestedNS...)
	return e
}

func metadataFile(name string, v int) string {
	return fmt.Sprintf("s3://lake/%s/metadata/%05d-%s.metadata.json", name, v, name)
}

func (e *env) icebergCreate(ns []string, name string) *fsm.CreateIcebergTable {
	st := e.st()
	st.Rules = fsm.CurrentRules
	return &fsm.CreateIcebergTable{Stamp: st, ID: e.newID("ice"), Namespace: ns, Name: name,
		Location: "s3://lake/" + name, MetadataLocation: metadataFile(name, 0),
		Properties: map[string]string{"format-version": "2"}}
}

func (e *env) createIceberg(ns []string, name string) *fsm.Table {
	e.t.Helper()
	return e.changed(e.icebergCreate(ns, name)).Table
}

func (e *env) icebergTable(ns []string, name string) *fsm.Table {
	e.t.Helper()
	tb, ok := e.m.State().TableIn(ns, name)
	if !ok {
		e.t.Fatalf("table %v %s not found", ns, name)
	}
	return tb
}

// swap is a one-table commit entry from version `from` to from+1.
func swap(ns []string, name string, from int) fsm.IcebergCommit {
	return fsm.IcebergCommit{Namespace: ns, Name: name,
		BaseMetadataLocation: metadataFile(name, from), MetadataLocation: metadataFile(name, from+1)}
}

func (e *env) commitIceberg(entries ...fsm.IcebergCommit) *fsm.CommitIcebergTables {
	return &fsm.CommitIcebergTables{Stamp: e.st(), Tables: entries}
}

func TestCreateIcebergTable(t *testing.T) {
	e := icebergEnv(t)
	tb := e.createIceberg(nestedNS, "events")
	if tb.Format != fsm.FormatIceberg || tb.Type != fsm.TableManaged || tb.Iceberg == nil ||
		tb.Iceberg.MetadataLocation != metadataFile("events", 0) || tb.Iceberg.MetadataVersion != 0 {
		t.Fatalf("created table: %+v %+v", tb, tb.Iceberg)
	}
	if !slices.Equal(tb.NamespacePath(), nestedNS) || tb.FullName() != "unity.default.ice.events" {
		t.Fatalf("namespace %v, full name %s", tb.NamespacePath(), tb.FullName())
	}
	if got := e.icebergTable(nestedNS, "events"); got != tb {
		t.Fatalf("TableIn returned %+v", got)
	}
	flat := e.createIceberg([]string{"unity", "default"}, "flat")
	if got := e.table("unity", "default", "flat"); got != flat {
		t.Fatalf("a schema-level Iceberg table is not found by its three-part name")
	}
	e.createExternal("unity", "default", "delta")

	overlap := e.icebergCreate(nestedNS, "inside")
	overlap.Location = "s3://lake/events/inside"
	old := e.icebergCreate(nestedNS, "old_rules")
	old.Location, old.Rules = "s3://lake/events/old", fsm.RulesOriginal
	for _, tc := range []struct {
		name string
		cmd  *fsm.CreateIcebergTable
		code fsm.Code
		msg  string
	}{
		{"name taken by an Iceberg table", e.icebergCreate(nestedNS, "events"), fsm.CodeTableExists, "already exists"},
		{"name taken by a Delta table", e.icebergCreate([]string{"unity", "default"}, "delta"), fsm.CodeTableExists, "already exists"},
		{"missing namespace", e.icebergCreate([]string{"unity", "default", "nope"}, "x"), fsm.CodeSchemaNotFound, "nope"},
		{"missing schema", e.icebergCreate([]string{"unity", "nope"}, "x"), fsm.CodeSchemaNotFound, "nope"},
		{"missing catalog", e.icebergCreate([]string{"nope", "default"}, "x"), fsm.CodeCatalogNotFound, "nope"},
		{"catalog-level namespace", e.icebergCreate([]string{"unity"}, "x"), fsm.CodeInvalid, "namespace path"},
		{"overlapping location", overlap, fsm.CodeInvalid, "LOCATION_OVERLAP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.fail(tc.cmd, tc.code, tc.msg)
		})
	}
	e.t = t
	e.ok(old) // entries proposed before the overlap rule keep applying as they did
}

func TestIcebergCommitIsACompareAndSwap(t *testing.T) {
	e := icebergEnv(t)
	created := e.createIceberg(nestedNS, "events")
	first := e.commitIceberg(swap(nestedNS, "events", 0))
	second := e.commitIceberg(fsm.IcebergCommit{Namespace: nestedNS, Name: "events",
		BaseMetadataLocation: metadataFile("events", 0), MetadataLocation: "s3://lake/events/metadata/00001-other.metadata.json"})
	props := map[string]string{"format-version": "2", "owner": "bob"}
	first.Tables[0].Properties = &props

	res := e.changed(first)
	tb := res.Table
	if len(res.Tables) != 1 || res.Tables[0] != tb {
		t.Fatalf("result tables %v, table %v", res.Tables, tb)
	}
	if tb.Iceberg.MetadataLocation != metadataFile("events", 1) || tb.Iceberg.PreviousMetadataLocation != metadataFile("events", 0) ||
		tb.Iceberg.MetadataVersion != 1 || tb.Properties["owner"] != "bob" || tb.ETag() == created.ETag() {
		t.Fatalf("after commit: %+v %+v", tb, tb.Iceberg)
	}
	if created.Iceberg.MetadataLocation != metadataFile("events", 0) {
		t.Fatalf("the commit wrote through the stored table: %+v", created.Iceberg)
	}
	e.fail(second, fsm.CodeRequirementConflict, "not current")
	if got := e.icebergTable(nestedNS, "events"); got != tb {
		t.Fatalf("the losing commit changed the table: %+v", got.Iceberg)
	}
	e.noop(first) // the winner retried: a replay
	e.changed(e.commitIceberg(swap(nestedNS, "events", 1)))
	e.fail(first, fsm.CodeRequirementConflict, "not current") // no longer a replay
}

func TestIcebergMultiTableCommitIsAllOrNothing(t *testing.T) {
	e := icebergEnv(t)
	for _, n := range []string{"a", "b", "c"} {
		e.createIceberg(nestedNS, n)
	}
	e.createExternal("unity", "default", "delta")
	moved := swap(nestedNS, "b", 0)
	moved.Location = "s3://lake/b2"
	stale := swap(nestedNS, "c", 5)
	for _, tc := range []struct {
		name string
		last fsm.IcebergCommit
		code fsm.Code
		msg  string
	}{
		{"stale base", stale, fsm.CodeRequirementConflict, "not current"},
		{"missing table", swap(nestedNS, "zzz", 0), fsm.CodeTableNotFound, "unity.default.ice.zzz"},
		{"missing namespace", swap([]string{"unity", "default", "nope"}, "c", 0), fsm.CodeSchemaNotFound, "nope"},
		{"Delta table", swap([]string{"unity", "default"}, "delta", 0), fsm.CodeUnsupportedFormat, "not an Iceberg"},
		{"same table twice", swap(nestedNS, "a", 0), fsm.CodeInvalid, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			before := e.m.State()
			e.fail(e.commitIceberg(swap(nestedNS, "a", 0), moved, tc.last), tc.code, tc.msg)
			for _, n := range []string{"a", "b", "c"} {
				want, _ := before.TableIn(nestedNS, n)
				if got := e.icebergTable(nestedNS, n); got != want {
					t.Fatalf("table %s changed by a failed commit", n)
				}
			}
			e.ok(e.icebergCreate(nestedNS, "b2")) // b's move was undone: its new location is free
			e.m.Replace(before)
		})
	}
	e.t = t
	res := e.changed(e.commitIceberg(swap(nestedNS, "a", 0), moved, swap(nestedNS, "c", 0)))
	if len(res.Tables) != 3 || res.Table != nil || res.Tables[1].Location != "s3://lake/b2" {
		t.Fatalf("result: %+v", res)
	}
	for _, n := range []string{"a", "b", "c"} {
		if v := e.icebergTable(nestedNS, n).Iceberg.MetadataVersion; v != 1 {
			t.Fatalf("table %s at version %d", n, v)
		}
	}
	e.fail(e.icebergCreate(nestedNS, "b2"), fsm.CodeInvalid, "LOCATION_OVERLAP") // b is there now
	freed := e.icebergCreate(nestedNS, "b3")
	freed.Location = "s3://lake/b"
	e.ok(freed) // and its old location is free
}

func TestDropAndRenameIcebergTablesKeepLocationsIndexed(t *testing.T) {
	e := icebergEnv(t)
	e.createNamespace("unity", "default", "other")
	e.createIceberg(nestedNS, "events")
	e.createExternal("unity", "default", "delta")
	other := []string{"unity", "default", "other"}

	rename := &fsm.RenameIcebergTable{Stamp: e.st(), Namespace: nestedNS, Name: "events", NewNamespace: other, NewName: "renamed"}
	tb := e.changed(rename).Table
	if !slices.Equal(tb.NamespacePath(), other) || tb.Name != "renamed" {
		t.Fatalf("renamed: %v %s", tb.NamespacePath(), tb.Name)
	}
	if _, ok := e.m.State().TableIn(nestedNS, "events"); ok {
		t.Fatal("the old name still resolves")
	}
	e.noop(&fsm.RenameIcebergTable{Stamp: e.st(), Namespace: other, Name: "renamed", NewNamespace: other, NewName: "renamed"})
	e.fail(e.icebergCreate(nestedNS, "events"), fsm.CodeInvalid, "LOCATION_OVERLAP") // the location moved along
	for _, tc := range []struct {
		name string
		cmd  fsm.Command
		code fsm.Code
		msg  string
	}{
		{"rename onto a Delta table", &fsm.RenameIcebergTable{Stamp: e.st(), Namespace: other, Name: "renamed",
			NewNamespace: []string{"unity", "default"}, NewName: "delta"}, fsm.CodeTableExists, "already exists"},
		{"rename across catalogs", &fsm.RenameIcebergTable{Stamp: e.st(), Namespace: other, Name: "renamed",
			NewNamespace: []string{"cat2", "default"}, NewName: "x"}, fsm.CodeInvalid, "across catalogs"},
		{"rename into a missing namespace", &fsm.RenameIcebergTable{Stamp: e.st(), Namespace: other, Name: "renamed",
			NewNamespace: []string{"unity", "default", "nope"}, NewName: "x"}, fsm.CodeSchemaNotFound, "nope"},
		{"rename a Delta table", &fsm.RenameIcebergTable{Stamp: e.st(), Namespace: []string{"unity", "default"}, Name: "delta",
			NewNamespace: other, NewName: "x"}, fsm.CodeUnsupportedFormat, "not an Iceberg"},
		{"drop a Delta table", &fsm.DropIcebergTable{Stamp: e.st(), Namespace: []string{"unity", "default"}, Name: "delta"},
			fsm.CodeUnsupportedFormat, "not an Iceberg"},
		{"drop a missing table", &fsm.DropIcebergTable{Stamp: e.st(), Namespace: nestedNS, Name: "events"},
			fsm.CodeTableNotFound, "events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.fail(tc.cmd, tc.code, tc.msg)
		})
	}
	e.t = t
	dropped := e.changed(&fsm.DropIcebergTable{Stamp: e.st(), Namespace: other, Name: "renamed"}).Table
	if dropped.Name != "renamed" {
		t.Fatalf("dropped %+v", dropped)
	}
	if got := e.m.State().TablesIn(other, "", 0); len(got) != 0 {
		t.Fatalf("tables left: %v", tableNames(got))
	}
	e.ok(e.icebergCreate(nestedNS, "events")) // the dropped table freed its location
}

func TestUpdateNamespaceProperties(t *testing.T) {
	e := icebergEnv(t) // unity.default.ice has {"level": "ice"}
	for _, tc := range []struct {
		name string
		path []string
		set  map[string]string
		del  []string
		want fsm.PropertyChanges
		then map[string]string
	}{
		{"nested", nestedNS, map[string]string{"b": "2", "a": "1"}, []string{"level", "gone", "gone"},
			fsm.PropertyChanges{Updated: []string{"a", "b"}, Removed: []string{"level"}, Missing: []string{"gone"}},
			map[string]string{"a": "1", "b": "2"}},
		{"nested, overwrite and remove all", nestedNS, map[string]string{"a": "9"}, []string{"b"},
			fsm.PropertyChanges{Updated: []string{"a"}, Removed: []string{"b"}, Missing: []string{}},
			map[string]string{"a": "9"}},
		{"schema", []string{"unity", "default"}, map[string]string{"k": "v"}, []string{"x"},
			fsm.PropertyChanges{Updated: []string{"k"}, Removed: []string{}, Missing: []string{"x"}},
			map[string]string{"k": "v"}},
		{"catalog", []string{"unity"}, nil, []string{"x"},
			fsm.PropertyChanges{Updated: []string{}, Removed: []string{}, Missing: []string{"x"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			res := e.changed(&fsm.UpdateNamespaceProperties{Stamp: e.st(), Path: tc.path, Updates: tc.set, Removals: tc.del})
			if jsonOf(t, res.Properties) != jsonOf(t, tc.want) {
				t.Fatalf("changes %s, want %s", jsonOf(t, res.Properties), jsonOf(t, tc.want))
			}
			ns, _ := e.m.State().Namespace(tc.path)
			if jsonOf(t, ns.Properties) != jsonOf(t, tc.then) || jsonOf(t, res.Namespace.Properties) != jsonOf(t, tc.then) {
				t.Fatalf("properties %v, result %v, want %v", ns.Properties, res.Namespace.Properties, tc.then)
			}
		})
	}
	e.t = t
	e.fail(&fsm.UpdateNamespaceProperties{Stamp: e.st(), Path: nestedNS, Updates: map[string]string{"a": "1"}, Removals: []string{"a"}},
		fsm.CodeInvalid, "both set and removed")
	e.fail(&fsm.UpdateNamespaceProperties{Stamp: e.st(), Path: []string{"unity", "default", "nope"}}, fsm.CodeSchemaNotFound, "nope")
	e.fail(&fsm.UpdateNamespaceProperties{Stamp: e.st(), Path: []string{"nope"}}, fsm.CodeCatalogNotFound, "nope")
}

func TestIcebergStateRoundTripsThroughRecords(t *testing.T) {
	e := icebergEnv(t)
	e.createIceberg(nestedNS, "events")
	e.changed(e.commitIceberg(swap(nestedNS, "events", 0)))
	e.createExternal("unity", "default", "delta")
	st := roundTrip(t, e.m.State())
	got, ok := st.TableIn(nestedNS, "events")
	want := e.icebergTable(nestedNS, "events")
	if !ok || jsonOf(t, got) != jsonOf(t, want) || got.ETag() != want.ETag() {
		t.Fatalf("restored %s, want %s", jsonOf(t, got), jsonOf(t, want))
	}
	if d, _ := st.Table("unity", "default", "delta"); d == nil || d.Iceberg != nil {
		t.Fatalf("a Delta table restored with Iceberg state: %+v", d)
	}
	e.m.Replace(st) // the restored state swaps from the same base, and indexes the location
	e.changed(e.commitIceberg(swap(nestedNS, "events", 1)))
	inside := e.icebergCreate(nestedNS, "inside")
	inside.Location = "s3://lake/events/inside"
	e.fail(inside, fsm.CodeInvalid, "LOCATION_OVERLAP")
}

// Renaming and deleting the namespaces above an Iceberg table carry its
// metadata pointer along and keep its location indexed.
func TestIcebergTablesMoveAndGoWithTheirNamespaces(t *testing.T) {
	e := icebergEnv(t)
	e.createIceberg(nestedNS, "events")
	e.changed(e.commitIceberg(swap(nestedNS, "events", 0)))
	e.changed(&fsm.UpdateSchema{Stamp: e.st(), CatalogName: "unity", Name: "default", NewName: "prod"})
	moved := []string{"unity", "prod", "ice"}
	tb := e.icebergTable(moved, "events")
	if tb.Iceberg.MetadataLocation != metadataFile("events", 1) || tb.Iceberg.MetadataVersion != 1 {
		t.Fatalf("moved table: %+v", tb.Iceberg)
	}
	e.changed(e.commitIceberg(swap(moved, "events", 1)))
	overlap := e.icebergCreate(moved, "again")
	overlap.Location = "s3://lake/events"
	e.fail(overlap, fsm.CodeInvalid, "LOCATION_OVERLAP")
	e.ok(&fsm.DeleteNamespace{Stamp: e.st(), Path: moved, Force: true})
	e.ok(e.icebergCreate([]string{"unity", "prod"}, "events")) // its location is free again
}

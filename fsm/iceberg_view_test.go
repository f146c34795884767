package fsm_test

import (
	"slices"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

func viewFile(name string, v int) string { return metadataFile("views/"+name, v) }

func (e *env) viewCreate(ns []string, name string) *fsm.CreateIcebergView {
	return &fsm.CreateIcebergView{Stamp: e.st(), ID: e.newID("view"), Namespace: ns, Name: name,
		MetadataLocation: viewFile(name, 0), Properties: map[string]string{"comment": "a view"}}
}

func (e *env) createView(ns []string, name string) *fsm.Table {
	e.t.Helper()
	return e.changed(e.viewCreate(ns, name)).Table
}

// replaceView is a view replace from version `from` to from+1.
func (e *env) replaceView(ns []string, name string, from int) *fsm.ReplaceIcebergView {
	return &fsm.ReplaceIcebergView{Stamp: e.st(), Namespace: ns, Name: name,
		BaseMetadataLocation: viewFile(name, from), MetadataLocation: viewFile(name, from+1)}
}

func TestCreateIcebergView(t *testing.T) {
	e := icebergEnv(t)
	v := e.createView(nestedNS, "recent")
	if !v.IsView() || v.Type != fsm.TableView || v.Format != fsm.FormatIceberg || v.Location != "" ||
		v.Iceberg.MetadataLocation != viewFile("recent", 0) || v.Iceberg.MetadataVersion != 0 || v.Properties["comment"] != "a view" {
		t.Fatalf("created view: %+v %+v", v, v.Iceberg)
	}
	if got, ok := e.m.State().ViewIn(nestedNS, "recent"); !ok || got != v || v.FullName() != "unity.default.ice.recent" {
		t.Fatalf("ViewIn = %v %v", got, ok)
	}
	e.createIceberg(nestedNS, "events")
	e.createExternal("unity", "default", "delta")
	if _, ok := e.m.State().ViewIn(nestedNS, "events"); ok {
		t.Fatal("ViewIn found an Iceberg table")
	}
	bad := e.viewCreate(nestedNS, "x")
	bad.MetadataLocation = ""
	for _, tc := range []struct {
		name string
		cmd  fsm.Command
		code fsm.Code
		msg  string
	}{
		{"view over a view", e.viewCreate(nestedNS, "recent"), fsm.CodeTableExists, "View already exists"},
		{"view over an Iceberg table", e.viewCreate(nestedNS, "events"), fsm.CodeTableExists, "Table already exists"},
		{"view over a Delta table", e.viewCreate([]string{"unity", "default"}, "delta"), fsm.CodeTableExists, "Table already exists"},
		{"Iceberg table over a view", e.icebergCreate(nestedNS, "recent"), fsm.CodeTableExists, "View already exists"},
		{"missing namespace", e.viewCreate([]string{"unity", "default", "nope"}, "x"), fsm.CodeSchemaNotFound, "nope"},
		{"missing catalog", e.viewCreate([]string{"nope", "default"}, "x"), fsm.CodeCatalogNotFound, "nope"},
		{"catalog-level namespace", e.viewCreate([]string{"unity"}, "x"), fsm.CodeInvalid, "namespace path"},
		{"no metadata location", bad, fsm.CodeInvalid, "metadata location"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.fail(tc.cmd, tc.code, tc.msg)
		})
	}
}

// A Delta or UC table cannot take a schema-level view's name either.
func TestTablesCannotTakeAViewName(t *testing.T) {
	e := newEnv(t)
	e.createView([]string{"unity", "default"}, "v")
	e.fail(e.externalCreate("unity", "default", "v"), fsm.CodeTableExists, "already exists")
	e.fail(&fsm.CreateStagingTable{Stamp: e.st(), ID: e.newID("tbl"), CatalogName: "unity", SchemaName: "default", Name: "v"},
		fsm.CodeTableExists, "already exists")
}

// Views take no location: many share none, and deleting or moving them
// leaves the tables' locations indexed as they were.
func TestViewsTakeNoLocation(t *testing.T) {
	e := icebergEnv(t)
	e.createView(nestedNS, "a")
	e.createView(nestedNS, "b")
	e.createIceberg(nestedNS, "events")
	e.changed(&fsm.DropIcebergView{Stamp: e.st(), Namespace: nestedNS, Name: "a"})
	e.changed(&fsm.UpdateSchema{Stamp: e.st(), CatalogName: "unity", Name: "default", NewName: "prod"})
	moved := []string{"unity", "prod", "ice"}
	if v, ok := e.m.State().ViewIn(moved, "b"); !ok || v.Iceberg.MetadataLocation != viewFile("b", 0) {
		t.Fatalf("the view did not move with its schema: %v %v", v, ok)
	}
	overlap := e.icebergCreate(moved, "again")
	overlap.Location = "s3://lake/events/inside"
	e.fail(overlap, fsm.CodeInvalid, "LOCATION_OVERLAP") // the table is still indexed
	e.ok(&fsm.DeleteNamespace{Stamp: e.st(), Path: moved, Force: true})
	if _, ok := e.m.State().ViewIn(moved, "b"); ok {
		t.Fatal("the view outlived its namespace")
	}
	e.ok(e.icebergCreate([]string{"unity", "prod"}, "events")) // the table's location is free again
}

func TestReplaceIcebergViewIsACompareAndSwap(t *testing.T) {
	e := icebergEnv(t)
	created := e.createView(nestedNS, "recent")
	first := e.replaceView(nestedNS, "recent", 0)
	first.Properties = &map[string]string{"owner": "bob"}
	v := e.changed(first).Table
	if v.Iceberg.MetadataLocation != viewFile("recent", 1) || v.Iceberg.PreviousMetadataLocation != viewFile("recent", 0) ||
		v.Iceberg.MetadataVersion != 1 || v.Properties["owner"] != "bob" || v.Properties["comment"] != "" || v.ETag() == created.ETag() {
		t.Fatalf("after replace: %+v %+v", v, v.Iceberg)
	}
	if created.Iceberg.MetadataLocation != viewFile("recent", 0) {
		t.Fatal("the replace wrote through the stored view")
	}
	e.noop(first) // a replay
	rival := e.replaceView(nestedNS, "recent", 0)
	rival.MetadataLocation = viewFile("rival", 1)
	e.fail(rival, fsm.CodeRequirementConflict, "not current")
	same := e.replaceView(nestedNS, "recent", 1)
	same.MetadataLocation = same.BaseMetadataLocation
	e.fail(same, fsm.CodeInvalid, "distinct")
	v2 := e.changed(e.replaceView(nestedNS, "recent", 1)).Table
	if v2.Iceberg.MetadataVersion != 2 || v2.Properties["owner"] != "bob" {
		t.Fatalf("a replace without properties: %+v %v", v2.Iceberg, v2.Properties)
	}
}

// Table commands do not act on views, nor view commands on tables.
func TestViewAndTableCommandsKeepToTheirKind(t *testing.T) {
	e := icebergEnv(t)
	e.createView(nestedNS, "recent")
	e.createIceberg(nestedNS, "events")
	e.createExternal("unity", "default", "delta")
	schemaNS := []string{"unity", "default"}
	for _, tc := range []struct {
		name string
		cmd  fsm.Command
		code fsm.Code
		msg  string
	}{
		{"commit to a view", &fsm.CommitIcebergTables{Stamp: e.st(), Tables: []fsm.IcebergCommit{{Namespace: nestedNS, Name: "recent",
			BaseMetadataLocation: viewFile("recent", 0), MetadataLocation: viewFile("recent", 1)}}}, fsm.CodeTableNotFound, "is a view"},
		{"drop a view as a table", &fsm.DropIcebergTable{Stamp: e.st(), Namespace: nestedNS, Name: "recent"}, fsm.CodeTableNotFound, "is a view"},
		{"rename a view as a table", &fsm.RenameIcebergTable{Stamp: e.st(), Namespace: nestedNS, Name: "recent",
			NewNamespace: nestedNS, NewName: "x"}, fsm.CodeTableNotFound, "is a view"},
		{"replace a table", &fsm.ReplaceIcebergView{Stamp: e.st(), Namespace: nestedNS, Name: "events",
			BaseMetadataLocation: metadataFile("events", 0), MetadataLocation: metadataFile("events", 1)}, fsm.CodeTableNotFound, "is a table"},
		{"drop a table as a view", &fsm.DropIcebergView{Stamp: e.st(), Namespace: nestedNS, Name: "events"}, fsm.CodeTableNotFound, "is a table"},
		{"drop a Delta table as a view", &fsm.DropIcebergView{Stamp: e.st(), Namespace: schemaNS, Name: "delta"}, fsm.CodeTableNotFound, "is a table"},
		{"rename a table as a view", &fsm.RenameIcebergView{Stamp: e.st(), Namespace: nestedNS, Name: "events",
			NewNamespace: nestedNS, NewName: "x"}, fsm.CodeTableNotFound, "is a table"},
		{"drop a missing view", &fsm.DropIcebergView{Stamp: e.st(), Namespace: nestedNS, Name: "nope"}, fsm.CodeTableNotFound, "View not found"},
		{"replace in a missing namespace", &fsm.ReplaceIcebergView{Stamp: e.st(), Namespace: []string{"unity", "default", "nope"}, Name: "v",
			BaseMetadataLocation: "a", MetadataLocation: "b"}, fsm.CodeSchemaNotFound, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.fail(tc.cmd, tc.code, tc.msg)
		})
	}
}

func TestRenameAndDropIcebergViews(t *testing.T) {
	e := icebergEnv(t)
	e.createNamespace("unity", "default", "other")
	other := []string{"unity", "default", "other"}
	e.createView(nestedNS, "recent")
	e.createIceberg(other, "events")
	e.changed(e.replaceView(nestedNS, "recent", 0))

	v := e.changed(&fsm.RenameIcebergView{Stamp: e.st(), Namespace: nestedNS, Name: "recent", NewNamespace: other, NewName: "latest"}).Table
	if !slices.Equal(v.NamespacePath(), other) || v.Name != "latest" || !v.IsView() || v.Iceberg.MetadataLocation != viewFile("recent", 1) {
		t.Fatalf("renamed: %v %s %+v", v.NamespacePath(), v.Name, v.Iceberg)
	}
	if _, ok := e.m.State().TableIn(nestedNS, "recent"); ok {
		t.Fatal("the old name still resolves")
	}
	e.noop(&fsm.RenameIcebergView{Stamp: e.st(), Namespace: other, Name: "latest", NewNamespace: other, NewName: "latest"})
	e.createView(nestedNS, "second")
	for _, tc := range []struct {
		name string
		cmd  fsm.Command
		code fsm.Code
		msg  string
	}{
		{"onto a table", &fsm.RenameIcebergView{Stamp: e.st(), Namespace: other, Name: "latest", NewNamespace: other, NewName: "events"},
			fsm.CodeTableExists, "Table already exists"},
		{"onto a view", &fsm.RenameIcebergView{Stamp: e.st(), Namespace: other, Name: "latest", NewNamespace: nestedNS, NewName: "second"},
			fsm.CodeTableExists, "View already exists"},
		{"a table onto a view", &fsm.RenameIcebergTable{Stamp: e.st(), Namespace: other, Name: "events", NewNamespace: nestedNS, NewName: "second"},
			fsm.CodeTableExists, "View already exists"},
		{"across catalogs", &fsm.RenameIcebergView{Stamp: e.st(), Namespace: other, Name: "latest", NewNamespace: []string{"cat2", "default"}, NewName: "x"},
			fsm.CodeInvalid, "across catalogs"},
		{"into a missing namespace", &fsm.RenameIcebergView{Stamp: e.st(), Namespace: other, Name: "latest",
			NewNamespace: []string{"unity", "default", "nope"}, NewName: "x"}, fsm.CodeSchemaNotFound, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.fail(tc.cmd, tc.code, tc.msg)
		})
	}
	e.t = t
	dropped := e.changed(&fsm.DropIcebergView{Stamp: e.st(), Namespace: other, Name: "latest"}).Table
	if dropped.Name != "latest" || !dropped.IsView() {
		t.Fatalf("dropped %+v", dropped)
	}
	if _, ok := e.m.State().ViewIn(other, "latest"); ok {
		t.Fatal("the dropped view still resolves")
	}
	e.createView(other, "latest") // the name is free again
}

func TestViewListings(t *testing.T) {
	e := icebergEnv(t)
	for _, n := range []string{"a", "c", "e"} {
		e.createView(nestedNS, n)
	}
	for _, n := range []string{"b", "d"} {
		e.createIceberg(nestedNS, n)
	}
	st := e.m.State()
	if got := tableNames(st.ViewsIn(nestedNS, "", 0)); !slices.Equal(got, []string{"a", "c", "e"}) {
		t.Fatalf("views %v", got)
	}
	if got := tableNames(st.ViewsIn(nestedNS, "a", 1)); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("a page of views after a: %v", got)
	}
	if got := tableNames(st.ViewsIn(nestedNS, "", 2)); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("a page of two views: %v", got)
	}
	notView := func(tb *fsm.Table) bool { return !tb.IsView() }
	if got := tableNames(st.TablesInWhere(nestedNS, "b", 1, notView)); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("a page of tables after b: %v", got)
	}
	if got := tableNames(st.TablesIn(nestedNS, "", 0)); len(got) != 5 {
		t.Fatalf("TablesIn lists every kind: %v", got)
	}
	if st.ViewsIn([]string{"unity"}, "", 0) != nil {
		t.Fatal("a catalog lists views")
	}
}

func TestIcebergViewsRoundTripThroughRecords(t *testing.T) {
	e := icebergEnv(t)
	e.createView(nestedNS, "recent")
	e.changed(e.replaceView(nestedNS, "recent", 0))
	st := roundTrip(t, e.m.State())
	got, ok := st.ViewIn(nestedNS, "recent")
	want, _ := e.m.State().ViewIn(nestedNS, "recent")
	if !ok || jsonOf(t, got) != jsonOf(t, want) || got.ETag() != want.ETag() || got.Type != fsm.TableView {
		t.Fatalf("restored %s, want %s", jsonOf(t, got), jsonOf(t, want))
	}
	e.m.Replace(st)
	e.changed(e.replaceView(nestedNS, "recent", 1))
}

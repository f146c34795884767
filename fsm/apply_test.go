package fsm_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

func TestInitSeedsDefaultsOnce(t *testing.T) {
	e := newEnv(t)
	st := e.m.State()
	if !st.Initialized() {
		t.Fatal("state not initialised after Init")
	}
	ms := st.Metastore()
	if ms.ID != "ms-1" || ms.StorageRoot != metastoreRoot || ms.CreatedAt != baseTime+1000 {
		t.Fatalf("metastore = %+v", ms)
	}
	cat, ok := st.Catalog(fsm.DefaultCatalog)
	if !ok || cat.ID != "cat-unity" || cat.Owner != owner {
		t.Fatalf("default catalog = %+v, %v", cat, ok)
	}
	sch, ok := st.Schema(fsm.DefaultCatalog, fsm.DefaultSchema)
	if !ok || sch.ID != "sch-default" || sch.FullName() != "unity.default" {
		t.Fatalf("default schema = %+v, %v", sch, ok)
	}
	// A second Init is a no-op, even with other identities.
	e.noop(&fsm.Init{Stamp: e.st(), MetastoreID: "ms-2", StorageRoot: "s3://other", CatalogID: "x", SchemaID: "y"})
	if got := e.m.State().Metastore().ID; got != "ms-1" {
		t.Fatalf("metastore id changed to %s", got)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	cmds := []fsm.Command{
		&fsm.Init{Stamp: fsm.Stamp{Time: 1, Caller: "a"}, MetastoreID: "m", StorageRoot: "s3://r", CatalogID: "c", SchemaID: "s"},
		&fsm.CreateCatalog{Stamp: fsm.Stamp{Time: 2}, ID: "i", Name: "n", Comment: "c", Properties: map[string]string{"b": "2", "a": "1"}, StorageRoot: "s3://x"},
		&fsm.UpdateCatalog{Name: "n", NewName: "m", Comment: ptr(""), Properties: &map[string]string{}},
		&fsm.DeleteCatalog{Name: "n", Force: true},
		&fsm.CreateSchema{ID: "i", CatalogName: "c", Name: "s", Properties: map[string]string{"k": "v"}},
		&fsm.UpdateSchema{CatalogName: "c", Name: "s", NewName: "t", Comment: ptr("x")},
		&fsm.DeleteSchema{CatalogName: "c", Name: "s"},
		&fsm.CreateStagingTable{ID: "i", CatalogName: "c", SchemaName: "s", Name: "t"},
		&fsm.CreateTable{ID: "i", CatalogName: "c", SchemaName: "s", Name: "t", Format: fsm.FormatDelta,
			TableType: fsm.TableManaged, Location: "s3://l", Columns: testColumns(), PartitionColumns: []string{"id"},
			Protocol: managedProtocol("clustering"), Properties: managedProps("i"),
			DomainMetadata: &fsm.DomainMetadata{ClusteringColumns: &[][]string{{"id"}}, RowIDHighWaterMark: ptr(int64(3))},
			Uniform:        &fsm.IcebergUniform{MetadataLocation: "s3://l/m.json", ConvertedDeltaVersion: 1, BaseConvertedDeltaVersion: ptr(int64(0))},
			Comment:        ptr("hello"), LastCommitTimestampMs: 9},
		&fsm.UpdateTable{CatalogName: "c", SchemaName: "s", Name: "t", AssertUUID: "u", AssertETag: ptr("e"),
			SetColumns: ptr(testColumns()), SetPartitionColumns: &[]string{}, SetProtocol: ptr(managedProtocol()),
			SetProperties: &map[string]string{"a": "b"}, RemoveProperties: &[]string{"x"},
			SetDomainMetadata: &fsm.DomainMetadata{RowIDHighWaterMark: ptr(int64(1))}, RemoveDomainMetadata: &[]string{fsm.DomainClustering},
			SetTableComment: ptr(""), SetSnapshotVersion: &fsm.SnapshotVersion{LastCommitVersion: 4, LastCommitTimestampMs: 5},
			AddCommit:           &fsm.AddCommit{Commit: commitOf(3, "z"), PurgedReplay: fsm.ReplayDifferent},
			SetLatestBackfilled: ptr(int64(2))},
		&fsm.DeleteTable{CatalogName: "c", SchemaName: "s", Name: "t"},
		&fsm.RenameTable{CatalogName: "c", SchemaName: "s", Name: "t", NewName: "u"},
	}
	seen := map[fsm.CommandType]bool{}
	for _, c := range cmds {
		b, err := fsm.Encode(c)
		if err != nil {
			t.Fatalf("encode %T: %v", c, err)
		}
		if fsm.CommandType(b[0]) != c.Type() || b[1] != 1 {
			t.Fatalf("%T: header bytes %v, want type %d version 1", c, b[:2], c.Type())
		}
		if seen[c.Type()] {
			t.Fatalf("%T: type %d used twice", c, c.Type())
		}
		seen[c.Type()] = true
		got, err := fsm.Decode(b)
		if err != nil {
			t.Fatalf("decode %T: %v", c, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("%T round trip:\n got %+v\nwant %+v", c, got, c)
		}
		again, _ := fsm.Encode(got)
		if string(again) != string(b) {
			t.Fatalf("%T: re-encoding differs:\n%s\n%s", c, again, b)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := fsm.Encode(&fsm.CreateCatalog{ID: "i", Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		data    []byte
		unknown bool // error must be an ErrUnknownCommand
	}{
		{"empty", nil, false},
		{"one byte", []byte{byte(fsm.CmdInit)}, false},
		{"unknown type", append([]byte{0x7f, 1}, "{}"...), true},
		{"type zero", append([]byte{0, 1}, "{}"...), true},
		{"payload version 0", append([]byte{byte(fsm.CmdCreateCatalog), 0}, good[2:]...), false},
		{"payload version 2", append([]byte{byte(fsm.CmdCreateCatalog), 2}, good[2:]...), false},
		{"no payload", []byte{byte(fsm.CmdCreateCatalog), 1}, false},
		{"truncated", good[:len(good)-3], false},
		{"garbage", append([]byte{byte(fsm.CmdUpdateTable), 1}, 0xff, 0x00, 0x13, 0x37), false},
		{"trailing data", append(slices.Clone(good), `{}`...), false},
		{"wrong json type", append([]byte{byte(fsm.CmdCreateCatalog), 1}, `["n"]`...), false},
		{"wrong field type", append([]byte{byte(fsm.CmdDeleteCatalog), 1}, `{"name":7}`...), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := fsm.Decode(tc.data); err == nil {
				t.Fatal("Decode accepted it")
			} else {
				var u fsm.ErrUnknownCommand
				if got := errors.As(err, &u); got != tc.unknown {
					t.Fatalf("ErrUnknownCommand = %v, want %v (%v)", got, tc.unknown, err)
				}
			}
			e := newEnv(t)
			before := e.m.State()
			res, err := e.m.Apply(99, tc.data)
			if err == nil {
				t.Fatalf("Apply accepted it: %+v", res)
			}
			if !strings.Contains(err.Error(), "99") {
				t.Fatalf("apply error does not name the index: %v", err)
			}
			if res.NoOp || res.Err != nil {
				t.Fatalf("result alongside a decode error: %+v", res)
			}
			if e.m.State() != before {
				t.Fatal("undecodable entry changed the state")
			}
		})
	}
}

func TestApplySkipsFlaggedUnknownCommands(t *testing.T) {
	for _, data := range [][]byte{
		append([]byte{byte(fsm.IgnoreUnknownFlag | 0x7f), 1}, `{"anything":[1,2]}`...),
		// The flag on a known type's number makes it a different, unknown type.
		append([]byte{byte(fsm.IgnoreUnknownFlag | fsm.CmdCreateCatalog), 1}, `{"id":"i","name":"n"}`...),
		// The payload of a skipped command is never parsed.
		{byte(fsm.IgnoreUnknownFlag | 0x01), 1, 0xff, 0xfe},
	} {
		e := newEnv(t)
		before := e.m.State()
		res, err := e.m.Apply(5, data)
		if err != nil {
			t.Fatalf("% x: %v", data[:2], err)
		}
		if !res.NoOp || res.Err != nil {
			t.Fatalf("% x: result %+v, want NoOp", data[:2], res)
		}
		if e.m.State() != before {
			t.Fatalf("% x: skipped command changed the state", data[:2])
		}
		if _, ok := e.m.State().Catalog("n"); ok {
			t.Fatal("flagged type was applied as CreateCatalog")
		}
	}
}

func TestCatalogLifecycle(t *testing.T) {
	e := newEnv(t)
	cat := e.changed(&fsm.CreateCatalog{Stamp: e.st(), ID: "cat-1", Name: "c", Comment: "first",
		Properties: map[string]string{"a": "1"}, StorageRoot: "s3://croot/"}).Catalog
	if cat.StorageLocation != "s3://croot/__unitystorage/catalogs/cat-1" || cat.StorageRoot != "s3://croot/" {
		t.Fatalf("catalog storage = %q / %q", cat.StorageRoot, cat.StorageLocation)
	}
	if cat.Owner != owner || cat.CreatedBy != owner || cat.CreatedAt != cat.UpdatedAt {
		t.Fatalf("catalog audit fields = %+v", cat)
	}
	e.fail(&fsm.CreateCatalog{Stamp: e.st(), ID: "cat-2", Name: "c"}, fsm.CodeCatalogExists, "Catalog already exists: c")
	if got, _ := e.m.State().Catalog("c"); got.ID != "cat-1" {
		t.Fatalf("duplicate create replaced the catalog: %+v", got)
	}
	// No storage root: no storage location.
	if other := e.createCatalog("plain", ""); other.StorageLocation != "" {
		t.Fatalf("catalog without root has location %q", other.StorageLocation)
	}

	// Comment and properties; properties are replaced as a whole.
	up := e.changed(&fsm.UpdateCatalog{Stamp: e.st(), Name: "c", Comment: ptr("second"),
		Properties: &map[string]string{"b": "2"}}).Catalog
	if up.Comment != "second" || !reflect.DeepEqual(up.Properties, map[string]string{"b": "2"}) {
		t.Fatalf("updated catalog = %+v", up)
	}
	if up.UpdatedAt <= cat.UpdatedAt || up.UpdatedBy != owner || up.CreatedAt != cat.CreatedAt {
		t.Fatalf("update audit fields = %+v (was %+v)", up, cat)
	}
	// Absent fields are kept.
	up2 := e.changed(&fsm.UpdateCatalog{Stamp: e.st(), Name: "c"}).Catalog
	if up2.Comment != "second" || up2.Properties["b"] != "2" {
		t.Fatalf("empty update lost fields: %+v", up2)
	}

	// Children, then rename: everything reachable under the new name.
	e.createSchema("c", "s", "")
	tb := e.createManaged("c", "s", "t")
	e.commitThrough(tb, 1, 2)
	tb = e.reload(tb)
	e.fail(&fsm.UpdateCatalog{Stamp: e.st(), Name: "c", NewName: "plain"}, fsm.CodeCatalogExists, "Catalog already exists: plain")
	e.fail(&fsm.UpdateCatalog{Stamp: e.st(), Name: "nope", NewName: "x"}, fsm.CodeCatalogNotFound, "Catalog not found: nope")
	ren := e.changed(&fsm.UpdateCatalog{Stamp: e.st(), Name: "c", NewName: "c2"}).Catalog
	st := e.m.State()
	if ren.Name != "c2" || ren.ID != "cat-1" {
		t.Fatalf("renamed catalog = %+v", ren)
	}
	if _, ok := st.Catalog("c"); ok {
		t.Fatal("old catalog name still resolves")
	}
	if s, ok := st.Schema("c2", "s"); !ok || s.CatalogName != "c2" || s.FullName() != "c2.s" {
		t.Fatalf("schema under renamed catalog = %+v, %v", s, ok)
	}
	if _, ok := st.Schema("c", "s"); ok {
		t.Fatal("schema still under the old catalog name")
	}
	moved, ok := st.Table("c2", "s", "t")
	if !ok || moved.CatalogName != "c2" || moved.FullName() != "c2.s.t" || moved.ID != tb.ID ||
		moved.LatestVersion() != 2 || moved.ETag() != tb.ETag() || moved.Location != tb.Location {
		t.Fatalf("table under renamed catalog = %+v, %v", moved, ok)
	}
	if _, ok := st.Table("c", "s", "t"); ok {
		t.Fatal("table still under the old catalog name")
	}
	if got := st.Tables("c2", "s", "", 0); len(got) != 1 || got[0].Name != "t" {
		t.Fatalf("Tables(c2.s) = %v", got)
	}
	if got := st.Schemas("c", "", 0); len(got) != 0 {
		t.Fatalf("Schemas(c) after rename = %v", got)
	}
	// The moved table keeps working.
	e.changed(e.addCommit(moved, 3))

	// Non-empty delete without force: refused, nothing changes.
	e.fail(&fsm.DeleteCatalog{Stamp: e.st(), Name: "c2"}, fsm.CodeNotEmpty, "c2")
	e.fail(&fsm.DeleteCatalog{Stamp: e.st(), Name: "c"}, fsm.CodeCatalogNotFound, "Catalog not found: c")
	res := e.changed(&fsm.DeleteCatalog{Stamp: e.st(), Name: "c2", Force: true})
	if res.Catalog == nil || res.Catalog.ID != "cat-1" {
		t.Fatalf("delete result = %+v", res)
	}
	st = e.m.State()
	if _, ok := st.Catalog("c2"); ok {
		t.Fatal("catalog survived forced delete")
	}
	if _, ok := st.Schema("c2", "s"); ok {
		t.Fatal("schema survived forced catalog delete")
	}
	if _, ok := st.Table("c2", "s", "t"); ok {
		t.Fatal("table survived forced catalog delete")
	}
	cats, schemas, tables, commits := st.Counts()
	if cats != 2 || schemas != 1 || tables != 0 || commits != 0 {
		t.Fatalf("counts after delete = %d %d %d %d", cats, schemas, tables, commits)
	}
	// An empty catalog deletes without force.
	e.changed(&fsm.DeleteCatalog{Stamp: e.st(), Name: "plain"})
	if _, ok := e.m.State().Catalog("plain"); ok {
		t.Fatal("empty catalog not deleted")
	}
	// The name is free again.
	if again := e.createCatalog("c2", ""); again.ID == "cat-1" {
		t.Fatal("re-created catalog kept the old id")
	}
	if got := e.m.State().Schemas("c2", "", 0); len(got) != 0 {
		t.Fatalf("re-created catalog inherited schemas: %v", got)
	}
}

func TestSchemaLifecycle(t *testing.T) {
	e := newEnv(t)
	e.createCatalog("c", "")
	e.createCatalog("d", "")
	e.fail(&fsm.CreateSchema{Stamp: e.st(), ID: "x", CatalogName: "nope", Name: "s"}, fsm.CodeCatalogNotFound, "Catalog not found: nope")
	s := e.changed(&fsm.CreateSchema{Stamp: e.st(), ID: "sch-1", CatalogName: "c", Name: "s", Comment: "k",
		Properties: map[string]string{"p": "1"}, StorageRoot: "s3://sroot"}).Schema
	if s.StorageLocation != "s3://sroot/__unitystorage/schemas/sch-1" || s.FullName() != "c.s" {
		t.Fatalf("schema = %+v", s)
	}
	e.fail(&fsm.CreateSchema{Stamp: e.st(), ID: "sch-2", CatalogName: "c", Name: "s"}, fsm.CodeSchemaExists, "Schema already exists: c.s")
	// The same name in another catalog is a different schema.
	e.createSchema("d", "s", "")
	e.createSchema("c", "other", "")

	up := e.changed(&fsm.UpdateSchema{Stamp: e.st(), CatalogName: "c", Name: "s", Comment: ptr("new"),
		Properties: &map[string]string{"q": "2"}}).Schema
	if up.Comment != "new" || !reflect.DeepEqual(up.Properties, map[string]string{"q": "2"}) || up.UpdatedAt <= s.UpdatedAt {
		t.Fatalf("updated schema = %+v", up)
	}
	tb := e.createManaged("c", "s", "t")
	ext := e.createExternal("c", "s", "x")
	e.createExternal("d", "s", "t") // same names elsewhere must not move

	e.fail(&fsm.UpdateSchema{Stamp: e.st(), CatalogName: "c", Name: "s", NewName: "other"}, fsm.CodeSchemaExists, "Schema already exists: c.other")
	e.fail(&fsm.UpdateSchema{Stamp: e.st(), CatalogName: "nope", Name: "s", NewName: "z"}, fsm.CodeCatalogNotFound, "Catalog not found: nope")
	e.fail(&fsm.UpdateSchema{Stamp: e.st(), CatalogName: "c", Name: "nope", NewName: "z"}, fsm.CodeSchemaNotFound, "Schema not found: c.nope")
	ren := e.changed(&fsm.UpdateSchema{Stamp: e.st(), CatalogName: "c", Name: "s", NewName: "s2"}).Schema
	if ren.Name != "s2" || ren.ID != "sch-1" || ren.StorageLocation != s.StorageLocation {
		t.Fatalf("renamed schema = %+v", ren)
	}
	st := e.m.State()
	if _, ok := st.Schema("c", "s"); ok {
		t.Fatal("old schema name still resolves")
	}
	for _, name := range []string{"t", "x"} {
		got, ok := st.Table("c", "s2", name)
		if !ok || got.SchemaName != "s2" {
			t.Fatalf("table %s under renamed schema: %+v, %v", name, got, ok)
		}
		if _, ok := st.Table("c", "s", name); ok {
			t.Fatalf("table %s still under the old schema name", name)
		}
	}
	if got, _ := st.Table("c", "s2", "t"); got.ID != tb.ID || got.ETag() != tb.ETag() {
		t.Fatalf("moved managed table changed identity: %+v", got)
	}
	if got, _ := st.Table("c", "s2", "x"); got.ID != ext.ID {
		t.Fatalf("moved external table changed identity: %+v", got)
	}
	if _, ok := st.Table("d", "s", "t"); !ok {
		t.Fatal("table in another catalog moved")
	}
	if got := st.Tables("c", "s2", "", 0); len(got) != 2 {
		t.Fatalf("Tables(c.s2) = %d tables", len(got))
	}

	e.fail(&fsm.DeleteSchema{Stamp: e.st(), CatalogName: "c", Name: "s2"}, fsm.CodeNotEmpty, "c.s2")
	e.fail(&fsm.DeleteSchema{Stamp: e.st(), CatalogName: "c", Name: "s"}, fsm.CodeSchemaNotFound, "Schema not found: c.s")
	e.fail(&fsm.DeleteSchema{Stamp: e.st(), CatalogName: "zz", Name: "s2"}, fsm.CodeCatalogNotFound, "Catalog not found: zz")
	e.changed(&fsm.DeleteSchema{Stamp: e.st(), CatalogName: "c", Name: "s2", Force: true})
	st = e.m.State()
	if _, ok := st.Schema("c", "s2"); ok {
		t.Fatal("schema survived forced delete")
	}
	if got := st.Tables("c", "s2", "", 0); len(got) != 0 {
		t.Fatalf("tables survived forced schema delete: %d", len(got))
	}
	if _, ok := st.Table("d", "s", "t"); !ok {
		t.Fatal("forced delete removed a table of another catalog")
	}
	// Empty schema deletes without force; the catalog is then deletable.
	e.changed(&fsm.DeleteSchema{Stamp: e.st(), CatalogName: "c", Name: "other"})
	e.changed(&fsm.DeleteCatalog{Stamp: e.st(), Name: "c"})
}

func TestPrefixNamesStayApart(t *testing.T) {
	// Names that are prefixes of each other must not leak into each other's
	// listings, renames or deletes.
	e := newEnv(t)
	e.createCatalog("a", "")
	e.createCatalog("ab", "")
	e.createSchema("a", "s", "")
	e.createSchema("a", "s1", "")
	e.createSchema("ab", "s", "")
	e.createExternal("a", "s", "t")
	e.createExternal("a", "s1", "t")
	e.createExternal("ab", "s", "t")
	e.changed(&fsm.DeleteSchema{Stamp: e.st(), CatalogName: "a", Name: "s", Force: true})
	st := e.m.State()
	if _, ok := st.Table("a", "s1", "t"); !ok {
		t.Fatal("delete of a.s removed a.s1.t")
	}
	if got := st.Schemas("a", "", 0); len(got) != 1 || got[0].Name != "s1" {
		t.Fatalf("Schemas(a) = %v", got)
	}
	e.changed(&fsm.UpdateCatalog{Stamp: e.st(), Name: "a", NewName: "z"})
	st = e.m.State()
	if _, ok := st.Table("ab", "s", "t"); !ok {
		t.Fatal("rename of catalog a moved ab.s.t")
	}
	e.changed(&fsm.DeleteCatalog{Stamp: e.st(), Name: "z", Force: true})
	if _, ok := e.m.State().Table("ab", "s", "t"); !ok {
		t.Fatal("delete of catalog z removed ab.s.t")
	}
}

func TestNotFoundNamesFirstMissingLevel(t *testing.T) {
	e := newEnv(t)
	e.createCatalog("c", "")
	e.createSchema("c", "s", "")
	type target struct{ cat, sch, tbl string }
	levels := []struct {
		name string
		at   target
		code fsm.Code
		msg  string
	}{
		{"catalog", target{"nope", "nope", "nope"}, fsm.CodeCatalogNotFound, "Catalog not found: nope"},
		{"schema", target{"c", "nope", "nope"}, fsm.CodeSchemaNotFound, "Schema not found: c.nope"},
		{"table", target{"c", "s", "nope"}, fsm.CodeTableNotFound, "Table not found: c.s.nope"},
	}
	cmds := map[string]func(target) fsm.Command{
		"UpdateTable": func(g target) fsm.Command {
			return &fsm.UpdateTable{Stamp: e.st(), CatalogName: g.cat, SchemaName: g.sch, Name: g.tbl,
				SetProperties: &map[string]string{"a": "b"}}
		},
		"DeleteTable": func(g target) fsm.Command {
			return &fsm.DeleteTable{Stamp: e.st(), CatalogName: g.cat, SchemaName: g.sch, Name: g.tbl}
		},
		"RenameTable": func(g target) fsm.Command {
			return &fsm.RenameTable{Stamp: e.st(), CatalogName: g.cat, SchemaName: g.sch, Name: g.tbl, NewName: "z"}
		},
	}
	for _, lv := range levels {
		for name, mk := range cmds {
			t.Run(name+"/"+lv.name, func(t *testing.T) {
				e.t = t
				e.fail(mk(lv.at), lv.code, lv.msg)
			})
		}
	}
	e.t = t
	// Commands that address a schema: only the first two levels apply.
	for _, lv := range levels[:2] {
		e.fail(&fsm.CreateStagingTable{Stamp: e.st(), ID: "x", CatalogName: lv.at.cat, SchemaName: lv.at.sch, Name: "t"}, lv.code, lv.msg)
		ext := e.externalCreate(lv.at.cat, lv.at.sch, "t")
		e.fail(ext, lv.code, lv.msg)
		e.fail(&fsm.UpdateSchema{Stamp: e.st(), CatalogName: lv.at.cat, Name: lv.at.sch, Comment: ptr("x")}, lv.code, lv.msg)
		e.fail(&fsm.DeleteSchema{Stamp: e.st(), CatalogName: lv.at.cat, Name: lv.at.sch}, lv.code, lv.msg)
	}
	e.fail(&fsm.UpdateCatalog{Stamp: e.st(), Name: "nope", Comment: ptr("x")}, fsm.CodeCatalogNotFound, "Catalog not found: nope")
	e.fail(&fsm.DeleteCatalog{Stamp: e.st(), Name: "nope"}, fsm.CodeCatalogNotFound, "Catalog not found: nope")
}

func TestStagingLocation(t *testing.T) {
	cases := []struct {
		name               string
		metaRoot           string
		catRoot, schRoot   string
		wantPrefix         string // before "/tables/<id>"
		wantInvalidMessage string
	}{
		{name: "schema root wins", metaRoot: metastoreRoot, catRoot: "s3://cat/", schRoot: "s3://sch",
			wantPrefix: "s3://sch/__unitystorage/schemas/"},
		{name: "catalog root", metaRoot: metastoreRoot, catRoot: "s3://cat/",
			wantPrefix: "s3://cat/__unitystorage/catalogs/"},
		{name: "metastore root", metaRoot: metastoreRoot + "/",
			wantPrefix: metastoreRoot + "/__unitystorage"},
		{name: "no root anywhere", metaRoot: "",
			wantInvalidMessage: "managed location"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvRoot(t, tc.metaRoot)
			cat := e.createCatalog("c", tc.catRoot)
			sch := e.createSchema("c", "s", tc.schRoot)
			if tc.wantInvalidMessage != "" {
				e.fail(&fsm.CreateStagingTable{Stamp: e.st(), ID: "t1", CatalogName: "c", SchemaName: "s", Name: "t"},
					fsm.CodeInvalid, tc.wantInvalidMessage)
				return
			}
			var root string
			switch {
			case tc.schRoot != "":
				root = sch.StorageLocation
			case tc.catRoot != "":
				root = cat.StorageLocation
			default:
				root = strings.TrimRight(tc.metaRoot, "/") + "/__unitystorage"
			}
			if !strings.HasPrefix(root, tc.wantPrefix) {
				t.Fatalf("managed root %q does not start with %q", root, tc.wantPrefix)
			}
			st := e.changed(&fsm.CreateStagingTable{Stamp: e.st(), ID: "tbl-x", CatalogName: "c", SchemaName: "s", Name: "t"}).Staging
			want := root + "/tables/tbl-x"
			if st.Location != want {
				t.Fatalf("staging location = %q, want %q", st.Location, want)
			}
			if strings.Contains(strings.TrimPrefix(st.Location, root), "/t/") || st.Committed {
				t.Fatalf("staging row = %+v", st)
			}
			if st.CatalogName != "c" || st.SchemaName != "s" || st.Name != "t" || st.CreatedBy != owner {
				t.Fatalf("staging row = %+v", st)
			}
			byID, ok := e.m.State().StagingTable("tbl-x")
			if !ok || byID.Location != want {
				t.Fatalf("StagingTable(id) = %+v, %v", byID, ok)
			}
			byLoc, ok := e.m.State().StagingByLocation(want)
			if !ok || byLoc.ID != "tbl-x" {
				t.Fatalf("StagingByLocation = %+v, %v", byLoc, ok)
			}
		})
	}
}

func TestStagingNames(t *testing.T) {
	e := newEnv(t)
	// UC Delta case 11
	a := e.stage("unity", "default", "t")
	b := e.stage("unity", "default", "t")
	if a.ID == b.ID || a.Location == b.Location {
		t.Fatalf("two staging rows share identity: %+v %+v", a, b)
	}
	st := e.m.State()
	for _, s := range []*fsm.StagingTable{a, b} {
		if got, ok := st.StagingByLocation(s.Location); !ok || got.ID != s.ID {
			t.Fatalf("staging %s not found by location", s.ID)
		}
	}
	e.changed(e.managedCreate(a, "t"))
	// UC Delta case 10
	e.fail(&fsm.CreateStagingTable{Stamp: e.st(), ID: "late", CatalogName: "unity", SchemaName: "default", Name: "t"},
		fsm.CodeTableExists, "Table already exists: t")
	if _, ok := e.m.State().StagingTable("late"); ok {
		t.Fatal("rejected staging row stored")
	}
}

// Creating a MANAGED table: the stored state.
func TestCreateManaged(t *testing.T) {
	e := newEnv(t)
	st := e.stage("unity", "default", "t")
	c := e.managedCreate(st, "t")
	c.Protocol = managedProtocol("domainMetadata", "rowTracking", "clustering")
	c.Comment = ptr("a comment")
	c.PartitionColumns = []string{"id"}
	c.DomainMetadata.ClusteringColumns = &[][]string{{"id"}, {"a", "b"}}
	// UC Delta case 15: client values under derived keys must lose.
	c.Properties[fsm.PropFeaturePrefix+"catalogManaged"] = "client-override"
	c.Properties[fsm.PropClustering] = `[["wrong"]]`
	c.Properties[fsm.PropRowIDHighWater] = "5"
	c.Properties[fsm.PropMinReader] = "1"
	c.Properties[fsm.PropMinWriter] = "2"
	c.Properties[fsm.PropLastUpdate] = "17"
	c.Properties[fsm.PropLastCommitTs] = "18"
	c.Properties["user.key"] = "kept"
	// A feature key the protocol does not declare stays: derived keys are an overlay.
	c.Properties[fsm.PropFeaturePrefix+"clientOnly"] = "supported"
	res := e.changed(c)
	tb := res.Table
	idx := e.lastIndex()

	// UC Delta case 14
	if tb.ID != st.ID || tb.Location != st.Location || tb.Type != fsm.TableManaged || tb.Format != fsm.FormatDelta {
		t.Fatalf("identity = %+v, staging %+v", tb, st)
	}
	if tb.FullName() != "unity.default.t" || tb.Comment == nil || *tb.Comment != "a comment" {
		t.Fatalf("names/comment = %+v", tb)
	}
	if !slices.Equal(tb.ColumnNames, []string{"id", "amount"}) || !slices.Equal(tb.PartitionColumns, []string{"id"}) ||
		string(tb.Columns) != string(testColumns().Columns) {
		t.Fatalf("columns = %s %v %v", tb.Columns, tb.ColumnNames, tb.PartitionColumns)
	}
	if tb.LatestVersion() != 0 || len(tb.Commits) != 0 || len(tb.UnbackfilledCommits()) != 0 {
		t.Fatalf("fresh table has commits: %+v", tb.Commits)
	}
	if tb.CreatedAt != c.Time || tb.UpdatedAt != c.Time || tb.Owner != owner || tb.CreatedBy != owner {
		t.Fatalf("audit = %+v", tb)
	}
	if tb.MetaIndex != idx {
		t.Fatalf("MetaIndex = %d, want create index %d", tb.MetaIndex, idx)
	}
	want := managedProps(st.ID)
	want["user.key"] = "kept"
	want[fsm.PropFeaturePrefix+"clientOnly"] = "supported"
	want[fsm.PropMinReader] = "3"
	want[fsm.PropMinWriter] = "7"
	for _, k := range featureKeysOf(c.Protocol) {
		want[k] = "supported"
	}
	want[fsm.PropClustering] = `[["id"],["a","b"]]`
	want[fsm.PropRowIDHighWater] = "99"
	want[fsm.PropLastCommitTs] = "1699999999995"
	want[fsm.PropLastUpdate] = "0"
	if !reflect.DeepEqual(tb.Properties, want) {
		t.Fatalf("properties:\n got %v\nwant %v", tb.Properties, want)
	}
	if got, _ := e.m.State().Table("unity", "default", "t"); got != tb {
		t.Fatal("result table is not the stored table")
	}
	done, _ := e.m.State().StagingTable(st.ID)
	if !done.Committed || done.Location != st.Location {
		t.Fatalf("staging row after create = %+v", done)
	}
	if byLoc, _ := e.m.State().StagingByLocation(st.Location); !byLoc.Committed {
		t.Fatal("StagingByLocation still shows the row uncommitted")
	}
	// The command's map was not aliased into the state.
	c.Properties["user.key"] = "mutated"
	if e.table("unity", "default", "t").Properties["user.key"] != "kept" {
		t.Fatal("stored properties alias the command")
	}
}

func TestCreateManagedRejects(t *testing.T) {
	cases := []struct {
		name string
		mod  func(e *env, c *fsm.CreateTable)
		code fsm.Code
		msg  string
	}{
		// UC Delta case 24
		{"unknown location", func(e *env, c *fsm.CreateTable) { c.Location += "-x" }, fsm.CodeStagingNotFound, "Staging table not found"},
		// UC Delta case 21
		{"missing table id", func(e *env, c *fsm.CreateTable) { delete(c.Properties, fsm.PropTableID) }, fsm.CodeInvalid, fsm.PropTableID},
		{"wrong table id", func(e *env, c *fsm.CreateTable) { c.Properties[fsm.PropTableID] = "tbl-other" }, fsm.CodeInvalid, fsm.PropTableID},
		{"other caller", func(e *env, c *fsm.CreateTable) { c.Caller = "mallory" }, fsm.CodePermissionDenied, "without ownership"},
		{"unknown schema", func(e *env, c *fsm.CreateTable) { c.SchemaName = "nope" }, fsm.CodeSchemaNotFound, "Schema not found"},
		{"existing name", func(e *env, c *fsm.CreateTable) { e.createExternal("unity", "default", "taken"); c.Name = "taken" },
			fsm.CodeTableExists, "Table already exists: unity.default.taken"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			st := e.stage("unity", "default", "t")
			c := e.managedCreate(st, "t")
			tc.mod(e, c)
			e.fail(c, tc.code, tc.msg)
			if got, _ := e.m.State().StagingTable(st.ID); got.Committed {
				t.Fatal("rejected create committed the staging row")
			}
			// The untouched request still works afterwards.
			e.changed(e.managedCreate(st, "t"))
		})
	}
}

// UC Delta case 25.
func TestCreateManagedTwiceFromOneStaging(t *testing.T) {
	e := newEnv(t)
	st := e.stage("unity", "default", "t")
	first := e.changed(e.managedCreate(st, "t")).Table
	// Same name: the name is taken first.
	e.fail(e.managedCreate(st, "t"), fsm.CodeTableExists, "Table already exists")
	// Another name: the staging row is used up.
	e.fail(e.managedCreate(st, "t2"), fsm.CodeInvalid, "Staging table already committed")
	// Still used up after the table is dropped.
	e.changed(&fsm.DeleteTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "t"})
	e.fail(e.managedCreate(st, "t"), fsm.CodeInvalid, "Staging table already committed")
	if first.ID != st.ID {
		t.Fatal("identity")
	}
}

// UC Delta case 29 (stored state).
func TestCreateExternal(t *testing.T) {
	e := newEnv(t)
	c := e.externalCreate("unity", "default", "ext")
	c.Properties[fsm.PropLastUpdate] = "9"
	c.Protocol = fsm.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}
	tb := e.changed(c).Table
	if tb.ID != c.ID || tb.Type != fsm.TableExternal || tb.Location != c.Location {
		t.Fatalf("external table = %+v", tb)
	}
	want := map[string]string{"owner.team": "data", fsm.PropMinReader: "3", fsm.PropMinWriter: "7",
		fsm.PropFeaturePrefix + "v2Checkpoint": "supported", fsm.PropLastUpdate: "0", fsm.PropLastCommitTs: "1699999999993"}
	if !reflect.DeepEqual(tb.Properties, want) {
		t.Fatalf("properties:\n got %v\nwant %v", tb.Properties, want)
	}
	if _, ok := e.m.State().StagingByLocation(c.Location); ok {
		t.Fatal("external create reserved a staging location")
	}
	e.fail(e.externalCreate("unity", "default", "ext"), fsm.CodeTableExists, "Table already exists")
}

// UC Delta case 34 (stored state).
func TestRenameTable(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.commitThrough(tb, 1, 2)
	e.createExternal("unity", "default", "other")
	tb = e.reload(tb)

	// Same name: no-op, etag and updated-time unchanged.
	res := e.noop(&fsm.RenameTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "t", NewName: "t"})
	if res.Table != tb {
		t.Fatal("same-name rename did not answer with the current table")
	}
	e.fail(&fsm.RenameTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "t", NewName: "other"},
		fsm.CodeTableExists, "Table already exists: other")
	e.fail(&fsm.RenameTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "nope", NewName: "x"},
		fsm.CodeTableNotFound, "Table not found")

	ren := e.changed(&fsm.RenameTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "t", NewName: "t2"}).Table
	st := e.m.State()
	if _, ok := st.Table("unity", "default", "t"); ok {
		t.Fatal("old name still resolves")
	}
	got := e.table("unity", "default", "t2")
	if got != ren || got.ID != tb.ID || got.Location != tb.Location || got.CreatedAt != tb.CreatedAt ||
		!reflect.DeepEqual(got.Properties, tb.Properties) || !reflect.DeepEqual(got.Commits, tb.Commits) {
		t.Fatalf("renamed table = %+v\nwas %+v", got, tb)
	}
	if got.ETag() == tb.ETag() || got.UpdatedAt <= tb.UpdatedAt || got.MetaIndex != e.lastIndex() {
		t.Fatalf("rename did not count as a metadata change: etag %s→%s updated %d→%d", tb.ETag(), got.ETag(), tb.UpdatedAt, got.UpdatedAt)
	}
	// Commits continue under the new name.
	e.changed(e.addCommit(got, 3))
	// The old name is free for a new table.
	e.createExternal("unity", "default", "t")
}

// UC Delta case 33 (stored state).
func TestDeleteTable(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.commitThrough(tb, 1, 3)
	res := e.changed(&fsm.DeleteTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "t"})
	if res.Table == nil || res.Table.ID != tb.ID {
		t.Fatalf("delete result = %+v", res)
	}
	if _, ok := e.m.State().Table("unity", "default", "t"); ok {
		t.Fatal("table survived delete")
	}
	if _, _, _, commits := e.m.State().Counts(); commits != 0 {
		t.Fatalf("%d commits survived delete", commits)
	}
	e.fail(&fsm.DeleteTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "t"}, fsm.CodeTableNotFound, "Table not found")
	// A new table under the name starts with an empty log.
	fresh := e.createManaged("unity", "default", "t")
	if fresh.ID == tb.ID || fresh.LatestVersion() != 0 {
		t.Fatalf("re-created table = %+v", fresh)
	}
	e.changed(e.addCommit(fresh, 1))
}

// UC Delta case 43: updates of a non-Delta table.
func TestUpdateNonDeltaTable(t *testing.T) {
	e := newEnv(t)
	c := e.externalCreate("unity", "default", "pq")
	c.Format = "PARQUET"
	tb := e.changed(c).Table
	e.fail(e.upd(tb, func(u *fsm.UpdateTable) { u.SetProperties = &map[string]string{"a": "b"} }),
		fsm.CodeUnsupportedFormat, "Table is not a Delta table: unity.default.pq")
	// The format check precedes assert-table-uuid.
	e.fail(e.upd(tb, func(u *fsm.UpdateTable) { u.AssertUUID = "wrong"; u.SetTableComment = ptr("") }),
		fsm.CodeUnsupportedFormat, "Table is not a Delta table")
}

func TestErrorCodeNames(t *testing.T) {
	seen := map[string]bool{}
	if n := len(fsm.Codes()); n != int(fsm.CodeTokenNotFound) {
		t.Fatalf("Codes() lists %d codes, want %d", n, fsm.CodeTokenNotFound)
	}
	for c := fsm.CodeInvalid; c <= fsm.CodeTokenNotFound; c++ {
		s := c.String()
		if strings.HasPrefix(s, "code(") || seen[s] {
			t.Fatalf("code %d has name %q", c, s)
		}
		seen[s] = true
	}
	if got := fsm.Code(200).String(); got != "code(200)" {
		t.Fatalf("unknown code name = %q", got)
	}
	err := fsm.Errf(fsm.CodeTableExists, "x %d", 1)
	var target *fsm.Error
	if !errors.As(error(err), &target) || target.Error() != "x 1" || target.Code != fsm.CodeTableExists {
		t.Fatalf("Errf = %+v", err)
	}
	b, _ := json.Marshal(err)
	if string(b) != `{"code":8,"message":"x 1"}` {
		t.Fatalf("error JSON = %s", b)
	}
}

func TestListingPages(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"b", "a", "a1", "a10"} {
		e.createCatalog(n, "")
	}
	e.createSchema("a", "s", "")
	e.createSchema("a", "s1", "")
	for _, n := range []string{"t10", "t", "t1", "u"} {
		e.createExternal("a", "s", n)
	}
	e.createExternal("a", "s1", "z")
	names := func(n int, name func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = name(i)
		}
		return out
	}
	st := e.m.State()
	cats := func(after string, limit int) []string {
		cs := st.Catalogs(after, limit)
		return names(len(cs), func(i int) string { return cs[i].Name })
	}
	tables := func(sch, after string, limit int) []string {
		ts := st.Tables("a", sch, after, limit)
		return names(len(ts), func(i int) string { return ts[i].Name })
	}
	cases := []struct {
		got, want []string
	}{
		{cats("", 0), []string{"a", "a1", "a10", "b", "unity"}},
		{cats("", 2), []string{"a", "a1"}},
		{cats("a1", 2), []string{"a10", "b"}},
		{cats("a", 0), []string{"a1", "a10", "b", "unity"}},
		{cats("unity", 0), []string{}},
		{cats("c", 1), []string{"unity"}},
		{tables("s", "", 0), []string{"t", "t1", "t10", "u"}},
		{tables("s", "t", 2), []string{"t1", "t10"}},
		{tables("s", "t10", 0), []string{"u"}},
		{tables("s1", "", 0), []string{"z"}},
		{tables("nope", "", 0), []string{}},
	}
	for i, tc := range cases {
		if !slices.Equal(tc.got, tc.want) {
			t.Fatalf("case %d: got %v, want %v", i, tc.got, tc.want)
		}
	}
	if got := st.Schemas("a", "s", 0); len(got) != 1 || got[0].Name != "s1" {
		t.Fatalf("Schemas(a, after s) = %v", got)
	}
	if got := st.Schemas("a1", "", 0); len(got) != 0 {
		t.Fatalf("Schemas(a1) = %v", got)
	}
}

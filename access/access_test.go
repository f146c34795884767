package access_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/access"
	"github.com/raftcat/raftcat/fsm"
)

const baseTime = int64(1_700_000_000_000)

// builder applies commands to a machine the way the cluster does: encoded,
// decoded, at consecutive raft indexes, each by the caller its stamp names.
type builder struct {
	t     testing.TB
	m     *fsm.Machine
	next  uint64
	clock int64
}

func newBuilder(t testing.TB) *builder {
	t.Helper()
	b := &builder{t: t, m: fsm.NewMachine(), next: 1, clock: baseTime}
	b.apply(&fsm.Init{Stamp: b.by("admin"), MetastoreID: "ms-1", StorageRoot: "s3://bucket/root",
		CatalogID: "cat-unity", SchemaID: "sch-default"})
	return b
}

// by is the stamp of a command made by caller (who owns what it creates).
func (b *builder) by(caller string) fsm.Stamp {
	b.clock += 1000
	return fsm.Stamp{Time: b.clock, Caller: caller, Rules: fsm.CurrentRules}
}

// apply applies commands in order; each must succeed.
func (b *builder) apply(cmds ...fsm.Command) *fsm.State {
	b.t.Helper()
	for _, cmd := range cmds {
		raw, err := fsm.Encode(cmd)
		if err != nil {
			b.t.Fatalf("encode %T: %v", cmd, err)
		}
		res, err := b.m.Apply(b.next, raw)
		b.next++
		if err != nil {
			b.t.Fatalf("apply %T: %v", cmd, err)
		}
		if res.Err != nil {
			b.t.Fatalf("%T: %v: %s", cmd, res.Err.Code, res.Err.Message)
		}
	}
	return b.m.State()
}

func (b *builder) principal(name string, admin bool) fsm.Command {
	return &fsm.CreatePrincipal{Stamp: b.by("admin"), Principal: fsm.Principal{Name: name, Type: fsm.PrincipalUser, Admin: admin}}
}

func (b *builder) catalog(owner, name string) fsm.Command {
	return &fsm.CreateCatalog{Stamp: b.by(owner), ID: "cat-" + name, Name: name}
}

func (b *builder) schema(owner, cat, name string) fsm.Command {
	return &fsm.CreateSchema{Stamp: b.by(owner), ID: "sch-" + cat + "-" + name, CatalogName: cat, Name: name}
}

func (b *builder) namespace(owner string, path ...string) fsm.Command {
	return &fsm.CreateNamespace{Stamp: b.by(owner), ID: "ns-" + strings.Join(path, "-"), Path: path}
}

// deltaTable is an external Delta table in a schema.
func (b *builder) deltaTable(owner, cat, sch, name string) fsm.Command {
	return &fsm.CreateTable{Stamp: b.by(owner), ID: "tbl-" + cat + "-" + sch + "-" + name,
		CatalogName: cat, SchemaName: sch, Name: name, Format: fsm.FormatDelta, TableType: fsm.TableExternal,
		Location: "s3://ext/" + cat + "/" + sch + "/" + name,
		Columns: fsm.ColumnsSpec{Columns: json.RawMessage(`{"type":"struct","fields":[` +
			`{"name":"id","type":"long","nullable":false,"metadata":{}}]}`), Names: []string{"id"}},
		Protocol:   fsm.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
		Properties: map[string]string{}, LastCommitTimestampMs: baseTime}
}

// icebergTable is an Iceberg table in a namespace (nested ones too).
func (b *builder) icebergTable(owner string, ns []string, name string) fsm.Command {
	return &fsm.CreateIcebergTable{Stamp: b.by(owner), ID: "ice-" + strings.Join(ns, "-") + "-" + name, Namespace: ns, Name: name,
		Location: "s3://lake/" + name, MetadataLocation: "s3://lake/" + name + "/metadata/00000-" + name + ".metadata.json",
		Properties: map[string]string{"format-version": "2"}}
}

// grant adds privileges to principal on the securable of typ at path.
func (b *builder) grant(principal, typ string, path []string, privs ...string) fsm.Command {
	return &fsm.UpdatePermissions{Stamp: b.by("admin"), SecurableType: typ, Path: path,
		Changes: []fsm.PermissionChange{{Principal: principal, Add: privs}}}
}

func (b *builder) revoke(principal, typ string, path []string, privs ...string) fsm.Command {
	return &fsm.UpdatePermissions{Stamp: b.by("admin"), SecurableType: typ, Path: path,
		Changes: []fsm.PermissionChange{{Principal: principal, Remove: privs}}}
}

func p(parts ...string) []string { return parts }

var (
	sales  = p("sales")
	q1     = p("sales", "q1")
	q2     = p("sales", "q2")
	q3     = p("sales", "q3")
	nested = p("sales", "q1", "nested")
	orders = p("sales", "q1", "orders")
	items  = p("sales", "q1", "items")
	t2     = p("sales", "q2", "t2")
	events = p("sales", "q1", "nested", "events")
	otherT = p("other", "s", "t")
)

// world is the state the tests decide against:
//
//	metastore                 catcreator: CREATE CATALOG
//	unity (admin)
//	sales (catowner)          reader: USE CATALOG, USE SCHEMA, SELECT; selectonly: SELECT;
//	                          usecatonly: USE CATALOG, SELECT; allpriv: ALL PRIVILEGES;
//	                          USE CATALOG: creator, schowner, tblowner, tblreader, nestreader, writer
//	  q1 (schowner)           creator: USE SCHEMA, CREATE TABLE; USE SCHEMA: tblowner, tblreader, nestreader
//	    orders (tblowner)     tblreader: SELECT
//	    items (schowner)
//	    nested (schowner)     nestreader: USE SCHEMA, SELECT
//	      events (tblowner)
//	  q2 (catowner)           writer: USE SCHEMA
//	    t2 (catowner)         writer: MODIFY
//	  q3 (lostowner)
//	other (otherowner)
//	  s (otherowner)
//	    t (otherowner)
//	share s1 (shareowner), recipient r1 (recowner), API token tok-reader (reader);
//	share anon, catalog anoncat: made by an anonymous caller
func world(t testing.TB) (*builder, *fsm.State) {
	b := newBuilder(t)
	cmds := []fsm.Command{b.principal("admin", true)}
	for _, name := range []string{"catowner", "schowner", "tblowner", "lostowner", "otherowner", "reader", "selectonly",
		"usecatonly", "allpriv", "creator", "catcreator", "tblreader", "nestreader", "writer", "shareowner", "recowner", "nobody"} {
		cmds = append(cmds, b.principal(name, false))
	}
	cmds = append(cmds,
		b.catalog("catowner", "sales"),
		b.schema("schowner", "sales", "q1"),
		b.schema("catowner", "sales", "q2"),
		b.schema("lostowner", "sales", "q3"),
		b.deltaTable("tblowner", "sales", "q1", "orders"),
		b.deltaTable("schowner", "sales", "q1", "items"),
		b.deltaTable("catowner", "sales", "q2", "t2"),
		b.namespace("schowner", nested...),
		b.icebergTable("tblowner", nested, "events"),
		b.catalog("otherowner", "other"),
		b.schema("otherowner", "other", "s"),
		b.deltaTable("otherowner", "other", "s", "t"),
		b.catalog("", "anoncat"),

		b.grant("catcreator", fsm.SecurableMetastore, nil, fsm.PrivCreateCatalog),
		b.grant("reader", fsm.SecurableCatalog, sales, fsm.PrivUseCatalog, fsm.PrivUseSchema, fsm.PrivSelect),
		b.grant("selectonly", fsm.SecurableCatalog, sales, fsm.PrivSelect),
		b.grant("usecatonly", fsm.SecurableCatalog, sales, fsm.PrivUseCatalog, fsm.PrivSelect),
		b.grant("allpriv", fsm.SecurableCatalog, sales, fsm.PrivAll),
		b.grant("creator", fsm.SecurableSchema, q1, fsm.PrivUseSchema, fsm.PrivCreateTable),
		b.grant("tblowner", fsm.SecurableSchema, q1, fsm.PrivUseSchema),
		b.grant("tblreader", fsm.SecurableSchema, q1, fsm.PrivUseSchema),
		b.grant("tblreader", fsm.SecurableTable, orders, fsm.PrivSelect),
		b.grant("nestreader", fsm.SecurableSchema, q1, fsm.PrivUseSchema),
		b.grant("nestreader", fsm.SecurableSchema, nested, fsm.PrivUseSchema, fsm.PrivSelect),
		b.grant("writer", fsm.SecurableSchema, q2, fsm.PrivUseSchema),
		b.grant("writer", fsm.SecurableTable, t2, fsm.PrivModify),

		&fsm.CreateShare{Stamp: b.by("shareowner"), ID: "share-1", Name: "s1"},
		&fsm.CreateShare{Stamp: b.by(""), ID: "share-2", Name: "anon"},
		&fsm.CreateRecipient{Stamp: b.by("recowner"), ID: "rcp-1", Name: "r1", TokenID: "rtok-1", ActivationHash: "act-1"},
		&fsm.CreateAuthToken{Stamp: b.by("admin"), Token: fsm.AuthToken{ID: "tok-reader", Principal: "reader",
			Secret: fsm.SecretHash{Salt: "00", Hash: "11"}}},
	)
	for _, name := range []string{"schowner", "tblowner", "creator", "tblreader", "nestreader", "writer"} {
		cmds = append(cmds, b.grant(name, fsm.SecurableCatalog, sales, fsm.PrivUseCatalog))
	}
	st := b.apply(cmds...)
	// The fixture is what the cases take it to be.
	if tb, ok := st.TableIn(nested, "events"); !ok || tb.Owner != "tblowner" {
		t.Fatalf("nested table = %+v, %v", tb, ok)
	}
	if n, ok := st.Namespace(q1); !ok || n.Owner != "schowner" {
		t.Fatalf("schema q1 = %+v, %v", n, ok)
	}
	return b, st
}

type verdict struct {
	who  string
	need access.Need
	ok   bool
}

func TestCheck(t *testing.T) {
	_, st := world(t)
	on, table, owner := access.On, access.OnTable, access.OwnerOf
	groups := []struct {
		name  string
		cases []verdict
	}{
		{"admin may do anything", []verdict{
			{"admin", on(fsm.PrivCreateCatalog), true},
			{"admin", on(fsm.PrivUseCatalog, sales...), true},
			{"admin", owner(false, sales...), true},
			{"admin", owner(false, q3...), true},
			{"admin", table(fsm.PrivModify, otherT...), true},
			{"admin", owner(true, events...), true},
			{"admin", access.ShareOwner("s1"), true},
			{"admin", access.RecipientOwner("r1"), true},
			{"admin", access.TokenOwner("tok-reader"), true},
			{"admin", access.Self("reader"), true},
		}},
		{"a principal without grants may do nothing", []verdict{
			{"nobody", on(fsm.PrivCreateCatalog), false},
			{"nobody", on(fsm.PrivUseCatalog, sales...), false},
			{"nobody", on(fsm.PrivUseSchema, q1...), false},
			{"nobody", table(fsm.PrivSelect, orders...), false},
			{"nobody", owner(false, sales...), false},
			{"nobody", owner(true, orders...), false},
			{"an unknown principal", table(fsm.PrivSelect, orders...), false},
		}},
		{"the owner of a catalog may do anything below it", []verdict{
			{"catowner", owner(false, sales...), true},
			{"catowner", on(fsm.PrivUseCatalog, sales...), true},
			{"catowner", on(fsm.PrivCreateSchema, sales...), true},
			{"catowner", on(fsm.PrivUseSchema, q1...), true},
			{"catowner", owner(false, q1...), true},
			{"catowner", on(fsm.PrivCreateTable, q3...), true},
			{"catowner", table(fsm.PrivSelect, orders...), true},
			{"catowner", table(fsm.PrivModify, orders...), true},
			{"catowner", owner(true, orders...), true},
			{"catowner", table(fsm.PrivModify, events...), true},
			{"catowner", owner(false, nested...), true},
			{"catowner", on(fsm.PrivCreateCatalog), false},
			{"catowner", on(fsm.PrivUseCatalog, "unity"), false},
			{"catowner", table(fsm.PrivSelect, otherT...), false},
		}},
		{"the owner of a schema may do anything in it, given USE CATALOG", []verdict{
			{"schowner", owner(false, q1...), true},
			{"schowner", on(fsm.PrivUseSchema, q1...), true},
			{"schowner", on(fsm.PrivCreateTable, q1...), true},
			{"schowner", on(fsm.PrivCreateSchema, q1...), true},
			{"schowner", table(fsm.PrivSelect, orders...), true},
			{"schowner", owner(true, orders...), true},
			{"schowner", owner(false, nested...), true},
			{"schowner", table(fsm.PrivModify, events...), true},
			{"schowner", owner(false, sales...), false},
			{"schowner", on(fsm.PrivCreateSchema, sales...), false},
			{"schowner", on(fsm.PrivUseSchema, q2...), false},
			{"schowner", table(fsm.PrivSelect, t2...), false},
			{"lostowner", on(fsm.PrivUseSchema, q3...), false},
			{"lostowner", owner(false, q3...), false},
			{"lostowner", on(fsm.PrivCreateTable, q3...), false},
		}},
		{"the owner of a table owns only the table", []verdict{
			{"tblowner", owner(true, orders...), true},
			{"tblowner", table(fsm.PrivSelect, orders...), true},
			{"tblowner", table(fsm.PrivModify, orders...), true},
			{"tblowner", owner(true, events...), true},
			{"tblowner", table(fsm.PrivSelect, events...), true},
			{"tblowner", owner(false, q1...), false},
			{"tblowner", on(fsm.PrivCreateTable, q1...), false},
			{"tblowner", owner(true, items...), false},
			{"tblowner", table(fsm.PrivSelect, items...), false},
			{"tblowner", owner(false, nested...), false},
		}},
		{"SELECT on a catalog reaches its tables through USE CATALOG and USE SCHEMA", []verdict{
			{"reader", table(fsm.PrivSelect, orders...), true},
			{"reader", table(fsm.PrivSelect, items...), true},
			{"reader", table(fsm.PrivSelect, t2...), true},
			{"reader", table(fsm.PrivSelect, events...), true},
			{"reader", on(fsm.PrivSelect, q1...), true},
			{"reader", table(fsm.PrivModify, orders...), false},
			{"reader", owner(true, orders...), false},
			{"reader", on(fsm.PrivCreateTable, q1...), false},
			{"reader", on(fsm.PrivCreateSchema, sales...), false},
			{"reader", table(fsm.PrivSelect, otherT...), false},
			{"selectonly", table(fsm.PrivSelect, orders...), false},
			{"selectonly", on(fsm.PrivUseCatalog, sales...), false},
			{"usecatonly", on(fsm.PrivUseCatalog, sales...), true},
			{"usecatonly", on(fsm.PrivUseSchema, q1...), false},
			{"usecatonly", table(fsm.PrivSelect, orders...), false},
		}},
		{"USE SCHEMA granted on a catalog reaches its schemas and namespaces", []verdict{
			{"reader", on(fsm.PrivUseSchema, q1...), true},
			{"reader", on(fsm.PrivUseSchema, q2...), true},
			{"reader", on(fsm.PrivUseSchema, q3...), true},
			{"reader", on(fsm.PrivUseSchema, nested...), true},
			{"reader", on(fsm.PrivUseSchema, "other", "s"), false},
		}},
		{"grants on a schema or table reach only below it", []verdict{
			{"tblreader", table(fsm.PrivSelect, orders...), true},
			{"tblreader", table(fsm.PrivModify, orders...), false},
			{"tblreader", table(fsm.PrivSelect, items...), false},
			{"tblreader", on(fsm.PrivUseSchema, q2...), false},
			{"nestreader", on(fsm.PrivUseSchema, nested...), true},
			{"nestreader", table(fsm.PrivSelect, events...), true},
			{"nestreader", table(fsm.PrivSelect, orders...), false},
			{"nestreader", table(fsm.PrivModify, events...), false},
			{"writer", table(fsm.PrivModify, t2...), true},
			{"writer", table(fsm.PrivSelect, t2...), false},
		}},
		{"ALL PRIVILEGES holds every privilege, not ownership", []verdict{
			{"allpriv", on(fsm.PrivUseCatalog, sales...), true},
			{"allpriv", on(fsm.PrivUseSchema, q3...), true},
			{"allpriv", on(fsm.PrivCreateSchema, sales...), true},
			{"allpriv", on(fsm.PrivCreateTable, q2...), true},
			{"allpriv", table(fsm.PrivSelect, orders...), true},
			{"allpriv", table(fsm.PrivModify, events...), true},
			{"allpriv", owner(true, orders...), false},
			{"allpriv", owner(false, sales...), false},
			{"allpriv", on(fsm.PrivCreateCatalog), false},
			{"allpriv", on(fsm.PrivUseCatalog, "other"), false},
		}},
		{"CREATE TABLE on a schema", []verdict{
			{"creator", on(fsm.PrivCreateTable, q1...), true},
			{"creator", table(fsm.PrivCreateTable, p("sales", "q1", "fresh")...), true},
			{"creator", on(fsm.PrivCreateTable, nested...), true},
			{"creator", on(fsm.PrivCreateTable, q2...), false},
			{"creator", table(fsm.PrivCreateTable, p("sales", "q2", "fresh")...), false},
			{"creator", on(fsm.PrivCreateSchema, q1...), false},
			{"creator", table(fsm.PrivSelect, orders...), false},
		}},
		{"CREATE CATALOG on the metastore", []verdict{
			{"catcreator", on(fsm.PrivCreateCatalog), true},
			{"catcreator", on(fsm.PrivUseCatalog, sales...), false},
			{"catcreator", on(fsm.PrivCreateSchema, sales...), false},
			{"reader", on(fsm.PrivCreateCatalog), false},
		}},
		{"a missing catalog or namespace is allowed, for the handler to answer 404", []verdict{
			{"nobody", on(fsm.PrivUseCatalog, "nope"), true},
			{"nobody", on(fsm.PrivCreateSchema, "nope"), true},
			{"nobody", owner(false, "nope"), true},
			{"nobody", on(fsm.PrivUseSchema, "nope", "s"), true},
			{"nobody", on(fsm.PrivUseSchema, "sales", "nope"), true},
			{"nobody", owner(false, "sales", "nope"), true},
			{"nobody", on(fsm.PrivCreateTable, "sales", "nope"), true},
			{"nobody", table(fsm.PrivSelect, "nope", "s", "t"), true},
			{"nobody", table(fsm.PrivSelect, "sales", "nope", "t"), true},
			{"nobody", table(fsm.PrivModify, "sales", "q1", "nope", "t"), true},
			{"nobody", on(fsm.PrivUseSchema, "sales", "q1", "nope"), true},
		}},
		{"a missing table still takes the privilege on its namespace", []verdict{
			{"nobody", table(fsm.PrivSelect, "sales", "q1", "ghost"), false},
			{"selectonly", table(fsm.PrivSelect, "sales", "q1", "ghost"), false},
			{"reader", table(fsm.PrivSelect, "sales", "q1", "ghost"), true},
			{"reader", table(fsm.PrivModify, "sales", "q1", "ghost"), false},
			{"reader", table(fsm.PrivSelect, "sales", "q1", "nested", "ghost"), true},
			{"nobody", table(fsm.PrivSelect, "sales", "q1", "nested", "ghost"), false},
			{"tblreader", table(fsm.PrivSelect, "sales", "q1", "ghost"), false},
			{"catowner", table(fsm.PrivModify, "sales", "q1", "ghost"), true},
			{"nobody", owner(true, "sales", "q1", "ghost"), true},
		}},
		{"shares, recipients and tokens take their owner", []verdict{
			{"shareowner", access.ShareOwner("s1"), true},
			{"shareowner", access.ShareOwner("S1"), true},
			{"nobody", access.ShareOwner("s1"), false},
			{"nobody", access.ShareOwner("S1"), false},
			{"catowner", access.ShareOwner("s1"), false},
			{"nobody", access.ShareOwner("missing"), true},
			{"recowner", access.RecipientOwner("r1"), true},
			{"shareowner", access.RecipientOwner("r1"), false},
			{"nobody", access.RecipientOwner("missing"), true},
			{"reader", access.TokenOwner("tok-reader"), true},
			{"nobody", access.TokenOwner("tok-reader"), false},
			{"nobody", access.TokenOwner("missing"), true},
			{"reader", access.Self("reader"), true},
			{"nobody", access.Self("reader"), false},
			{"reader", access.Self("Reader"), false},
		}},
		{"what an anonymous caller made is nobody's", []verdict{
			{"", access.ShareOwner("anon"), false},
			{"", access.Self(""), false},
			{"", owner(false, "anoncat"), false},
			{"", on(fsm.PrivUseCatalog, "anoncat"), false},
			{"nobody", access.ShareOwner("anon"), false},
		}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.cases {
				err := access.Check(st, tc.who, tc.need)
				if (err == nil) != tc.ok {
					t.Errorf("Check(%q, %s) = %v, want allowed %v", tc.who, tc.need, err, tc.ok)
				}
				if got := access.Allowed(st, tc.who, tc.need); got != tc.ok {
					t.Errorf("Allowed(%q, %s) = %v, want %v", tc.who, tc.need, got, tc.ok)
				}
			}
		})
	}
}

func TestGrantChangesTakeEffect(t *testing.T) {
	b, st := world(t)
	need := access.OnTable(fsm.PrivSelect, orders...)
	if !access.Allowed(st, "reader", need) {
		t.Fatal("reader cannot read before the revoke")
	}
	revoked := b.apply(b.revoke("reader", fsm.SecurableCatalog, sales, fsm.PrivSelect))
	if access.Allowed(revoked, "reader", need) {
		t.Fatal("reader still reads once SELECT is revoked")
	}
	if !access.Allowed(revoked, "reader", access.On(fsm.PrivUseSchema, q1...)) {
		t.Fatal("revoking SELECT took USE SCHEMA")
	}
	if !access.Allowed(st, "reader", need) {
		t.Fatal("a new state changed the verdict on the old one")
	}
	granted := b.apply(b.grant("nobody", fsm.SecurableCatalog, sales, fsm.PrivUseCatalog, fsm.PrivUseSchema),
		b.grant("nobody", fsm.SecurableTable, orders, fsm.PrivAll))
	if !access.Allowed(granted, "nobody", access.OnTable(fsm.PrivModify, orders...)) || access.Allowed(granted, "nobody", access.OnTable(fsm.PrivSelect, items...)) {
		t.Fatal("ALL PRIVILEGES on a table does not reach exactly that table")
	}
	deleted := b.apply(&fsm.DeletePrincipal{Stamp: b.by("admin"), Name: "nobody"})
	if access.Allowed(deleted, "nobody", access.OnTable(fsm.PrivModify, orders...)) {
		t.Fatal("a deleted principal keeps its grants")
	}
	promoted := b.apply(b.principal("root2", true))
	if !access.IsAdmin(promoted, "root2") || access.IsAdmin(promoted, "reader") || access.IsAdmin(promoted, "ghost") {
		t.Fatal("IsAdmin does not follow the Admin flag")
	}
}

func TestVisible(t *testing.T) {
	_, st := world(t)
	for _, tc := range []struct {
		who   string
		table bool
		path  []string
		want  bool
	}{
		{"admin", false, sales, true},
		{"admin", true, otherT, true},
		{"reader", false, sales, true},
		{"reader", false, q1, true},
		{"reader", false, q3, true},
		{"reader", false, nested, true},
		{"reader", true, orders, true},
		{"reader", true, events, true},
		{"reader", false, p("unity"), false},
		{"reader", false, p("other"), false},
		{"reader", true, otherT, false},
		{"usecatonly", false, sales, true},
		{"usecatonly", false, q1, false},
		{"usecatonly", true, orders, false},
		{"selectonly", false, sales, false},
		{"selectonly", true, orders, false},
		{"tblreader", false, sales, true},
		{"tblreader", false, q1, true},
		{"tblreader", false, q2, false},
		{"tblreader", true, orders, true},
		{"tblreader", true, items, false},
		{"writer", true, t2, true},
		{"writer", false, q1, false},
		{"nestreader", false, nested, true},
		{"nestreader", true, events, true},
		{"nestreader", true, orders, false},
		{"catowner", false, sales, true},
		{"catowner", false, q3, true},
		{"catowner", true, events, true},
		{"catowner", false, p("other"), false},
		{"schowner", false, sales, true},
		{"lostowner", false, sales, false},
		{"schowner", false, q1, true},
		{"schowner", true, orders, true},
		{"schowner", false, q2, false},
		{"tblowner", true, orders, true},
		{"tblowner", true, items, false},
		{"lostowner", false, q3, false},
		{"nobody", false, sales, false},
		{"nobody", true, orders, false},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.who, strings.Join(tc.path, ".")), func(t *testing.T) {
			if got := access.Visible(st, tc.who, tc.table, tc.path...); got != tc.want {
				t.Fatalf("Visible = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDenial(t *testing.T) {
	_, st := world(t)
	for _, tc := range []struct {
		who  string
		need access.Need
		text string
	}{
		// A denial names the first privilege missing on the way down.
		{"nobody", access.OnTable(fsm.PrivSelect, orders...), "Principal nobody does not have USE CATALOG on catalog sales."},
		{"nobody", access.On(fsm.PrivCreateCatalog), "Principal nobody does not have CREATE CATALOG on the metastore."},
		{"nobody", access.On(fsm.PrivUseCatalog, sales...), "Principal nobody does not have USE CATALOG on catalog sales."},
		{"nobody", access.On(fsm.PrivCreateTable, q1...), "Principal nobody does not have USE CATALOG on catalog sales."},
		{"nobody", access.On(fsm.PrivUseSchema, nested...), "Principal nobody does not have USE CATALOG on catalog sales."},
		{"reader", access.OwnerOf(true, orders...), "Principal reader does not have ownership of table sales.q1.orders."},
		{"reader", access.OwnerOf(false, sales...), "Principal reader does not have ownership of catalog sales."},
		{"nobody", access.ShareOwner("s1"), "Principal nobody does not have ownership of share s1."},
		{"nobody", access.RecipientOwner("r1"), "Principal nobody does not have ownership of recipient r1."},
		{"nobody", access.TokenOwner("tok-reader"), "Principal nobody does not have ownership of token tok-reader."},
		{"nobody", access.Self("reader"), "Principal nobody does not have the identity of principal reader."},
	} {
		t.Run(tc.text, func(t *testing.T) {
			err := access.Check(st, tc.who, tc.need)
			var fe *fsm.Error
			if !errors.As(err, &fe) {
				t.Fatalf("Check = %T %v, want a *fsm.Error", err, err)
			}
			if fe.Code != fsm.CodePermissionDenied || fe.Message != tc.text || err.Error() != tc.text {
				t.Fatalf("Check = %v %q, want %v %q", fe.Code, fe.Message, fsm.CodePermissionDenied, tc.text)
			}
			if named := strings.TrimSuffix(strings.TrimPrefix(tc.text, "Principal "+tc.who+" does not have "), "."); !strings.HasPrefix(named, "USE CATALOG") && tc.need.String() != named {
				t.Fatalf("String = %q", tc.need.String())
			}
		})
	}
	if err := access.Check(st, "reader", access.OnTable(fsm.PrivSelect, orders...)); err != nil {
		t.Fatalf("an allowed need: %v", err)
	}
}

// The constructors build the needs the handlers rely on.
func TestNeeds(t *testing.T) {
	for _, tc := range []struct {
		got, want access.Need
	}{
		{access.On(fsm.PrivCreateCatalog), access.Need{Priv: fsm.PrivCreateCatalog}},
		{access.On(fsm.PrivUseSchema, q1...), access.Need{Path: q1, Priv: fsm.PrivUseSchema}},
		{access.OnTable(fsm.PrivSelect, orders...), access.Need{Path: orders, Table: true, Priv: fsm.PrivSelect}},
		{access.OwnerOf(true, orders...), access.Need{Path: orders, Table: true, Owner: true}},
		{access.OwnerOf(false, sales...), access.Need{Path: sales, Owner: true}},
		{access.ShareOwner("s"), access.Need{Share: "s"}},
		{access.RecipientOwner("r"), access.Need{Recipient: "r"}},
		{access.TokenOwner("k"), access.Need{Token: "k"}},
		{access.Self("u"), access.Need{Self: "u"}},
	} {
		if fmt.Sprintf("%#v", tc.got) != fmt.Sprintf("%#v", tc.want) {
			t.Errorf("need = %#v, want %#v", tc.got, tc.want)
		}
	}
}

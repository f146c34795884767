package fsm_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// refuse is fail for the sharing commands: the refusal also leaves the
// state's digest as it was and carries no sharing entity.
func (e *env) refuse(cmd fsm.Command, code fsm.Code, substr string) *fsm.Error {
	e.t.Helper()
	before := e.m.State().Digest()
	res, _ := e.m.State().Try(e.next, cmd)
	if res.Share != nil || res.Recipient != nil || res.SigningKey != nil {
		e.t.Fatalf("%T: rejected result carries entities: %+v", cmd, res)
	}
	err := e.fail(cmd, code, substr)
	if after := e.m.State().Digest(); after != before {
		e.t.Fatalf("%T: rejected command changed the digest", cmd)
	}
	return err
}

func (e *env) createShare(name string) *fsm.Share {
	e.t.Helper()
	return e.changed(&fsm.CreateShare{Stamp: e.st(), ID: e.newID("share"), Name: name}).Share
}

// addToShare is an UpdateShare adding the tables named.
func (e *env) addToShare(share string, objects ...fsm.SharedObject) *fsm.UpdateShare {
	c := &fsm.UpdateShare{Stamp: e.st(), Name: share}
	for _, o := range objects {
		c.Updates = append(c.Updates, fsm.ShareUpdate{Action: fsm.ShareActionAdd, Object: o})
	}
	return c
}

func (e *env) share(name string) *fsm.Share {
	e.t.Helper()
	s, ok := e.m.State().Share(name)
	if !ok {
		e.t.Fatalf("share %s not found", name)
	}
	return s
}

func sharedAs(s *fsm.Share) []string {
	var out []string
	for _, o := range s.Objects {
		out = append(out, o.SharedAs)
	}
	return out
}

func TestCreateShare(t *testing.T) {
	e := newEnv(t)
	res := e.changed(&fsm.CreateShare{Stamp: e.st(), ID: "share-1", Name: "Sales", Comment: ptr("q3")})
	want := &fsm.Share{ID: "share-1", Name: "Sales", Comment: ptr("q3"), Owner: owner,
		CreatedAt: e.clock, CreatedBy: owner, UpdatedAt: e.clock}
	if !reflect.DeepEqual(res.Share, want) {
		t.Fatalf("share = %+v, want %+v", res.Share, want)
	}
	for _, name := range []string{"sales", "SALES", "Sales"} {
		if s, ok := e.m.State().Share(name); !ok || s.ID != "share-1" {
			t.Fatalf("Share(%q) = %+v, %v", name, s, ok)
		}
	}
	e.refuse(&fsm.CreateShare{Stamp: e.st(), ID: "x", Name: "SALES"}, fsm.CodeShareExists, "Share already exists: SALES")
	for _, bad := range []string{"", "a b", "a.b", "a/b", "a\tb", "a\x7fb", strings.Repeat("s", 256)} {
		e.refuse(&fsm.CreateShare{Stamp: e.st(), ID: "x", Name: bad}, fsm.CodeInvalid, "Invalid share name")
	}
	e.createShare(strings.Repeat("s", 255))
	if _, ok := e.m.State().Share("nope"); ok {
		t.Fatal("Share found a share never created")
	}
}

func TestSharesListInNameOrderAndPage(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"b", "A", "c", "D"} {
		e.createShare(n)
	}
	names := func(ss []*fsm.Share) (out []string) {
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	st := e.m.State()
	if got := names(st.Shares("", 0)); !slices.Equal(got, []string{"A", "b", "c", "D"}) {
		t.Fatalf("Shares = %v", got)
	}
	if got := names(st.Shares("B", 2)); !slices.Equal(got, []string{"c", "D"}) {
		t.Fatalf("Shares after B = %v", got)
	}
	if got := names(st.Shares("a", 1)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Shares after a, 1 = %v", got)
	}
}

func TestShareAddTable(t *testing.T) {
	e := newEnv(t)
	tb := e.createExternal("unity", "default", "events")
	e.createShare("s")
	res := e.changed(e.addToShare("S", fsm.SharedObject{Name: "unity.default.events", TableID: "ignored", Comment: ptr("c")}))
	at := e.clock
	want := fsm.SharedObject{Name: "unity.default.events", TableID: tb.ID, DataObjectType: "TABLE", SharedAs: "default.events",
		HistoryDataSharingStatus: "DISABLED", Comment: ptr("c"), AddedAt: at, AddedBy: owner}
	if len(res.Share.Objects) != 1 || !reflect.DeepEqual(res.Share.Objects[0], want) {
		t.Fatalf("objects = %+v, want %+v", res.Share.Objects, want)
	}
	if o := &res.Share.Objects[0]; o.Schema() != "default" || o.Table() != "events" {
		t.Fatalf("schema/table = %q/%q", o.Schema(), o.Table())
	}
	if res.Share.UpdatedAt != at || res.Share.UpdatedBy != owner {
		t.Fatalf("share not stamped: %+v", res.Share)
	}
	st := e.m.State()
	o, ok := e.share("s").SharedObject("DEFAULT", "Events")
	if !ok || o.TableID != tb.ID {
		t.Fatalf("SharedObject = %+v, %v", o, ok)
	}
	if got, ok := st.SharedTable(o); !ok || got.ID != tb.ID {
		t.Fatalf("SharedTable = %+v, %v", got, ok)
	}
	// Explicit settings, in the order given.
	e.createExternal("unity", "default", "clicks")
	e.changed(e.addToShare("s", fsm.SharedObject{Name: "unity.default.clicks", SharedAs: "web.Clicks",
		HistoryDataSharingStatus: "enabled", StartVersion: 3, DataObjectType: "table"}))
	s := e.share("s")
	if got := sharedAs(s); !slices.Equal(got, []string{"default.events", "web.Clicks"}) {
		t.Fatalf("shared as %v", got)
	}
	if o := s.Objects[1]; o.HistoryDataSharingStatus != "ENABLED" || o.StartVersion != 3 || o.DataObjectType != "TABLE" {
		t.Fatalf("object = %+v", o)
	}
	if got := s.Schemas(); !slices.Equal(got, []string{"default", "web"}) {
		t.Fatalf("schemas = %v", got)
	}
	// A table dropped and created again under the name is not the shared one.
	e.changed(&fsm.DeleteTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "events"})
	e.createExternal("unity", "default", "events")
	if _, ok := e.m.State().SharedTable(&s.Objects[0]); ok {
		t.Fatal("SharedTable resolved a re-created table")
	}
}

func TestShareAddRefusals(t *testing.T) {
	e := newEnv(t)
	e.createExternal("unity", "default", "events")
	e.createExternal("unity", "default", "other")
	e.createIceberg([]string{"unity", "default"}, "ice")
	e.createView([]string{"unity", "default"}, "v")
	pq := e.externalCreate("unity", "default", "pq")
	pq.Format = "PARQUET"
	e.changed(pq)
	e.createShare("s")
	e.changed(e.addToShare("s", fsm.SharedObject{Name: "unity.default.events"}))
	add := func(o fsm.SharedObject) *fsm.UpdateShare { return e.addToShare("s", o) }
	for _, tc := range []struct {
		o      fsm.SharedObject
		code   fsm.Code
		substr string
	}{
		{fsm.SharedObject{Name: "unity.default.missing"}, fsm.CodeTableNotFound, "Table not found: unity.default.missing"},
		{fsm.SharedObject{Name: "nope.default.t"}, fsm.CodeCatalogNotFound, "Catalog not found: nope"},
		{fsm.SharedObject{Name: "unity.default.ice"}, fsm.CodeUnsupportedFormat, "Only Delta tables can be shared"},
		{fsm.SharedObject{Name: "unity.default.v"}, fsm.CodeUnsupportedFormat, "Only Delta tables"},
		{fsm.SharedObject{Name: "unity.default.pq"}, fsm.CodeUnsupportedFormat, "Only Delta tables"},
		{fsm.SharedObject{Name: "default.events"}, fsm.CodeInvalid, "catalog.schema.table"},
		{fsm.SharedObject{Name: ""}, fsm.CodeInvalid, "catalog.schema.table"},
		{fsm.SharedObject{Name: "unity.default.events", SharedAs: "x.y"}, fsm.CodeInvalid, "already in share s"},
		{fsm.SharedObject{Name: "unity.default.other", SharedAs: "DEFAULT.EVENTS"}, fsm.CodeInvalid, "DEFAULT.EVENTS is already in share s"},
		{fsm.SharedObject{Name: "unity.default.other", SharedAs: "noschema"}, fsm.CodeInvalid, "must be schema.table"},
		{fsm.SharedObject{Name: "unity.default.other", SharedAs: "a b.c"}, fsm.CodeInvalid, "Invalid shared schema name"},
		{fsm.SharedObject{Name: "unity.default.other", SharedAs: "a.b.c"}, fsm.CodeInvalid, "Invalid shared table name"},
		{fsm.SharedObject{Name: "unity.default.other", DataObjectType: "VIEW"}, fsm.CodeInvalid, "only TABLE"},
		{fsm.SharedObject{Name: "unity.default.other", HistoryDataSharingStatus: "MAYBE"}, fsm.CodeInvalid, "ENABLED or DISABLED"},
		{fsm.SharedObject{Name: "unity.default.other", StartVersion: -1}, fsm.CodeInvalid, "start_version -1"},
	} {
		e.refuse(add(tc.o), tc.code, tc.substr)
	}
	e.refuse(&fsm.UpdateShare{Stamp: e.st(), Name: "missing"}, fsm.CodeShareNotFound, "Share not found: missing")
	e.refuse(&fsm.UpdateShare{Stamp: e.st(), Name: "s", Updates: []fsm.ShareUpdate{{Action: "MERGE"}}}, fsm.CodeInvalid, "Unknown share update action")
	// All or nothing: the first update applied in the transaction is dropped
	// with the refused second one.
	e.refuse(e.addToShare("s", fsm.SharedObject{Name: "unity.default.other"}, fsm.SharedObject{Name: "unity.default.missing"}),
		fsm.CodeTableNotFound, "missing")
	// The same table twice in one command.
	e.refuse(e.addToShare("s", fsm.SharedObject{Name: "unity.default.other"}, fsm.SharedObject{Name: "unity.default.other", SharedAs: "a.b"}),
		fsm.CodeInvalid, "Table unity.default.other is already in share s")
	// The same table under a new name (same uuid).
	e.changed(&fsm.RenameTable{Stamp: e.st(), CatalogName: "unity", SchemaName: "default", Name: "events", NewName: "renamed"})
	e.refuse(add(fsm.SharedObject{Name: "unity.default.renamed"}), fsm.CodeInvalid, "already in share")
	if got := sharedAs(e.share("s")); !slices.Equal(got, []string{"default.events"}) {
		t.Fatalf("shared as %v", got)
	}
}

func TestShareRemoveAndUpdateObjects(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"a", "b", "c"} {
		e.createExternal("unity", "default", n)
	}
	e.createShare("s")
	e.changed(e.addToShare("s", fsm.SharedObject{Name: "unity.default.a"}, fsm.SharedObject{Name: "unity.default.b"},
		fsm.SharedObject{Name: "unity.default.c", SharedAs: "x.c"}))
	upd := func(comment *string, us ...fsm.ShareUpdate) *fsm.UpdateShare {
		return &fsm.UpdateShare{Stamp: e.st(), Name: "s", Comment: comment, Updates: us}
	}
	e.changed(upd(nil, fsm.ShareUpdate{Action: "remove", Object: fsm.SharedObject{Name: "UNITY.Default.B"}}))
	e.changed(upd(nil, fsm.ShareUpdate{Action: "REMOVE", Object: fsm.SharedObject{SharedAs: "X.C"}}))
	if got := sharedAs(e.share("s")); !slices.Equal(got, []string{"default.a"}) {
		t.Fatalf("shared as %v", got)
	}
	e.refuse(upd(nil, fsm.ShareUpdate{Action: "REMOVE", Object: fsm.SharedObject{Name: "unity.default.b"}}),
		fsm.CodeTableNotFound, "Table unity.default.b is not in share s")
	e.refuse(upd(nil, fsm.ShareUpdate{Action: "REMOVE"}), fsm.CodeInvalid, "must name the object")

	e.changed(e.addToShare("s", fsm.SharedObject{Name: "unity.default.b"}))
	res := e.changed(upd(ptr("new comment"), fsm.ShareUpdate{Action: "UPDATE", Object: fsm.SharedObject{Name: "unity.default.a",
		SharedAs: "y.a", HistoryDataSharingStatus: "ENABLED", StartVersion: 7, Comment: ptr("oc")}}))
	a := res.Share.Objects[0]
	if a.SharedAs != "y.a" || a.HistoryDataSharingStatus != "ENABLED" || a.StartVersion != 7 || *a.Comment != "oc" ||
		*res.Share.Comment != "new comment" || res.Share.UpdatedAt != e.clock {
		t.Fatalf("updated share = %+v, object %+v", res.Share, a)
	}
	// Found by shared_as, zero values leave the settings alone.
	res = e.changed(upd(nil, fsm.ShareUpdate{Action: "UPDATE", Object: fsm.SharedObject{SharedAs: "Y.A", Comment: ptr("")}}))
	if a := res.Share.Objects[0]; a.SharedAs != "y.a" || a.StartVersion != 7 || a.HistoryDataSharingStatus != "ENABLED" || *a.Comment != "" {
		t.Fatalf("object = %+v", a)
	}
	e.refuse(upd(nil, fsm.ShareUpdate{Action: "UPDATE", Object: fsm.SharedObject{Name: "unity.default.a", SharedAs: "DEFAULT.b"}}),
		fsm.CodeInvalid, "DEFAULT.b is already in share s")
	e.refuse(upd(nil, fsm.ShareUpdate{Action: "UPDATE", Object: fsm.SharedObject{Name: "unity.default.a", HistoryDataSharingStatus: "x"}}),
		fsm.CodeInvalid, "history_data_sharing_status")
	e.refuse(upd(nil, fsm.ShareUpdate{Action: "UPDATE", Object: fsm.SharedObject{Name: "unity.default.a", StartVersion: -2}}),
		fsm.CodeInvalid, "start_version")
	e.refuse(upd(nil, fsm.ShareUpdate{Action: "UPDATE", Object: fsm.SharedObject{Name: "unity.default.c"}}),
		fsm.CodeTableNotFound, "not in share")
}

func TestDeleteShare(t *testing.T) {
	e := newEnv(t)
	sh := e.createShare("Gone")
	res := e.changed(&fsm.DeleteShare{Stamp: e.st(), Name: "GONE"})
	if res.Share.ID != sh.ID {
		t.Fatalf("deleted %+v", res.Share)
	}
	if _, ok := e.m.State().Share("gone"); ok {
		t.Fatal("share still there")
	}
	e.refuse(&fsm.DeleteShare{Stamp: e.st(), Name: "gone"}, fsm.CodeShareNotFound, "Share not found: gone")
	e.createShare("gone") // the name is free again
}

func TestSharePermissions(t *testing.T) {
	e := newEnv(t)
	e.createShare("s")
	e.createShare("t")
	e.createRecipient("Bob", "act-bob", 0)
	e.createRecipient("carol", "act-carol", 0)
	perm := func(share string, chs ...fsm.PermissionChange) *fsm.UpdateSharePermissions {
		return &fsm.UpdateSharePermissions{Stamp: e.st(), Share: share, Changes: chs}
	}
	grant := func(p string) fsm.PermissionChange {
		return fsm.PermissionChange{Principal: p, Add: []string{"SELECT"}}
	}
	revoke := func(p string) fsm.PermissionChange {
		return fsm.PermissionChange{Principal: p, Remove: []string{"select"}}
	}

	res := e.changed(perm("S", grant("CAROL"), fsm.PermissionChange{Principal: "bob", Add: []string{"Select"}}))
	if !slices.Equal(res.Share.Grants, []string{"Bob", "carol"}) || res.Share.UpdatedAt != e.clock {
		t.Fatalf("grants = %v (%+v)", res.Share.Grants, res.Share)
	}
	e.noop(perm("s", grant("bob")))
	e.changed(perm("t", grant("carol")))
	if got := shareNames(e.m.State().SharesGrantedTo("CAROL")); !slices.Equal(got, []string{"s", "t"}) {
		t.Fatalf("granted to carol: %v", got)
	}
	e.refuse(perm("s", grant("dave")), fsm.CodeRecipientNotFound, "Recipient not found: dave")
	e.refuse(perm("s", grant("")), fsm.CodeInvalid, "recipient name is required")
	e.refuse(perm("s", fsm.PermissionChange{Principal: "bob", Add: []string{"MODIFY"}}), fsm.CodeInvalid, `privilege "MODIFY"`)
	e.refuse(perm("s", revoke("bob"), grant("dave")), fsm.CodeRecipientNotFound, "dave")
	e.refuse(perm("x", grant("bob")), fsm.CodeShareNotFound, "Share not found: x")
	res = e.changed(perm("s", revoke("BOB")))
	if !slices.Equal(res.Share.Grants, []string{"carol"}) {
		t.Fatalf("grants = %v", res.Share.Grants)
	}
	if got := shareNames(e.m.State().SharesGrantedTo("bob")); len(got) != 0 {
		t.Fatalf("granted to bob: %v", got)
	}
}

func shareNames(ss []*fsm.Share) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

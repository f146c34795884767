package fsm_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/snapshot"
)

func (e *env) createNamespace(path ...string) *fsm.Namespace {
	e.t.Helper()
	return e.changed(&fsm.CreateNamespace{Stamp: e.st(), ID: e.newID("ns"), Path: path,
		Properties: map[string]string{"level": path[len(path)-1]}}).Namespace
}

func namesOf(ns []*fsm.Namespace) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.Name())
	}
	return out
}

func tableNames(ts []*fsm.Table) []string {
	out := []string{}
	for _, tb := range ts {
		out = append(out, tb.Name)
	}
	return out
}

func TestCatalogsAndSchemasAreTheFirstNamespaceLevels(t *testing.T) {
	e := newEnv(t)
	e.createCatalog("b", "")
	e.createSchema("b", "x", "")
	st := e.m.State()
	if got := namesOf(st.Namespaces(nil, "", 0)); !slices.Equal(got, []string{"b", "unity"}) {
		t.Fatalf("root namespaces = %v", got)
	}
	if got := namesOf(st.Namespaces([]string{"unity"}, "", 0)); !slices.Equal(got, []string{"default"}) {
		t.Fatalf("namespaces of unity = %v", got)
	}
	if got := namesOf(st.Namespaces(nil, "b", 1)); !slices.Equal(got, []string{"unity"}) {
		t.Fatalf("page after b = %v", got)
	}
	cat, _ := st.Catalog("unity")
	n, ok := st.Namespace([]string{"unity"})
	if !ok || n.ID != cat.ID || n.Level() != 0 || n.Comment != cat.Comment {
		t.Fatalf("catalog as namespace = %+v", n)
	}
	sch, _ := st.Schema("b", "x")
	n, ok = st.Namespace([]string{"b", "x"})
	if !ok || n.ID != sch.ID || n.Level() != 1 || !slices.Equal(n.Path, []string{"b", "x"}) {
		t.Fatalf("schema as namespace = %+v", n)
	}
	for _, p := range [][]string{nil, {"nope"}, {"b", "nope"}, {"b", "x", "nope"}} {
		if _, ok := st.Namespace(p); ok {
			t.Fatalf("namespace %v found", p)
		}
	}
}

func TestNestedNamespaces(t *testing.T) {
	e := newEnv(t)
	a := e.createNamespace("unity", "default", "a")
	e.createNamespace("unity", "default", "a", "b")
	e.createNamespace("unity", "default", "a", "c")
	e.createNamespace("unity", "default", "a1")
	if a.Level() != 2 || a.Owner != owner || a.Properties["level"] != "a" {
		t.Fatalf("created namespace = %+v", a)
	}
	st := e.m.State()
	if got := namesOf(st.Namespaces([]string{"unity", "default"}, "", 0)); !slices.Equal(got, []string{"a", "a1"}) {
		t.Fatalf("below default = %v", got)
	}
	if got := namesOf(st.Namespaces([]string{"unity", "default", "a"}, "b", 5)); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("below a after b = %v", got)
	}
	if n, ok := st.Namespace([]string{"unity", "default", "a", "b"}); !ok || n.Level() != 3 {
		t.Fatalf("a.b = %+v, %v", n, ok)
	}
	// Nested namespaces are no schemas: the schema listing is unchanged.
	if got := st.Schemas("unity", "", 0); len(got) != 1 {
		t.Fatalf("schemas = %d", len(got))
	}
	mk := func(path ...string) *fsm.CreateNamespace {
		return &fsm.CreateNamespace{Stamp: e.st(), ID: "x", Path: path}
	}
	e.fail(mk("unity", "default", "a"), fsm.CodeSchemaExists, "Namespace already exists: unity.default.a")
	e.fail(mk("unity", "default", "zz", "b"), fsm.CodeSchemaNotFound, "Namespace not found: unity.default.zz")
	e.fail(mk("unity", "nope", "a"), fsm.CodeSchemaNotFound, "Schema not found: unity.nope")
	e.fail(mk("nope", "default", "a"), fsm.CodeCatalogNotFound, "Catalog not found: nope")
	e.fail(mk("unity", "default"), fsm.CodeInvalid, "nested namespace path")
	e.fail(mk("unity", "default", ""), fsm.CodeInvalid, "nested namespace path")
	e.fail(mk("unity", "default", "a\x00b"), fsm.CodeInvalid, "nested namespace path")

	del := func(force bool, path ...string) *fsm.DeleteNamespace {
		return &fsm.DeleteNamespace{Stamp: e.st(), Path: path, Force: force}
	}
	e.fail(del(false, "unity", "default", "a"), fsm.CodeNotEmpty, "Cannot delete non-empty namespace: unity.default.a")
	e.fail(del(false, "unity", "default", "q"), fsm.CodeSchemaNotFound, "unity.default.q")
	e.fail(&fsm.DeleteSchema{Stamp: e.st(), CatalogName: "unity", Name: "default"}, fsm.CodeNotEmpty, "Cannot delete schema")
	if got := e.changed(del(false, "unity", "default", "a", "b")).Namespace; got == nil || got.Name() != "b" {
		t.Fatalf("deleted = %+v", got)
	}
	e.changed(del(true, "unity", "default", "a"))
	st = e.m.State()
	if got := namesOf(st.Namespaces([]string{"unity", "default"}, "", 0)); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("after delete = %v", got)
	}
	if _, ok := st.Namespace([]string{"unity", "default", "a", "c"}); ok {
		t.Fatal("forced delete left a child")
	}
}

// nestedState restores a state holding a table in a nested namespace
// (tables get there through restore only, for now) between two tables of
// the schema in key order.
func nestedState(t *testing.T) *fsm.State {
	e := newEnv(t)
	e.createNamespace("unity", "default", "a")
	e.createExternal("unity", "default", "a1")
	e.createExternal("unity", "default", "0")
	base := e.createExternal("unity", "default", "nested")
	var buf bytes.Buffer
	if err := snapshot.WriteState(&buf, e.m.State(), snapshot.Header{Index: e.lastIndex()}); err != nil {
		t.Fatal(err)
	}
	sr, err := snapshot.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	b := fsm.NewBuilder()
	for {
		kind, payload, err := sr.Next()
		if err != nil {
			break
		}
		if kind == fsm.RecordTable && bytes.Contains(payload, []byte(`"name":"nested"`)) {
			var m map[string]any
			if err := json.Unmarshal(payload, &m); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"nested", "t"} {
				m["subnamespace"], m["id"], m["name"] = []string{"a"}, base.ID+"-"+name, name
				nested, _ := json.Marshal(m)
				if err := b.Add(kind, nested); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := b.Add(kind, payload); err != nil {
			t.Fatal(err)
		}
	}
	return b.State()
}

func TestTablesAreKeyedUnderTheirNamespace(t *testing.T) {
	st := nestedState(t)
	ns := []string{"unity", "default", "a"}
	if got := tableNames(st.TablesIn(ns, "", 0)); !slices.Equal(got, []string{"nested", "t"}) {
		t.Fatalf("tables in unity.default.a = %v", got)
	}
	if got := tableNames(st.Tables("unity", "default", "", 0)); !slices.Equal(got, []string{"0", "a1", "nested"}) {
		t.Fatalf("tables in unity.default = %v", got)
	}
	if got := tableNames(st.Tables("unity", "default", "0", 1)); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("page after 0 = %v", got)
	}
	tb, ok := st.TableIn(ns, "t")
	if !ok || tb.FullName() != "unity.default.a.t" || !slices.Equal(tb.NamespacePath(), ns) {
		t.Fatalf("nested table = %+v, %v", tb, ok)
	}
	if _, ok := st.Table("unity", "default", "t"); ok {
		t.Fatal("a nested table is found as a table of the schema")
	}
	if flat, _ := st.TableIn([]string{"unity", "default"}, "nested"); flat == nil || len(flat.Subnamespace) != 0 {
		t.Fatalf("schema table by path = %+v", flat)
	}
	if _, _, n, _ := st.Counts(); n != 5 {
		t.Fatalf("tables = %d", n)
	}
	// The nested table and namespace survive a snapshot.
	restored, _, err := snapshot.ReadState(bytes.NewReader(writeState(t, st, 1)))
	if err != nil || restored.Digest() != st.Digest() {
		t.Fatalf("restore: %v", err)
	}
	if _, ok := restored.TableIn(ns, "t"); !ok {
		t.Fatal("nested table lost in a snapshot")
	}
	if _, ok := restored.Namespace(ns); !ok {
		t.Fatal("nested namespace lost in a snapshot")
	}
}

func TestRenamesMoveNestedNamespacesAndTables(t *testing.T) {
	m := fsm.NewMachine()
	m.Replace(nestedState(t))
	apply := func(c fsm.Command) fsm.Result {
		b, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Apply(100, b)
		if err != nil || res.Err != nil {
			t.Fatalf("%T: %v %+v", c, err, res.Err)
		}
		return res
	}
	apply(&fsm.UpdateSchema{Name: "default", CatalogName: "unity", NewName: "main"})
	apply(&fsm.UpdateCatalog{Name: "unity", NewName: "top"})
	st := m.State()
	ns := []string{"top", "main", "a"}
	if n, ok := st.Namespace(ns); !ok || !slices.Equal(n.Path, ns) {
		t.Fatalf("moved namespace = %+v, %v", n, ok)
	}
	tb, ok := st.TableIn(ns, "t")
	if !ok || tb.FullName() != "top.main.a.t" {
		t.Fatalf("moved nested table = %+v, %v", tb, ok)
	}
	if got := tableNames(st.Tables("top", "main", "", 0)); !slices.Equal(got, []string{"0", "a1", "nested"}) {
		t.Fatalf("moved schema tables = %v", got)
	}
	if _, ok := st.Namespace([]string{"unity", "default", "a"}); ok {
		t.Fatal("old path still holds the namespace")
	}
	apply(&fsm.DeleteCatalog{Name: "top", Force: true})
	st = m.State()
	if _, _, n, _ := st.Counts(); n != 0 || len(st.TablesIn(ns, "", 0)) != 0 {
		t.Fatalf("tables left after forced catalog delete: %d", n)
	}
	if _, ok := st.Namespace(ns); ok {
		t.Fatal("nested namespace left after forced catalog delete")
	}
}

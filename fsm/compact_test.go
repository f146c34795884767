package fsm_test

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/snapshot"
)

func mapPointer(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }

func bytesPointer(b []byte) *byte { return unsafe.SliceData(b) }

// Commits and backfills leave the properties alone, so versions share
// one map; a metadata change gets its own and leaves the old one as it was.
func TestCommitsShareProperties(t *testing.T) {
	e := newEnv(t)
	tb := e.createManaged("unity", "default", "t")
	e.commitThrough(tb, 1, 3)
	e.ok(e.backfill(tb, 2))
	cur := e.reload(tb)
	if mapPointer(cur.Properties) != mapPointer(tb.Properties) {
		t.Fatal("a data-only commit copied the properties map")
	}
	before := jsonOf(t, cur.Properties)
	e.changed(e.upd(cur, func(c *fsm.UpdateTable) { c.SetProperties = &map[string]string{"a": "b"} }))
	next := e.reload(tb)
	if mapPointer(next.Properties) == mapPointer(cur.Properties) || next.Properties["a"] != "b" {
		t.Fatal("set-properties did not get a map of its own")
	}
	if jsonOf(t, cur.Properties) != before || jsonOf(t, tb.Properties) != before {
		t.Fatal("set-properties changed an earlier version's properties")
	}
}

// Tables with the same schema hold one copy of it, whether created by
// commands or restored from a snapshot, and the restored state is equal.
func TestIdenticalSchemasAreShared(t *testing.T) {
	e := newEnv(t)
	a := e.createManaged("unity", "default", "a")
	b := e.createManaged("unity", "default", "b")
	if bytesPointer(a.Columns) != bytesPointer(b.Columns) || &a.ColumnNames[0] != &b.ColumnNames[0] {
		t.Fatal("identical schemas are stored twice")
	}
	if a.Properties[fsm.PropTableID] != a.ID || b.Properties[fsm.PropTableID] != b.ID {
		t.Fatal("table id property")
	}
	other := e.createManagedWith("unity", "default", "c", func(c *fsm.CreateTable) {
		c.Columns.Columns = []byte(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}`)
		c.Columns.Names = []string{"id"}
	})
	if bytesPointer(other.Columns) == bytesPointer(a.Columns) || string(other.Columns) == string(a.Columns) {
		t.Fatal("a different schema was shared")
	}

	data := writeState(t, e.m.State(), e.lastIndex())
	restored, _, err := snapshot.ReadState(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := restored.Table("unity", "default", "a")
	rb, _ := restored.Table("unity", "default", "b")
	if bytesPointer(ra.Columns) != bytesPointer(rb.Columns) || ra.Properties[fsm.PropTableID] != ra.ID {
		t.Fatal("restored tables do not share their schema")
	}
	if !bytes.Equal(writeState(t, restored, e.lastIndex()), data) || restored.Digest() != e.m.State().Digest() {
		t.Fatal("the restored state differs")
	}
}

package statecount_test

import (
	"fmt"
	"testing"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/internal/statecount"
)

// catalog applies commands to a machine through the real apply path.
type catalog struct {
	t    *testing.T
	m    *fsm.Machine
	next uint64
}

func newCatalog(t *testing.T) *catalog {
	c := &catalog{t: t, m: fsm.NewMachine(), next: 1}
	c.apply(&fsm.Init{Stamp: fsm.Stamp{Time: 1}, MetastoreID: "ms", StorageRoot: "s3://b/root", CatalogID: "c", SchemaID: "s"})
	return c
}

func (c *catalog) apply(cmd fsm.Command) {
	c.t.Helper()
	if res := c.m.ApplyCommand(c.next, cmd); res.Err != nil {
		c.t.Fatalf("%T: %v", cmd, res.Err.Message)
	}
	c.next++
}

// addTables creates n external tables of format.
func (c *catalog) addTables(n int, format string) {
	for range n {
		name := fmt.Sprintf("t%d", c.next)
		c.apply(&fsm.CreateTable{Stamp: fsm.Stamp{Time: int64(c.next)}, ID: name, CatalogName: fsm.DefaultCatalog,
			SchemaName: fsm.DefaultSchema, Name: name, Format: format, TableType: fsm.TableExternal,
			Location: "s3://b/ext/" + name})
	}
}

func TestSmallCatalogIsCountedEveryTime(t *testing.T) {
	c := newCatalog(t)
	var counter statecount.Counter
	c.addTables(2, "PARQUET")
	objects, tables := counter.Counts(c.m.State())
	if objects["table"] != 2 || tables["PARQUET"] != 2 {
		t.Fatalf("objects %v tables %v", objects, tables)
	}
	c.addTables(1, "CSV")
	objects, tables = counter.Counts(c.m.State())
	if objects["table"] != 3 || objects["catalog"] != 1 || tables["PARQUET"] != 2 || tables["CSV"] != 1 {
		t.Fatalf("after one more: objects %v tables %v", objects, tables)
	}
}

func TestLargeCatalogKeepsKindCountsFresh(t *testing.T) {
	c := newCatalog(t)
	var counter statecount.Counter
	c.addTables(10_000, "PARQUET")
	if _, tables := counter.Counts(c.m.State()); tables["PARQUET"] != 10_000 {
		t.Fatalf("tables %v", tables)
	}
	c.addTables(1, "CSV")
	objects, tables := counter.Counts(c.m.State())
	if objects["table"] != 10_001 {
		t.Fatalf("kind counts lag: %v", objects)
	}
	if tables["PARQUET"] != 10_000 || tables["CSV"] != 0 {
		t.Fatalf("a large catalog's tables were walked again at once: %v", tables)
	}
	tables["PARQUET"] = 0 // the maps are the caller's
	if _, again := counter.Counts(c.m.State()); again["PARQUET"] != 10_000 {
		t.Fatalf("the cache was changed through a returned map: %v", again)
	}
}

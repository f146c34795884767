package fsm

import (
	"strings"

	iradix "github.com/hashicorp/go-immutable-radix"
)

// State is an immutable snapshot of the whole catalog. Readers may keep a
// *State as long as they like; appliers derive a new one through a tx.
type State struct {
	meta     *Metastore
	catalogs *iradix.Tree // name -> *Catalog
	schemas  *iradix.Tree // catalog\x00schema -> *Schema
	tables   *iradix.Tree // catalog\x00schema\x00table -> *Table
	staging  *iradix.Tree // id -> *StagingTable
}

// NewState returns an empty, uninitialised state.
func NewState() *State {
	return &State{
		catalogs: iradix.New(), schemas: iradix.New(), tables: iradix.New(),
		staging: iradix.New(),
	}
}

const sep = "\x00"

func schemaKey(catalog, schema string) []byte { return []byte(catalog + sep + schema) }
func tableKey(catalog, schema, table string) []byte {
	return []byte(catalog + sep + schema + sep + table)
}

// Metastore returns the cluster identity, or nil before initialisation.
func (s *State) Metastore() *Metastore { return s.meta }

// Initialized reports whether the Init command has been applied.
func (s *State) Initialized() bool { return s.meta != nil }

// Catalog returns a catalog by name.
func (s *State) Catalog(name string) (*Catalog, bool) {
	return get[*Catalog](s.catalogs, []byte(name))
}

// Schema returns a schema by catalog and name.
func (s *State) Schema(catalog, name string) (*Schema, bool) {
	return get[*Schema](s.schemas, schemaKey(catalog, name))
}

// Table returns a table by its three-part name.
func (s *State) Table(catalog, schema, name string) (*Table, bool) {
	return get[*Table](s.tables, tableKey(catalog, schema, name))
}

// StagingTable returns a staging table by id.
func (s *State) StagingTable(id string) (*StagingTable, bool) {
	return get[*StagingTable](s.staging, []byte(id))
}

// StagingByLocation returns the staging table that reserved a location.
func (s *State) StagingByLocation(loc string) (*StagingTable, bool) {
	return stagingByLocation(s.staging, loc)
}

// stagingByLocation finds a staging row by its location without an index
// of its own: every staging location ends in the row's id
// (<managed root>/tables/<id>), so the id is looked up and the whole
// location compared.
func stagingByLocation(g getter, loc string) (*StagingTable, bool) {
	st, ok := get[*StagingTable](g, []byte(loc[strings.LastIndexByte(loc, '/')+1:]))
	if !ok || st.Location != loc {
		return nil, false
	}
	return st, true
}

// Catalogs lists catalogs in name order, starting after the name `after`
// (exclusive; "" for the start), at most limit (<=0: all).
func (s *State) Catalogs(after string, limit int) []*Catalog {
	var out []*Catalog
	walkAfter(s.catalogs, nil, after, limit, func(v any) { out = append(out, v.(*Catalog)) })
	return out
}

// Schemas lists a catalog's schemas in name order, paged like Catalogs.
func (s *State) Schemas(catalog, after string, limit int) []*Schema {
	var out []*Schema
	walkAfter(s.schemas, []byte(catalog+sep), after, limit, func(v any) { out = append(out, v.(*Schema)) })
	return out
}

// Tables lists a schema's tables in name order, paged like Catalogs.
func (s *State) Tables(catalog, schema, after string, limit int) []*Table {
	var out []*Table
	walkAfter(s.tables, []byte(catalog+sep+schema+sep), after, limit, func(v any) { out = append(out, v.(*Table)) })
	return out
}

// Counts returns the number of catalogs, schemas, tables and tracked commits.
func (s *State) Counts() (catalogs, schemas, tables, commits int) {
	s.tables.Root().Walk(func(_ []byte, v any) bool {
		commits += len(v.(*Table).Commits)
		return false
	})
	return s.catalogs.Len(), s.schemas.Len(), s.tables.Len(), commits
}

// walkAfter visits the values under prefix whose key suffix sorts after
// `after`, in key order, stopping after limit values (limit <= 0: all).
func walkAfter(t *iradix.Tree, prefix []byte, after string, limit int, visit func(any)) {
	it := t.Root().Iterator()
	start := append(append([]byte{}, prefix...), after...)
	if after != "" {
		start = append(start, 0) // first key strictly greater than prefix+after
	}
	it.SeekLowerBound(start)
	n := 0
	for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
		if len(k) < len(prefix) || string(k[:len(prefix)]) != string(prefix) {
			break
		}
		if containsSep(k[len(prefix):]) {
			continue // a deeper level (never happens with the key layout, kept for safety)
		}
		visit(v)
		n++
		if limit > 0 && n >= limit {
			break
		}
	}
}

func containsSep(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

// tx is a write transaction over a State. Appliers mutate through it and
// either commit (new State) or drop it (nothing happened).
type tx struct {
	meta                               *Metastore
	catalogs, schemas, tables, staging *iradix.Txn
}

func (s *State) begin() *tx {
	return &tx{
		meta: s.meta, catalogs: s.catalogs.Txn(), schemas: s.schemas.Txn(),
		tables: s.tables.Txn(), staging: s.staging.Txn(),
	}
}

func (t *tx) commit() *State {
	return &State{
		meta: t.meta, catalogs: t.catalogs.CommitOnly(), schemas: t.schemas.CommitOnly(),
		tables: t.tables.CommitOnly(), staging: t.staging.CommitOnly(),
	}
}

func (t *tx) catalog(name string) (*Catalog, bool) { return get[*Catalog](t.catalogs, []byte(name)) }

func (t *tx) schema(catalog, name string) (*Schema, bool) {
	return get[*Schema](t.schemas, schemaKey(catalog, name))
}

func (t *tx) table(catalog, schema, name string) (*Table, bool) {
	return get[*Table](t.tables, tableKey(catalog, schema, name))
}

// getter is what radix trees and their transactions share for lookups.
type getter interface {
	Get(k []byte) (any, bool)
}

// get looks a key up and returns its value with its concrete type.
func get[T any](g getter, key []byte) (T, bool) {
	v, ok := g.Get(key)
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

func (t *tx) putCatalog(c *Catalog) { t.catalogs.Insert([]byte(c.Name), c) }
func (t *tx) putSchema(s *Schema)   { t.schemas.Insert(schemaKey(s.CatalogName, s.Name), s) }
func (t *tx) putTable(tb *Table) {
	t.tables.Insert(tableKey(tb.CatalogName, tb.SchemaName, tb.Name), tb)
}
func (t *tx) putStaging(st *StagingTable) {
	t.staging.Insert([]byte(st.ID), st)
}

// keysWithPrefix returns the keys under prefix in order.
func keysWithPrefix(txn *iradix.Txn, prefix []byte) [][]byte {
	var keys [][]byte
	txn.Root().WalkPrefix(prefix, func(k []byte, _ any) bool {
		keys = append(keys, append([]byte{}, k...))
		return false
	})
	return keys
}

// resolveSchema looks up catalog and schema, with the 404 of the first
// missing level.
func (t *tx) resolveSchema(catalog, schema string) (*Catalog, *Schema, *Error) {
	c, ok := t.catalog(catalog)
	if !ok {
		return nil, nil, Errf(CodeCatalogNotFound, "Catalog not found: %s", catalog)
	}
	s, ok := t.schema(catalog, schema)
	if !ok {
		return nil, nil, Errf(CodeSchemaNotFound, "Schema not found: %s.%s", catalog, schema)
	}
	return c, s, nil
}

// resolveTable looks up a table with the 404 of the first missing level.
func (t *tx) resolveTable(catalog, schema, name string) (*Table, *Error) {
	if _, _, err := t.resolveSchema(catalog, schema); err != nil {
		return nil, err
	}
	tb, ok := t.table(catalog, schema, name)
	if !ok {
		return nil, Errf(CodeTableNotFound, "Table not found: %s.%s.%s", catalog, schema, name)
	}
	return tb, nil
}

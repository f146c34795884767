package fsm

import "strings"

// StagingTable is a location handed out for a managed table before it is
// created. The row survives creation (Committed) as UC does.
type StagingTable struct {
	ID          string `json:"id"`
	CatalogName string `json:"catalog_name"`
	SchemaName  string `json:"schema_name"`
	Name        string `json:"name"`
	Location    string `json:"location"`
	CreatedBy   string `json:"created_by,omitempty"`
	CreatedAt   int64  `json:"created_at"`
	Committed   bool   `json:"committed,omitempty"`
}

// CmdCreateStagingTable is the command type of CreateStagingTable.
const CmdCreateStagingTable CommandType = 8

// RecordStaging is the record kind of a staging table.
const RecordStaging byte = 5

var stagingTree = newCountedTree("staging", "staging_table") // id -> *StagingTable

func init() {
	registerCommand(CmdCreateStagingTable, applyCreateStagingTable)
	registerRecord(RecordStaging, treeRecord(stagingTree, nil, func(b *Builder, st *StagingTable) {
		b.shareStaging(st)
		b.t.putStaging(st)
	}))
}

// CreateStagingTable reserves a managed location for a table to be created.
type CreateStagingTable struct {
	Stamp
	ID          string `json:"id"`
	CatalogName string `json:"catalog_name"`
	SchemaName  string `json:"schema_name"`
	Name        string `json:"name"`
}

func (*CreateStagingTable) Type() CommandType { return CmdCreateStagingTable }

// StagingTable returns a staging table by id.
func (s *State) StagingTable(id string) (*StagingTable, bool) {
	return get[*StagingTable](s.trees[stagingTree], []byte(id))
}

// StagingByLocation returns the staging table that reserved a location.
func (s *State) StagingByLocation(loc string) (*StagingTable, bool) {
	return stagingByLocation(s.trees[stagingTree], loc)
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

func (t *tx) putStaging(st *StagingTable) { t.tree(stagingTree).Insert([]byte(st.ID), st) }

// shareStaging points a restored staging row's strings at the equal ones
// its schema and table already hold (their record kinds come first).
func (b *Builder) shareStaging(st *StagingTable) {
	if s, ok := b.t.schema(st.CatalogName, st.SchemaName); ok {
		st.CatalogName, st.SchemaName = s.CatalogName, s.Name
	}
	if tb, ok := b.t.table(st.CatalogName, st.SchemaName, st.Name); ok && tb.ID == st.ID {
		if tb.Location == st.Location {
			st.Location = tb.Location
		}
		st.ID, st.Name = tb.ID, tb.Name
	}
}

// managedRoot is where managed tables of a schema live: the schema's
// managed location, else the catalog's, else the metastore root.
func (t *tx) managedRoot(c *Catalog, s *Schema) string {
	switch {
	case s.StorageLocation != "":
		return s.StorageLocation
	case c.StorageLocation != "":
		return c.StorageLocation
	case t.meta != nil && t.meta.StorageRoot != "":
		return strings.TrimRight(t.meta.StorageRoot, "/") + "/" + unityStorage
	}
	return ""
}

func applyCreateStagingTable(t *tx, _ uint64, c *CreateStagingTable) Result {
	cat, sch, err := t.resolveSchema(c.CatalogName, c.SchemaName)
	if err != nil {
		return failed(err)
	}
	root := t.managedRoot(cat, sch)
	if root == "" {
		return failed(Invalidf("None of catalog, schema or storage-root.tables server property has managed location configured."))
	}
	if _, ok := t.table(c.CatalogName, c.SchemaName, c.Name); ok {
		return failed(Errf(CodeTableExists, "Table already exists: %s", c.Name))
	}
	if err := t.tableTwinError(c.Rules, []string{c.CatalogName, c.SchemaName}, c.Name, ""); err != nil {
		return failed(err)
	}
	st := &StagingTable{ID: c.ID, CatalogName: sch.CatalogName, SchemaName: sch.Name, Name: c.Name,
		Location: root + "/tables/" + c.ID, CreatedBy: c.Caller, CreatedAt: c.Time}
	t.putStaging(st)
	return Result{Staging: st}
}

// claimStaging finds the staging row for a managed create by location,
// checks ownership and identity, and marks it committed.
func (t *tx) claimStaging(c *CreateTable) (*StagingTable, *Error) {
	st, ok := stagingByLocation(t.tree(stagingTree), c.Location)
	if !ok {
		return nil, Errf(CodeStagingNotFound, "Staging table not found: %s", c.Location)
	}
	if st.CreatedBy != "" && c.Caller != st.CreatedBy {
		return nil, Errf(CodePermissionDenied, "User attempts to create table on a staging location without ownership: %s", c.Location)
	}
	if st.Committed {
		return nil, Invalidf("Staging table already committed: %s", c.Location)
	}
	got, ok := c.Properties[PropTableID]
	if !ok {
		return nil, Invalidf("Properties does not contain %s.", PropTableID)
	}
	if got != st.ID {
		return nil, Invalidf("the table id (%s) does not match the properties %s(%s).", st.ID, PropTableID, got)
	}
	done := *st
	done.Committed = true
	t.putStaging(&done)
	return &done, nil
}

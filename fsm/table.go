package fsm

import (
	"slices"
	"strconv"
	"strings"
)

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

func applyCreateStagingTable(t *tx, c *CreateStagingTable) Result {
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
	st := &StagingTable{ID: c.ID, CatalogName: sch.CatalogName, SchemaName: sch.Name, Name: c.Name,
		Location: root + "/tables/" + c.ID, CreatedBy: c.Caller, CreatedAt: c.Time}
	t.putStaging(st)
	return Result{Staging: st}
}

func applyCreateTable(t *tx, index uint64, c *CreateTable) Result {
	_, sch, err := t.resolveSchema(c.CatalogName, c.SchemaName)
	if err != nil {
		return failed(err)
	}
	if _, ok := t.table(c.CatalogName, c.SchemaName, c.Name); ok {
		return failed(Errf(CodeTableExists, "Table already exists: %s.%s.%s", c.CatalogName, c.SchemaName, c.Name))
	}
	if c.TableType == TableExternal {
		if err := t.checkOutsideManagedStorage(c.Location); err != nil {
			return failed(err)
		}
	}
	id, location := c.ID, c.Location
	if c.TableType == TableManaged {
		st, err := t.claimStaging(c)
		if err != nil {
			return failed(err)
		}
		id, location = st.ID, st.Location // equal to the command's; shared with the staging row
	}
	tb := &Table{ID: id, CatalogName: sch.CatalogName, SchemaName: sch.Name, Name: c.Name,
		Format: canonEnum(c.Format), Type: canonEnum(c.TableType), Location: location, Comment: c.Comment,
		PartitionColumns: slices.Clone(c.PartitionColumns), Uniform: c.Uniform,
		Owner: c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time, MetaIndex: index}
	tb.setColumns(c.Columns.Columns, c.Columns.Names)
	tb.Properties = compactProperties(c.Properties, id)
	if !c.PlainProperties {
		applyProtocol(tb.Properties, c.Protocol, false)
		applyDomainMetadata(tb.Properties, c.DomainMetadata)
		tb.Properties[PropLastCommitTs] = strconv.FormatInt(c.LastCommitTimestampMs, 10)
		tb.Properties[PropLastUpdate] = "0"
	}
	t.putTable(tb)
	return Result{Table: tb}
}

// claimStaging finds the staging row for a managed create by location,
// checks ownership and identity, and marks it committed.
func (t *tx) claimStaging(c *CreateTable) (*StagingTable, *Error) {
	st, ok := stagingByLocation(t.staging, c.Location)
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

func applyDeleteTable(t *tx, c *DeleteTable) Result {
	tb, err := t.resolveTable(c.CatalogName, c.SchemaName, c.Name)
	if err != nil {
		return failed(err)
	}
	t.tables.Delete(tableKey(c.CatalogName, c.SchemaName, c.Name))
	return Result{Table: tb}
}

func applyRenameTable(t *tx, index uint64, c *RenameTable) Result {
	old, err := t.resolveTable(c.CatalogName, c.SchemaName, c.Name)
	if err != nil {
		return failed(err)
	}
	if c.NewName == c.Name {
		return Result{Table: old, NoOp: true}
	}
	if _, exists := t.table(c.CatalogName, c.SchemaName, c.NewName); exists {
		return failed(Errf(CodeTableExists, "Table already exists: %s", c.NewName))
	}
	tb := old.clone()
	tb.Name = c.NewName
	tb.UpdatedAt, tb.UpdatedBy, tb.MetaIndex = max(c.Time, old.UpdatedAt), c.Caller, index
	t.tables.Delete(tableKey(c.CatalogName, c.SchemaName, c.Name))
	t.putTable(tb)
	return Result{Table: tb}
}

// checkOutsideManagedStorage refuses an external location that contains
// the metastore's managed storage.
func (t *tx) checkOutsideManagedStorage(loc string) *Error {
	if t.meta == nil || t.meta.StorageRoot == "" {
		return nil
	}
	managed := strings.TrimRight(t.meta.StorageRoot, "/") + "/" + unityStorage
	if managed == loc || strings.HasPrefix(managed, strings.TrimRight(loc, "/")+"/") {
		return Invalidf("External table storage location '%s' must not contain the managed storage location '%s'.", loc, managed)
	}
	return nil
}

package fsm

import (
	"slices"
	"strings"
)

// Command types of Iceberg views.
const (
	CmdCreateIcebergView  CommandType = 20
	CmdReplaceIcebergView CommandType = 21
	CmdDropIcebergView    CommandType = 22
	CmdRenameIcebergView  CommandType = 23
)

func init() {
	registerCommand(CmdCreateIcebergView, applyCreateIcebergView)
	registerCommand(CmdReplaceIcebergView, applyReplaceIcebergView)
	registerCommand(CmdDropIcebergView, applyDropIcebergView)
	registerCommand(CmdRenameIcebergView, applyRenameIcebergView)
}

// An Iceberg view is a Table of Format ICEBERG and Type VIEW whose Iceberg
// state points at its view-metadata file, which the HTTP layer writes
// create-only before proposing, as it does a table's. Views and tables
// share names: no view may take a table's name, of any format, and no
// table a view's. Table commands never act on views, nor view commands on
// tables.
//
// A view holds no data, so it has no location: it takes no place in the
// location index and never overlaps a table. The location its metadata
// names is where its metadata files go, nothing more.

// IsView reports whether the table is an Iceberg view.
func (t *Table) IsView() bool {
	return t.Type == TableView && t.Format == FormatIceberg && t.Iceberg != nil
}

// CreateIcebergView creates an Iceberg view in a namespace (a schema or a
// namespace below one) whose first metadata file the HTTP layer has
// written at MetadataLocation. ID is the metadata's view uuid; Properties
// mirror the metadata's.
type CreateIcebergView struct {
	Stamp
	ID               string            `json:"id"`
	Namespace        []string          `json:"namespace"`
	Name             string            `json:"name"`
	MetadataLocation string            `json:"metadata_location"`
	Properties       map[string]string `json:"properties,omitempty"`
	Comment          *string           `json:"comment,omitempty"`
}

// ReplaceIcebergView moves a view's metadata pointer from
// BaseMetadataLocation, the metadata the HTTP layer applied the
// requirements and updates to, to MetadataLocation, the file it then wrote.
// A view that has moved on from the base fails with
// CodeRequirementConflict; an entry applied before (pointer at the new
// location, the previous one at the base) is a replay and a NoOp.
// Properties mirror the new metadata's when they change (nil: unchanged).
type ReplaceIcebergView struct {
	Stamp
	Namespace            []string           `json:"namespace"`
	Name                 string             `json:"name"`
	BaseMetadataLocation string             `json:"base_metadata_location"`
	MetadataLocation     string             `json:"metadata_location"`
	Properties           *map[string]string `json:"properties,omitempty"`
}

// DropIcebergView removes a view from the catalog. Its metadata files are
// the HTTP layer's business.
type DropIcebergView struct {
	Stamp
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// RenameIcebergView renames a view and may move it to another namespace
// of the same catalog.
type RenameIcebergView struct {
	Stamp
	Namespace    []string `json:"namespace"`
	Name         string   `json:"name"`
	NewNamespace []string `json:"new_namespace"`
	NewName      string   `json:"new_name"`
}

func (*CreateIcebergView) Type() CommandType  { return CmdCreateIcebergView }
func (*ReplaceIcebergView) Type() CommandType { return CmdReplaceIcebergView }
func (*DropIcebergView) Type() CommandType    { return CmdDropIcebergView }
func (*RenameIcebergView) Type() CommandType  { return CmdRenameIcebergView }

// check refuses what no state could accept.
func (c *CreateIcebergView) check() *Error {
	if err := tableRefError(c.Namespace, c.Name); err != nil {
		return err
	}
	if c.ID == "" || c.MetadataLocation == "" {
		return Invalidf("An Iceberg view needs a uuid and a metadata location: %s", c.Name)
	}
	return nil
}

func applyCreateIcebergView(t *tx, index uint64, c *CreateIcebergView) Result {
	if err := c.check(); err != nil {
		return failed(err)
	}
	if err := t.namespaceExists(c.Namespace); err != nil {
		return failed(err)
	}
	if err := t.nameFree(c.Rules, c.Namespace, c.Name, ""); err != nil {
		return failed(err)
	}
	v := &Table{ID: c.ID, Name: c.Name, Format: FormatIceberg, Type: TableView,
		Comment: c.Comment, Properties: compactProperties(c.Properties, c.ID),
		Iceberg: &IcebergState{MetadataLocation: c.MetadataLocation},
		Owner:   c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time, MetaIndex: index}
	t.placeIn(v, c.Namespace)
	t.putTable(v)
	return Result{Table: v}
}

// nameFree refuses a name a table or a view already has and, under
// rules from RulesCaseNames on, one differing only in case from theirs;
// except is the name a rename in the same namespace starts from.
func (t *tx) nameFree(rules uint16, namespace []string, name, except string) *Error {
	other, ok := t.tableIn(namespace, name)
	if !ok {
		return t.tableTwinError(rules, namespace, name, except)
	}
	kind := "Table"
	if other.IsView() {
		kind = "View"
	}
	return Errf(CodeTableExists, "%s already exists: %s.%s", kind, strings.Join(namespace, "."), name)
}

// resolveView is resolveTableIn for a view: a table is not one.
func (t *tx) resolveView(namespace []string, name string) (*Table, *Error) {
	v, err := t.resolveTableIn(namespace, name)
	if err != nil {
		if err.Code == CodeTableNotFound {
			err = Errf(CodeTableNotFound, "View not found: %s", strings.Join(append(slices.Clone(namespace), name), "."))
		}
		return nil, err
	}
	if !v.IsView() {
		return nil, Errf(CodeTableNotFound, "View not found: %s is a table", v.FullName())
	}
	return v, nil
}

func (c *ReplaceIcebergView) check() *Error {
	if err := tableRefError(c.Namespace, c.Name); err != nil {
		return err
	}
	if c.BaseMetadataLocation == "" || c.MetadataLocation == "" || c.BaseMetadataLocation == c.MetadataLocation {
		return Invalidf("A view replace of %s needs distinct base and new metadata locations", c.Name)
	}
	return nil
}

func applyReplaceIcebergView(t *tx, index uint64, c *ReplaceIcebergView) Result {
	if err := c.check(); err != nil {
		return failed(err)
	}
	old, err := t.resolveView(c.Namespace, c.Name)
	if err != nil {
		return failed(err)
	}
	if cur := old.Iceberg; cur.MetadataLocation == c.MetadataLocation && cur.PreviousMetadataLocation == c.BaseMetadataLocation {
		return Result{Table: old, NoOp: true}
	}
	if cur := old.Iceberg.MetadataLocation; cur != c.BaseMetadataLocation {
		return failed(Errf(CodeRequirementConflict, "Replace failed for view %s: base metadata location %s is not current (%s)",
			old.FullName(), c.BaseMetadataLocation, cur))
	}
	v := old.clone()
	v.Iceberg = &IcebergState{MetadataLocation: c.MetadataLocation, PreviousMetadataLocation: c.BaseMetadataLocation,
		MetadataVersion: old.Iceberg.MetadataVersion + 1}
	if c.Properties != nil {
		v.Properties = compactProperties(*c.Properties, v.ID)
	}
	v.UpdatedAt, v.UpdatedBy, v.MetaIndex = max(c.Time, old.UpdatedAt), c.Caller, index
	t.putTable(v)
	return Result{Table: v}
}

func applyDropIcebergView(t *tx, _ uint64, c *DropIcebergView) Result {
	v, err := t.resolveView(c.Namespace, c.Name)
	if err != nil {
		return failed(err)
	}
	t.tree(tableTree).Delete(v.key())
	return Result{Table: v}
}

func applyRenameIcebergView(t *tx, index uint64, c *RenameIcebergView) Result {
	old, err := t.resolveView(c.Namespace, c.Name)
	if err != nil {
		return failed(err)
	}
	return t.moveTable(index, c.Stamp, old, c.Namespace, c.NewNamespace, c.NewName)
}

// ViewIn returns a view by the path of its namespace and its name; a
// table of the name is not one.
func (s *State) ViewIn(namespace []string, name string) (*Table, bool) {
	v, ok := s.TableIn(namespace, name)
	if !ok || !v.IsView() {
		return nil, false
	}
	return v, true
}

// ViewsIn lists the views directly in a namespace in name order, paged
// like Catalogs.
func (s *State) ViewsIn(namespace []string, after string, limit int) []*Table {
	return s.TablesInWhere(namespace, after, limit, (*Table).IsView)
}

// TablesInWhere lists the tables directly in a namespace that keep
// accepts, in name order, paged like Catalogs (limit counts the kept).
func (s *State) TablesInWhere(namespace []string, after string, limit int, keep func(*Table) bool) []*Table {
	if len(namespace) < 2 {
		return nil
	}
	var out []*Table
	walkAfterWhere(s.trees[tableTree], childPrefix(namespace), after, limit,
		func(v any) bool { return keep(v.(*Table)) }, func(v any) { out = append(out, v.(*Table)) })
	return out
}

package fsm

import "maps"

// Schema groups tables inside a catalog: level 1 of the namespace tree.
type Schema struct {
	ID              string            `json:"id"`
	CatalogName     string            `json:"catalog_name"`
	Name            string            `json:"name"`
	Comment         string            `json:"comment,omitempty"`
	Properties      map[string]string `json:"properties,omitempty"`
	StorageRoot     string            `json:"storage_root,omitempty"`
	StorageLocation string            `json:"storage_location,omitempty"`
	Owner           string            `json:"owner,omitempty"`
	CreatedAt       int64             `json:"created_at"`
	CreatedBy       string            `json:"created_by,omitempty"`
	UpdatedAt       int64             `json:"updated_at"`
	UpdatedBy       string            `json:"updated_by,omitempty"`
}

// FullName is "catalog.schema".
func (s *Schema) FullName() string { return s.CatalogName + "." + s.Name }

// Command types of schemas.
const (
	CmdCreateSchema CommandType = 5
	CmdUpdateSchema CommandType = 6
	CmdDeleteSchema CommandType = 7
)

// RecordSchema is the record kind of a schema.
const RecordSchema byte = 3

var schemaTree = newCountedTree("schemas", "schema") // catalog\x00schema -> *Schema

func init() {
	registerCommand(CmdCreateSchema, applyCreateSchema)
	registerCommand(CmdUpdateSchema, applyUpdateSchema)
	registerCommand(CmdDeleteSchema, applyDeleteSchema)
	registerRecord(RecordSchema, treeRecord(schemaTree, nil, func(b *Builder, s *Schema) { b.t.putSchema(s) }))
	registerChildren(schemaTree, renamedSchema)
	onDeleteBelow(schemaTree, func(t *tx, v any) { t.dropGrants(SecurableSchema, v.(*Schema).ID) })
}

// CreateSchema creates a schema in a catalog.
type CreateSchema struct {
	Stamp
	ID          string            `json:"id"`
	CatalogName string            `json:"catalog_name"`
	Name        string            `json:"name"`
	Comment     string            `json:"comment,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	StorageRoot string            `json:"storage_root,omitempty"`
}

// UpdateSchema changes a schema's comment, properties or name.
type UpdateSchema struct {
	Stamp
	CatalogName string             `json:"catalog_name"`
	Name        string             `json:"name"`
	NewName     string             `json:"new_name,omitempty"`
	Comment     *string            `json:"comment,omitempty"`
	Properties  *map[string]string `json:"properties,omitempty"`
}

// DeleteSchema deletes a schema; Force also deletes its tables.
type DeleteSchema struct {
	Stamp
	CatalogName string `json:"catalog_name"`
	Name        string `json:"name"`
	Force       bool   `json:"force,omitempty"`
}

func (*CreateSchema) Type() CommandType { return CmdCreateSchema }
func (*UpdateSchema) Type() CommandType { return CmdUpdateSchema }
func (*DeleteSchema) Type() CommandType { return CmdDeleteSchema }

// Schema returns a schema by catalog and name.
func (s *State) Schema(catalog, name string) (*Schema, bool) {
	return get[*Schema](s.trees[schemaTree], schemaKey(catalog, name))
}

// Schemas lists a catalog's schemas in name order, paged like Catalogs.
func (s *State) Schemas(catalog, after string, limit int) []*Schema {
	var out []*Schema
	walkAfter(s.trees[schemaTree], childPrefix([]string{catalog}), after, limit, func(v any) { out = append(out, v.(*Schema)) })
	return out
}

func (t *tx) schema(catalog, name string) (*Schema, bool) {
	return get[*Schema](t.tree(schemaTree), schemaKey(catalog, name))
}

// renamedSchema is a schema of a renamed catalog (level 0).
func renamedSchema(v any, _ int, name string) ([]byte, any) {
	s := *v.(*Schema)
	s.CatalogName = name
	return schemaKey(s.CatalogName, s.Name), &s
}

func (t *tx) putSchema(s *Schema) { t.tree(schemaTree).Insert(schemaKey(s.CatalogName, s.Name), s) }

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

func applyCreateSchema(t *tx, _ uint64, c *CreateSchema) Result {
	if _, ok := t.catalog(c.CatalogName); !ok {
		return failed(Errf(CodeCatalogNotFound, "Catalog not found: %s", c.CatalogName))
	}
	if _, ok := t.schema(c.CatalogName, c.Name); ok {
		return failed(Errf(CodeSchemaExists, "Schema already exists: %s.%s", c.CatalogName, c.Name))
	}
	if err := t.caseTwinError(c.Rules, schemaTree, CodeSchemaExists, "Schema", []string{c.CatalogName}, c.Name, ""); err != nil {
		return failed(err)
	}
	if err := t.checkRootLocation(c.Rules, c.StorageRoot); err != nil {
		return failed(err)
	}
	s := &Schema{ID: c.ID, CatalogName: c.CatalogName, Name: c.Name, Comment: c.Comment,
		Properties: maps.Clone(c.Properties), StorageRoot: c.StorageRoot,
		StorageLocation: managedLocation(c.StorageRoot, "schemas", c.ID),
		Owner:           c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time}
	t.putSchema(s)
	return Result{Schema: s}
}

func applyUpdateSchema(t *tx, _ uint64, c *UpdateSchema) Result {
	_, old, err := t.resolveSchema(c.CatalogName, c.Name)
	if err != nil {
		return failed(err)
	}
	s := *old
	if c.Comment != nil {
		s.Comment = *c.Comment
	}
	if c.Properties != nil {
		s.Properties = maps.Clone(*c.Properties)
	}
	s.UpdatedAt, s.UpdatedBy = max(c.Time, old.UpdatedAt), c.Caller
	if c.NewName != "" && c.NewName != c.Name {
		if _, exists := t.schema(c.CatalogName, c.NewName); exists {
			return failed(Errf(CodeSchemaExists, "Schema already exists: %s.%s", c.CatalogName, c.NewName))
		}
		parent := []string{c.CatalogName}
		if err := t.caseTwinError(c.Rules, schemaTree, CodeSchemaExists, "Schema", parent, c.NewName, c.Name); err != nil {
			return failed(err)
		}
		s.Name = c.NewName
		t.tree(schemaTree).Delete(schemaKey(c.CatalogName, c.Name))
		t.moveBelow([]string{c.CatalogName, c.Name}, c.NewName)
	}
	t.putSchema(&s)
	return Result{Schema: &s}
}

func applyDeleteSchema(t *tx, _ uint64, c *DeleteSchema) Result {
	_, s, err := t.resolveSchema(c.CatalogName, c.Name)
	if err != nil {
		return failed(err)
	}
	path := []string{c.CatalogName, c.Name}
	if !c.Force && t.hasChildren(path) {
		return failed(Errf(CodeNotEmpty, "Cannot delete schema with tables: %s.%s", c.CatalogName, c.Name))
	}
	t.deleteBelow(path)
	t.tree(schemaTree).Delete(schemaKey(c.CatalogName, c.Name))
	t.dropGrants(SecurableSchema, s.ID)
	return Result{Schema: s}
}

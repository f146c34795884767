package fsm

import (
	"maps"
	"strings"
)

// Names of what a new cluster holds, as Unity Catalog OSS ships.
const (
	DefaultCatalog = "unity"
	DefaultSchema  = "default"
)

// unityStorage is the managed-storage path segment UC uses.
const unityStorage = "__unitystorage"

func applyInit(t *tx, c *Init) Result {
	if t.meta != nil {
		return Result{NoOp: true}
	}
	t.meta = &Metastore{ID: c.MetastoreID, StorageRoot: c.StorageRoot, CreatedAt: c.Time}
	cat := &Catalog{ID: c.CatalogID, Name: DefaultCatalog, Comment: "Main catalog",
		CreatedAt: c.Time, UpdatedAt: c.Time, CreatedBy: c.Caller, Owner: c.Caller}
	t.putCatalog(cat)
	t.putSchema(&Schema{ID: c.SchemaID, CatalogName: DefaultCatalog, Name: DefaultSchema,
		Comment: "Default schema", CreatedAt: c.Time, UpdatedAt: c.Time, CreatedBy: c.Caller, Owner: c.Caller})
	return Result{Catalog: cat}
}

func managedLocation(root, kind, id string) string {
	if root == "" {
		return ""
	}
	return strings.TrimRight(root, "/") + "/" + unityStorage + "/" + kind + "/" + id
}

func applyCreateCatalog(t *tx, c *CreateCatalog) Result {
	if _, ok := t.catalog(c.Name); ok {
		return failed(Errf(CodeCatalogExists, "Catalog already exists: %s", c.Name))
	}
	cat := &Catalog{ID: c.ID, Name: c.Name, Comment: c.Comment, Properties: maps.Clone(c.Properties),
		StorageRoot: c.StorageRoot, StorageLocation: managedLocation(c.StorageRoot, "catalogs", c.ID),
		Owner: c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time}
	t.putCatalog(cat)
	return Result{Catalog: cat}
}

func applyUpdateCatalog(t *tx, c *UpdateCatalog) Result {
	old, ok := t.catalog(c.Name)
	if !ok {
		return failed(Errf(CodeCatalogNotFound, "Catalog not found: %s", c.Name))
	}
	cat := *old
	if c.Comment != nil {
		cat.Comment = *c.Comment
	}
	if c.Properties != nil {
		cat.Properties = maps.Clone(*c.Properties)
	}
	cat.UpdatedAt, cat.UpdatedBy = max(c.Time, old.UpdatedAt), c.Caller
	if c.NewName != "" && c.NewName != c.Name {
		if _, exists := t.catalog(c.NewName); exists {
			return failed(Errf(CodeCatalogExists, "Catalog already exists: %s", c.NewName))
		}
		cat.Name = c.NewName
		t.catalogs.Delete([]byte(c.Name))
		moveCatalogChildren(t, c.Name, c.NewName)
	}
	t.putCatalog(&cat)
	return Result{Catalog: &cat}
}

// moveCatalogChildren re-keys every schema and table of a renamed catalog.
func moveCatalogChildren(t *tx, from, to string) {
	prefix := []byte(from + sep)
	for _, k := range keysWithPrefix(t.schemas, prefix) {
		v, _ := t.schemas.Delete(k)
		s := *v.(*Schema)
		s.CatalogName = to
		t.putSchema(&s)
	}
	for _, k := range keysWithPrefix(t.tables, prefix) {
		v, _ := t.tables.Delete(k)
		tb := v.(*Table).clone()
		tb.CatalogName = to
		t.putTable(tb)
	}
}

func applyDeleteCatalog(t *tx, c *DeleteCatalog) Result {
	cat, ok := t.catalog(c.Name)
	if !ok {
		return failed(Errf(CodeCatalogNotFound, "Catalog not found: %s", c.Name))
	}
	prefix := []byte(c.Name + sep)
	schemas := keysWithPrefix(t.schemas, prefix)
	if len(schemas) > 0 && !c.Force {
		return failed(Errf(CodeNotEmpty, "Cannot delete catalog with schemas: %s", c.Name))
	}
	for _, k := range schemas {
		t.schemas.Delete(k)
	}
	t.tables.DeletePrefix(prefix)
	t.catalogs.Delete([]byte(c.Name))
	return Result{Catalog: cat}
}

func applyCreateSchema(t *tx, c *CreateSchema) Result {
	if _, ok := t.catalog(c.CatalogName); !ok {
		return failed(Errf(CodeCatalogNotFound, "Catalog not found: %s", c.CatalogName))
	}
	if _, ok := t.schema(c.CatalogName, c.Name); ok {
		return failed(Errf(CodeSchemaExists, "Schema already exists: %s.%s", c.CatalogName, c.Name))
	}
	s := &Schema{ID: c.ID, CatalogName: c.CatalogName, Name: c.Name, Comment: c.Comment,
		Properties: maps.Clone(c.Properties), StorageRoot: c.StorageRoot,
		StorageLocation: managedLocation(c.StorageRoot, "schemas", c.ID),
		Owner:           c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time}
	t.putSchema(s)
	return Result{Schema: s}
}

func applyUpdateSchema(t *tx, c *UpdateSchema) Result {
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
		s.Name = c.NewName
		t.schemas.Delete(schemaKey(c.CatalogName, c.Name))
		for _, k := range keysWithPrefix(t.tables, []byte(c.CatalogName+sep+c.Name+sep)) {
			v, _ := t.tables.Delete(k)
			tb := v.(*Table).clone()
			tb.SchemaName = c.NewName
			t.putTable(tb)
		}
	}
	t.putSchema(&s)
	return Result{Schema: &s}
}

func applyDeleteSchema(t *tx, c *DeleteSchema) Result {
	_, s, err := t.resolveSchema(c.CatalogName, c.Name)
	if err != nil {
		return failed(err)
	}
	prefix := []byte(c.CatalogName + sep + c.Name + sep)
	if len(keysWithPrefix(t.tables, prefix)) > 0 && !c.Force {
		return failed(Errf(CodeNotEmpty, "Cannot delete schema with tables: %s.%s", c.CatalogName, c.Name))
	}
	t.tables.DeletePrefix(prefix)
	t.schemas.Delete(schemaKey(c.CatalogName, c.Name))
	return Result{Schema: s}
}

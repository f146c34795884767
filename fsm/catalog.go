package fsm

import (
	"maps"
	"strings"
)

// Catalog is the root of a namespace tree.
type Catalog struct {
	ID              string            `json:"id"`
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

// Command types of catalogs.
const (
	CmdCreateCatalog CommandType = 2
	CmdUpdateCatalog CommandType = 3
	CmdDeleteCatalog CommandType = 4
)

// RecordCatalog is the record kind of a catalog.
const RecordCatalog byte = 2

var catalogTree = newCountedTree("catalogs", "catalog") // name -> *Catalog

func init() {
	registerCommand(CmdCreateCatalog, applyCreateCatalog)
	registerCommand(CmdUpdateCatalog, applyUpdateCatalog)
	registerCommand(CmdDeleteCatalog, applyDeleteCatalog)
	registerRecord(RecordCatalog, treeRecord(catalogTree, nil, func(b *Builder, c *Catalog) { b.t.putCatalog(c) }))
}

// CreateCatalog creates a catalog.
type CreateCatalog struct {
	Stamp
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Comment     string            `json:"comment,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	StorageRoot string            `json:"storage_root,omitempty"` // normalised
}

// UpdateCatalog changes a catalog's comment, properties or name.
type UpdateCatalog struct {
	Stamp
	Name       string             `json:"name"`
	NewName    string             `json:"new_name,omitempty"`
	Comment    *string            `json:"comment,omitempty"`
	Properties *map[string]string `json:"properties,omitempty"`
}

// DeleteCatalog deletes a catalog; Force also deletes what it contains.
type DeleteCatalog struct {
	Stamp
	Name  string `json:"name"`
	Force bool   `json:"force,omitempty"`
}

func (*CreateCatalog) Type() CommandType { return CmdCreateCatalog }
func (*UpdateCatalog) Type() CommandType { return CmdUpdateCatalog }
func (*DeleteCatalog) Type() CommandType { return CmdDeleteCatalog }

// Catalog returns a catalog by name.
func (s *State) Catalog(name string) (*Catalog, bool) {
	return get[*Catalog](s.trees[catalogTree], []byte(name))
}

// Catalogs lists catalogs in name order, starting after the name `after`
// (exclusive; "" for the start), at most limit (<=0: all).
func (s *State) Catalogs(after string, limit int) []*Catalog {
	var out []*Catalog
	walkAfter(s.trees[catalogTree], nil, after, limit, func(v any) { out = append(out, v.(*Catalog)) })
	return out
}

func (t *tx) catalog(name string) (*Catalog, bool) {
	return get[*Catalog](t.tree(catalogTree), []byte(name))
}

func (t *tx) putCatalog(c *Catalog) { t.tree(catalogTree).Insert([]byte(c.Name), c) }

// unityStorage is the managed-storage path segment UC uses.
const unityStorage = "__unitystorage"

func managedLocation(root, kind, id string) string {
	if root == "" {
		return ""
	}
	return strings.TrimRight(root, "/") + "/" + unityStorage + "/" + kind + "/" + id
}

func applyCreateCatalog(t *tx, _ uint64, c *CreateCatalog) Result {
	if _, ok := t.catalog(c.Name); ok {
		return failed(Errf(CodeCatalogExists, "Catalog already exists: %s", c.Name))
	}
	if err := t.caseTwinError(c.Rules, catalogTree, CodeCatalogExists, "Catalog", nil, c.Name, ""); err != nil {
		return failed(err)
	}
	if err := t.checkRootLocation(c.Rules, c.StorageRoot); err != nil {
		return failed(err)
	}
	cat := &Catalog{ID: c.ID, Name: c.Name, Comment: c.Comment, Properties: maps.Clone(c.Properties),
		StorageRoot: c.StorageRoot, StorageLocation: managedLocation(c.StorageRoot, "catalogs", c.ID),
		Owner: c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time}
	t.putCatalog(cat)
	return Result{Catalog: cat}
}

func applyUpdateCatalog(t *tx, _ uint64, c *UpdateCatalog) Result {
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
		if err := t.caseTwinError(c.Rules, catalogTree, CodeCatalogExists, "Catalog", nil, c.NewName, c.Name); err != nil {
			return failed(err)
		}
		cat.Name = c.NewName
		t.tree(catalogTree).Delete([]byte(c.Name))
		t.moveBelow([]string{c.Name}, c.NewName)
	}
	t.putCatalog(&cat)
	return Result{Catalog: &cat}
}

func applyDeleteCatalog(t *tx, _ uint64, c *DeleteCatalog) Result {
	cat, ok := t.catalog(c.Name)
	if !ok {
		return failed(Errf(CodeCatalogNotFound, "Catalog not found: %s", c.Name))
	}
	path := []string{c.Name}
	if hasPrefix(t.tree(schemaTree), childPrefix(path)) && !c.Force {
		return failed(Errf(CodeNotEmpty, "Cannot delete catalog with schemas: %s", c.Name))
	}
	t.deleteBelow(path)
	t.tree(catalogTree).Delete([]byte(c.Name))
	t.dropGrants(SecurableCatalog, cat.ID)
	return Result{Catalog: cat}
}

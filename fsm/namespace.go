package fsm

import (
	"maps"
	"slices"
	"strings"
)

// The namespace tree. A catalog is a root (path [catalog]) and its schemas
// are at level 1 (path [catalog, schema]), exactly as UC REST and the Delta
// API show them. Protocols whose namespaces nest (Iceberg, Lance) add
// levels below a schema: [catalog, schema, a, b, ...].
//
// Key scheme: a namespace is keyed by its path, names joined by a NUL byte;
// an object that lives in a namespace (a table) by the namespace's key, a
// NUL and its name. So "unity" is a catalog, "unity\x00default" a schema,
// "unity\x00default\x00events" a table of that schema (or, in the nested
// namespace tree, a namespace below it), and everything under a namespace,
// at any depth, shares the prefix key+NUL: deleting or renaming a
// namespace is one prefix operation per tree, and a listing skips deeper
// levels a subtree at a time. Catalogs, schemas, nested namespaces and
// tables each have their tree, so a table and a namespace may share a name.

const (
	sep     = "\x00"
	sepByte = 0
)

// pathKey is the key of a path of names.
func pathKey(path []string) []byte { return []byte(strings.Join(path, sep)) }

// childPrefix is the prefix of every key below path (all keys for the root).
func childPrefix(path []string) []byte {
	if len(path) == 0 {
		return nil
	}
	return append(pathKey(path), sepByte)
}

func schemaKey(catalog, schema string) []byte { return []byte(catalog + sep + schema) }

// Namespace is one node of the namespace tree as every protocol may see
// it. Catalogs and schemas are stored as Catalog and Schema and shown as
// namespaces on demand; levels below a schema are stored as Namespace.
type Namespace struct {
	ID         string            `json:"id"`
	Path       []string          `json:"path"`
	Comment    string            `json:"comment,omitempty"`
	Properties map[string]string `json:"properties,omitempty"`
	Owner      string            `json:"owner,omitempty"`
	CreatedAt  int64             `json:"created_at"`
	CreatedBy  string            `json:"created_by,omitempty"`
	UpdatedAt  int64             `json:"updated_at"`
	UpdatedBy  string            `json:"updated_by,omitempty"`
}

// Name is the last element of the path.
func (n *Namespace) Name() string { return n.Path[len(n.Path)-1] }

// Level is 0 for a catalog, 1 for a schema, 2 and more below.
func (n *Namespace) Level() int { return len(n.Path) - 1 }

func catalogNamespace(c *Catalog) *Namespace {
	return &Namespace{ID: c.ID, Path: []string{c.Name}, Comment: c.Comment, Properties: c.Properties, Owner: c.Owner,
		CreatedAt: c.CreatedAt, CreatedBy: c.CreatedBy, UpdatedAt: c.UpdatedAt, UpdatedBy: c.UpdatedBy}
}

func schemaNamespace(s *Schema) *Namespace {
	return &Namespace{ID: s.ID, Path: []string{s.CatalogName, s.Name}, Comment: s.Comment, Properties: s.Properties,
		Owner: s.Owner, CreatedAt: s.CreatedAt, CreatedBy: s.CreatedBy, UpdatedAt: s.UpdatedAt, UpdatedBy: s.UpdatedBy}
}

// nestedLevel is the first path length stored in the nested tree.
const nestedLevel = 3

var nestedTree = newCountedTree("namespaces", "namespace")

// RecordNamespace is the record kind of a namespace below a schema.
const RecordNamespace byte = 6

// Command types of nested namespaces.
const (
	CmdCreateNamespace CommandType = 13
	CmdDeleteNamespace CommandType = 14
)

func init() {
	registerCommand(CmdCreateNamespace, applyCreateNamespace)
	registerCommand(CmdDeleteNamespace, applyDeleteNamespace)
	registerRecord(RecordNamespace, treeRecord(nestedTree, nil, func(b *Builder, n *Namespace) { b.t.putNamespace(n) }))
	registerChildren(nestedTree, renamedNamespace)
	onDeleteBelow(nestedTree, func(t *tx, v any) { t.dropGrants(SecurableSchema, v.(*Namespace).ID) })
}

// Namespace returns the namespace at path: a catalog, a schema or a
// namespace below one.
func (s *State) Namespace(path []string) (*Namespace, bool) {
	switch len(path) {
	case 0:
		return nil, false
	case 1:
		c, ok := s.Catalog(path[0])
		if !ok {
			return nil, false
		}
		return catalogNamespace(c), true
	case 2:
		sc, ok := s.Schema(path[0], path[1])
		if !ok {
			return nil, false
		}
		return schemaNamespace(sc), true
	}
	return get[*Namespace](s.trees[nestedTree], pathKey(path))
}

// Namespaces lists the namespaces directly below parent in name order,
// paged like Catalogs: the catalogs for the root (an empty parent), a
// catalog's schemas, or the namespaces below a schema or deeper.
func (s *State) Namespaces(parent []string, after string, limit int) []*Namespace {
	var out []*Namespace
	switch len(parent) {
	case 0:
		for _, c := range s.Catalogs(after, limit) {
			out = append(out, catalogNamespace(c))
		}
	case 1:
		for _, sc := range s.Schemas(parent[0], after, limit) {
			out = append(out, schemaNamespace(sc))
		}
	default:
		walkAfter(s.trees[nestedTree], childPrefix(parent), after, limit, func(v any) { out = append(out, v.(*Namespace)) })
	}
	return out
}

// TableIn returns a table by the path of its namespace (a schema or a
// namespace below one) and its name.
func (s *State) TableIn(namespace []string, name string) (*Table, bool) {
	if len(namespace) < 2 {
		return nil, false
	}
	return get[*Table](s.trees[tableTree], tableKeyIn(namespace, name))
}

// TablesIn lists the tables directly in a namespace in name order, paged
// like Catalogs.
func (s *State) TablesIn(namespace []string, after string, limit int) []*Table {
	if len(namespace) < 2 {
		return nil
	}
	var out []*Table
	walkAfter(s.trees[tableTree], childPrefix(namespace), after, limit, func(v any) { out = append(out, v.(*Table)) })
	return out
}

func (t *tx) putNamespace(n *Namespace) { t.tree(nestedTree).Insert(pathKey(n.Path), n) }

// namespaceExists reports whether path names a catalog, schema or nested
// namespace, with the 404 of the first missing level.
func (t *tx) namespaceExists(path []string) *Error {
	if _, _, err := t.resolveSchema(path[0], path[1]); err != nil {
		return err
	}
	for i := nestedLevel; i <= len(path); i++ {
		if _, ok := t.tree(nestedTree).Get(pathKey(path[:i])); !ok {
			return Errf(CodeSchemaNotFound, "Namespace not found: %s", strings.Join(path[:i], "."))
		}
	}
	return nil
}

// CreateNamespace creates a namespace below a schema (Path has at least
// three names: catalog, schema and the new levels' names). A namespace
// below a schema is missing or taken with the schema codes
// (CodeSchemaNotFound, CodeSchemaExists), which every protocol maps to its
// missing or existing namespace.
type CreateNamespace struct {
	Stamp
	ID         string            `json:"id"`
	Path       []string          `json:"path"`
	Comment    string            `json:"comment,omitempty"`
	Properties map[string]string `json:"properties,omitempty"`
}

// DeleteNamespace deletes a namespace below a schema; Force also deletes
// the namespaces and tables below it.
type DeleteNamespace struct {
	Stamp
	Path  []string `json:"path"`
	Force bool     `json:"force,omitempty"`
}

func (*CreateNamespace) Type() CommandType { return CmdCreateNamespace }
func (*DeleteNamespace) Type() CommandType { return CmdDeleteNamespace }

func nestedPathError(path []string) *Error {
	bad := func(name string) bool { return name == "" || strings.Contains(name, sep) }
	if len(path) < nestedLevel || slices.ContainsFunc(path, bad) {
		return Invalidf("A nested namespace path needs a catalog, a schema and non-empty names below it: %q", path)
	}
	return nil
}

func applyCreateNamespace(t *tx, _ uint64, c *CreateNamespace) Result {
	if err := nestedPathError(c.Path); err != nil {
		return failed(err)
	}
	if err := t.namespaceExists(c.Path[:len(c.Path)-1]); err != nil {
		return failed(err)
	}
	if _, ok := t.tree(nestedTree).Get(pathKey(c.Path)); ok {
		return failed(Errf(CodeSchemaExists, "Namespace already exists: %s", strings.Join(c.Path, ".")))
	}
	parent, name := c.Path[:len(c.Path)-1], c.Path[len(c.Path)-1]
	if err := t.caseTwinError(c.Rules, nestedTree, CodeSchemaExists, "Namespace", parent, name, ""); err != nil {
		return failed(err)
	}
	n := &Namespace{ID: c.ID, Path: slices.Clone(c.Path), Comment: c.Comment, Properties: maps.Clone(c.Properties),
		Owner: c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time}
	t.putNamespace(n)
	return Result{Namespace: n}
}

func applyDeleteNamespace(t *tx, _ uint64, c *DeleteNamespace) Result {
	if err := nestedPathError(c.Path); err != nil {
		return failed(err)
	}
	if err := t.namespaceExists(c.Path); err != nil {
		return failed(err)
	}
	n, _ := get[*Namespace](t.tree(nestedTree), pathKey(c.Path))
	if !c.Force && t.hasChildren(c.Path) {
		return failed(Errf(CodeNotEmpty, "Cannot delete non-empty namespace: %s", strings.Join(c.Path, ".")))
	}
	t.deleteBelow(c.Path)
	t.tree(nestedTree).Delete(pathKey(c.Path))
	t.dropGrants(SecurableSchema, n.ID)
	return Result{Namespace: n}
}

// A child tree holds what lives in namespaces, keyed under their paths
// (schemas, nested namespaces, tables). Deleting a namespace deletes its
// children in every child tree; renaming one re-keys them.
type childTree struct {
	tree treeID
	// renamed returns a copy of v, whose path element `level` is renamed to
	// name, and its new key.
	renamed func(v any, level int, name string) ([]byte, any)
	// deleted, if set, sees each entry a namespace deletion removes.
	deleted func(t *tx, v any)
}

var childTrees []childTree

// registerChildren declares a tree whose keys lie under namespace paths.
func registerChildren(tree treeID, renamed func(v any, level int, name string) ([]byte, any)) {
	childTrees = append(childTrees, childTree{tree: tree, renamed: renamed})
}

// hasChildren reports whether anything lives below path.
func (t *tx) hasChildren(path []string) bool {
	for _, c := range childTrees {
		if hasPrefix(t.tree(c.tree), childPrefix(path)) {
			return true
		}
	}
	return false
}

// deleteBelow deletes everything below path.
func (t *tx) deleteBelow(path []string) {
	for _, c := range childTrees {
		if c.deleted != nil {
			t.tree(c.tree).Root().WalkPrefix(childPrefix(path), func(_ []byte, v any) bool {
				c.deleted(t, v)
				return false
			})
		}
		t.tree(c.tree).DeletePrefix(childPrefix(path))
	}
}

// onDeleteBelow has deleted called for every entry of a child tree that a
// namespace deletion takes with it (to keep an index of them current).
func onDeleteBelow(tree treeID, deleted func(t *tx, v any)) {
	for i := range childTrees {
		if childTrees[i].tree == tree {
			childTrees[i].deleted = deleted
			return
		}
	}
	panic("fsm: onDeleteBelow before registerChildren")
}

// moveBelow re-keys everything below the namespace at path, which is
// renamed to name.
func (t *tx) moveBelow(path []string, name string) {
	level := len(path) - 1
	for _, c := range childTrees {
		tree := t.tree(c.tree)
		for _, k := range keysWithPrefix(tree, childPrefix(path)) {
			v, _ := tree.Delete(k)
			tree.Insert(c.renamed(v, level, name))
		}
	}
}

func renamedNamespace(v any, level int, name string) ([]byte, any) {
	n := *v.(*Namespace)
	n.Path = slices.Clone(n.Path)
	n.Path[level] = name
	return pathKey(n.Path), &n
}

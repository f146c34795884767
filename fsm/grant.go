package fsm

import (
	"slices"
	"strings"
)

// Grants: privileges principals hold on securables, in Unity Catalog's
// model. A securable is the metastore, a catalog, a schema (or a
// namespace below one: Iceberg and Lance nest them) or a table, and its
// grants are kept under its type and id, so a rename keeps them and an
// object dropped and created again under the same name starts with none.
// Whether a principal may do something (inheritance down the tree,
// ownership, the admin) is decided outside the state machine, from what
// these records say.

// Securable types, as the permissions API names them.
const (
	SecurableMetastore = "metastore"
	SecurableCatalog   = "catalog"
	SecurableSchema    = "schema"
	SecurableTable     = "table"
)

// Privileges, as Unity Catalog spells them.
const (
	PrivCreateCatalog = "CREATE CATALOG"
	PrivUseCatalog    = "USE CATALOG"
	PrivCreateSchema  = "CREATE SCHEMA"
	PrivUseSchema     = "USE SCHEMA"
	PrivCreateTable   = "CREATE TABLE"
	PrivSelect        = "SELECT"
	PrivModify        = "MODIFY"
	PrivAll           = "ALL PRIVILEGES"
)

// grantable lists the privileges each securable type takes. A privilege
// granted on a container applies to everything below it.
var grantable = map[string][]string{
	SecurableMetastore: {PrivCreateCatalog},
	SecurableCatalog:   {PrivUseCatalog, PrivCreateSchema, PrivUseSchema, PrivCreateTable, PrivSelect, PrivModify, PrivAll},
	SecurableSchema:    {PrivUseSchema, PrivCreateSchema, PrivCreateTable, PrivSelect, PrivModify, PrivAll},
	SecurableTable:     {PrivSelect, PrivModify, PrivAll},
}

// Grantable lists the privileges a securable type takes ("": none known).
func Grantable(securableType string) []string { return slices.Clone(grantable[securableType]) }

// PrivilegeAssignment is what one principal holds on one securable.
type PrivilegeAssignment struct {
	Principal  string   `json:"principal"`
	Privileges []string `json:"privileges"` // sorted
}

// Grants are the assignments on one securable, sorted by principal.
type Grants struct {
	// Securable is the securable's key: its type, ':' and its id.
	Securable   string                `json:"securable"`
	Assignments []PrivilegeAssignment `json:"assignments"`
}

// CmdUpdatePermissions is the command type of UpdatePermissions.
const CmdUpdatePermissions CommandType = 43

// RecordGrants is the record kind of a securable's grants.
const RecordGrants byte = 13

var grantTree = newTree("grants") // securable key -> *Grants

func init() {
	registerCommand(CmdUpdatePermissions, applyUpdatePermissions)
	registerRecord(RecordGrants, treeRecord(grantTree, nil, func(b *Builder, g *Grants) {
		b.t.tree(grantTree).Insert([]byte(g.Securable), g)
	}))
}

// UpdatePermissions adds and removes privileges on one securable, named by
// its type and path (catalog, schema and further namespaces, then the
// table's name; empty for the metastore). Changes apply in order.
type UpdatePermissions struct {
	Stamp
	SecurableType string             `json:"securable_type"`
	Path          []string           `json:"path,omitempty"`
	Changes       []PermissionChange `json:"changes"`
}

func (*UpdatePermissions) Type() CommandType { return CmdUpdatePermissions }

// SecurableKey is the key grants on an object are kept under.
func SecurableKey(securableType, id string) string { return securableType + ":" + id }

// Grants returns the assignments on a securable, by its key.
func (s *State) Grants(key string) []PrivilegeAssignment {
	g, ok := get[*Grants](s.trees[grantTree], []byte(key))
	if !ok {
		return nil
	}
	return g.Assignments
}

// HasPrivilege reports whether principal holds priv (or ALL PRIVILEGES)
// on the securable of the key, by a grant on it alone.
func (s *State) HasPrivilege(key, principal, priv string) bool {
	for _, a := range s.Grants(key) {
		if a.Principal == principal {
			return slices.Contains(a.Privileges, priv) || slices.Contains(a.Privileges, PrivAll)
		}
	}
	return false
}

// MetastoreKey is the securable key of the metastore ("" before Init).
func (s *State) MetastoreKey() string {
	if s.meta == nil {
		return ""
	}
	return SecurableKey(SecurableMetastore, s.meta.ID)
}

// securable resolves a securable to its key, or the error a missing one is.
func (t *tx) securable(typ string, path []string) (string, *Error) {
	switch {
	case typ == SecurableMetastore && len(path) == 0 && t.meta != nil:
		return SecurableKey(typ, t.meta.ID), nil
	case typ == SecurableCatalog && len(path) == 1:
		c, ok := t.catalog(path[0])
		if !ok {
			return "", Errf(CodeCatalogNotFound, "Catalog not found: %s", path[0])
		}
		return SecurableKey(typ, c.ID), nil
	case typ == SecurableSchema && len(path) >= 2:
		n, err := t.namespaceAt(path)
		if err != nil {
			return "", err
		}
		return SecurableKey(typ, n), nil
	case typ == SecurableTable && len(path) >= 3:
		tb, err := t.resolveTableIn(path[:len(path)-1], path[len(path)-1])
		if err != nil {
			return "", err
		}
		return SecurableKey(typ, tb.ID), nil
	}
	return "", Invalidf("Unknown securable %s %q", typ, strings.Join(path, "."))
}

// namespaceAt returns the id of the schema or nested namespace at path.
func (t *tx) namespaceAt(path []string) (string, *Error) {
	_, sc, err := t.resolveSchema(path[0], path[1])
	if err != nil {
		return "", err
	}
	if len(path) == 2 {
		return sc.ID, nil
	}
	if err := t.namespaceExists(path); err != nil {
		return "", err
	}
	n, _ := get[*Namespace](t.tree(nestedTree), pathKey(path))
	return n.ID, nil
}

func applyUpdatePermissions(t *tx, _ uint64, c *UpdatePermissions) Result {
	key, err := t.securable(c.SecurableType, c.Path)
	if err != nil {
		return failed(err)
	}
	var old []PrivilegeAssignment
	if g, ok := get[*Grants](t.tree(grantTree), []byte(key)); ok {
		old = g.Assignments
	}
	next := slices.Clone(old)
	for _, ch := range c.Changes {
		if next, err = changeAssignments(next, c.SecurableType, ch); err != nil {
			return failed(err)
		}
	}
	g := &Grants{Securable: key, Assignments: next}
	if len(next) == 0 {
		t.tree(grantTree).Delete([]byte(key))
	} else {
		t.tree(grantTree).Insert([]byte(key), g)
	}
	return Result{Grants: g, NoOp: slices.EqualFunc(old, next, sameAssignment)}
}

func sameAssignment(a, b PrivilegeAssignment) bool {
	return a.Principal == b.Principal && slices.Equal(a.Privileges, b.Privileges)
}

// changeAssignments applies one change to assignments sorted by principal;
// a principal left with no privilege is dropped.
func changeAssignments(as []PrivilegeAssignment, typ string, ch PermissionChange) ([]PrivilegeAssignment, *Error) {
	if err := principalNameError(ch.Principal); err != nil {
		return nil, err
	}
	for _, p := range append(slices.Clone(ch.Add), ch.Remove...) {
		if !slices.Contains(grantable[typ], p) {
			return nil, Invalidf("Privilege %q cannot be granted on a %s; it takes %s", p, typ, strings.Join(grantable[typ], ", "))
		}
	}
	i, found := slices.BinarySearchFunc(as, ch.Principal, func(a PrivilegeAssignment, p string) int { return strings.Compare(a.Principal, p) })
	var privs []string
	if found {
		privs = slices.Clone(as[i].Privileges)
	}
	privs = slices.DeleteFunc(append(privs, ch.Add...), func(p string) bool { return slices.Contains(ch.Remove, p) })
	privs = sortedUnique(privs)
	switch {
	case len(privs) == 0 && found:
		return slices.Delete(as, i, i+1), nil
	case len(privs) == 0:
		return as, nil
	case found:
		as[i] = PrivilegeAssignment{Principal: ch.Principal, Privileges: privs}
		return as, nil
	}
	return slices.Insert(as, i, PrivilegeAssignment{Principal: ch.Principal, Privileges: privs}), nil
}

// dropGrants forgets the grants on an object that was deleted.
func (t *tx) dropGrants(securableType, id string) {
	t.tree(grantTree).Delete([]byte(SecurableKey(securableType, id)))
}

// dropGrantsOf removes every privilege a principal holds.
func (t *tx) dropGrantsOf(principal string) {
	type edit struct {
		key string
		as  []PrivilegeAssignment
	}
	var edits []edit
	t.tree(grantTree).Root().Walk(func(k []byte, v any) bool {
		g := v.(*Grants)
		if i := slices.IndexFunc(g.Assignments, func(a PrivilegeAssignment) bool { return a.Principal == principal }); i >= 0 {
			edits = append(edits, edit{string(k), slices.Delete(slices.Clone(g.Assignments), i, i+1)})
		}
		return false
	})
	for _, e := range edits {
		if len(e.as) == 0 {
			t.tree(grantTree).Delete([]byte(e.key))
			continue
		}
		t.tree(grantTree).Insert([]byte(e.key), &Grants{Securable: e.key, Assignments: e.as})
	}
}

// SecurableKeyOf resolves a securable, as UpdatePermissions names it, to
// the key of its grants, or the error a missing one is.
func (s *State) SecurableKeyOf(typ string, path []string) (string, *Error) {
	return s.begin().securable(typ, path)
}

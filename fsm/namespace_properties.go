package fsm

import (
	"maps"
	"slices"
	"strings"
)

// CmdUpdateNamespaceProperties sets and removes properties of a namespace.
const CmdUpdateNamespaceProperties CommandType = 19

func init() { registerCommand(CmdUpdateNamespaceProperties, applyUpdateNamespaceProperties) }

// UpdateNamespaceProperties sets Updates and removes Removals on the
// namespace at Path: a catalog, a schema or a namespace below one
// (Iceberg's updateProperties). A key may not be both set and removed.
type UpdateNamespaceProperties struct {
	Stamp
	Path     []string          `json:"path"`
	Updates  map[string]string `json:"updates,omitempty"`
	Removals []string          `json:"removals,omitempty"`
}

func (*UpdateNamespaceProperties) Type() CommandType { return CmdUpdateNamespaceProperties }

// PropertyChanges is what a property update did, each list sorted:
// Updated are the keys set, Removed the removed keys that were present,
// Missing the removed keys that were not.
type PropertyChanges struct {
	Updated []string `json:"updated"`
	Removed []string `json:"removed"`
	Missing []string `json:"missing"`
}

func (c *UpdateNamespaceProperties) check() *Error {
	bad := func(n string) bool { return n == "" || strings.Contains(n, sep) }
	if len(c.Path) == 0 || slices.ContainsFunc(c.Path, bad) {
		return Invalidf("A namespace path needs non-empty names: %q", c.Path)
	}
	for _, k := range c.Removals {
		if _, ok := c.Updates[k]; ok {
			return Invalidf("A property cannot be both set and removed: %s", k)
		}
	}
	return nil
}

// changed returns props with the update applied, and what changed.
func (c *UpdateNamespaceProperties) changed(props map[string]string) (map[string]string, *PropertyChanges) {
	out, ch := maps.Clone(props), &PropertyChanges{Updated: []string{}, Removed: []string{}, Missing: []string{}}
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Updates)) {
		out[k] = c.Updates[k]
		ch.Updated = append(ch.Updated, k)
	}
	for _, k := range slices.Compact(slices.Sorted(slices.Values(c.Removals))) {
		if _, ok := out[k]; ok {
			delete(out, k)
			ch.Removed = append(ch.Removed, k)
		} else {
			ch.Missing = append(ch.Missing, k)
		}
	}
	if len(out) == 0 {
		out = nil // as a namespace created without properties holds them
	}
	return out, ch
}

func applyUpdateNamespaceProperties(t *tx, _ uint64, c *UpdateNamespaceProperties) Result {
	if err := c.check(); err != nil {
		return failed(err)
	}
	switch len(c.Path) {
	case 1:
		return t.catalogProperties(c)
	case 2:
		return t.schemaProperties(c)
	}
	return t.nestedProperties(c)
}

func (t *tx) catalogProperties(c *UpdateNamespaceProperties) Result {
	old, ok := t.catalog(c.Path[0])
	if !ok {
		return failed(Errf(CodeCatalogNotFound, "Catalog not found: %s", c.Path[0]))
	}
	cat := *old
	props, ch := c.changed(old.Properties)
	cat.Properties, cat.UpdatedAt, cat.UpdatedBy = props, max(c.Time, old.UpdatedAt), c.Caller
	t.putCatalog(&cat)
	return Result{Catalog: &cat, Namespace: catalogNamespace(&cat), Properties: ch}
}

func (t *tx) schemaProperties(c *UpdateNamespaceProperties) Result {
	_, old, err := t.resolveSchema(c.Path[0], c.Path[1])
	if err != nil {
		return failed(err)
	}
	s := *old
	props, ch := c.changed(old.Properties)
	s.Properties, s.UpdatedAt, s.UpdatedBy = props, max(c.Time, old.UpdatedAt), c.Caller
	t.putSchema(&s)
	return Result{Schema: &s, Namespace: schemaNamespace(&s), Properties: ch}
}

func (t *tx) nestedProperties(c *UpdateNamespaceProperties) Result {
	if err := t.namespaceExists(c.Path); err != nil {
		return failed(err)
	}
	old, _ := get[*Namespace](t.tree(nestedTree), pathKey(c.Path))
	n := *old
	props, ch := c.changed(old.Properties)
	n.Properties, n.UpdatedAt, n.UpdatedBy = props, max(c.Time, old.UpdatedAt), c.Caller
	t.putNamespace(&n)
	return Result{Namespace: &n, Properties: ch}
}

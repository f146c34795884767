package fsm

import "slices"

// Command types that drop and rename Iceberg tables by namespace path.
const (
	CmdDropIcebergTable   CommandType = 17
	CmdRenameIcebergTable CommandType = 18
)

func init() {
	registerCommand(CmdDropIcebergTable, applyDropIcebergTable)
	registerCommand(CmdRenameIcebergTable, applyRenameIcebergTable)
}

// DropIcebergTable removes an Iceberg table from the catalog, freeing its
// location. Purging its files is the HTTP layer's business.
type DropIcebergTable struct {
	Stamp
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// RenameIcebergTable renames an Iceberg table and may move it to another
// namespace of the same catalog. Its location does not change.
type RenameIcebergTable struct {
	Stamp
	Namespace    []string `json:"namespace"`
	Name         string   `json:"name"`
	NewNamespace []string `json:"new_namespace"`
	NewName      string   `json:"new_name"`
}

func (*DropIcebergTable) Type() CommandType   { return CmdDropIcebergTable }
func (*RenameIcebergTable) Type() CommandType { return CmdRenameIcebergTable }

func applyDropIcebergTable(t *tx, _ uint64, c *DropIcebergTable) Result {
	tb, err := t.resolveIceberg(c.Namespace, c.Name)
	if err != nil {
		return failed(err)
	}
	t.removeTable(tb)
	return Result{Table: tb}
}

func applyRenameIcebergTable(t *tx, index uint64, c *RenameIcebergTable) Result {
	old, err := t.resolveIceberg(c.Namespace, c.Name)
	if err != nil {
		return failed(err)
	}
	return t.moveTable(index, c.Stamp, old, c.Namespace, c.NewNamespace, c.NewName)
}

// moveTable renames a resolved table or view, found in namespace ns, and
// may move it to another namespace of the same catalog (RenameIcebergTable,
// RenameIcebergView). Renaming to its own name is a NoOp.
func (t *tx) moveTable(index uint64, st Stamp, old *Table, ns, newNs []string, newName string) Result {
	if err := t.renameTarget(ns, newNs, newName); err != nil {
		return failed(err)
	}
	if slices.Equal(newNs, old.NamespacePath()) && newName == old.Name {
		return Result{Table: old, NoOp: true}
	}
	except := ""
	if slices.Equal(newNs, old.NamespacePath()) {
		except = old.Name
	}
	if err := t.nameFree(st.Rules, newNs, newName, except); err != nil {
		return failed(err)
	}
	tb := old.clone()
	t.placeIn(tb, newNs)
	tb.Name = newName
	tb.UpdatedAt, tb.UpdatedBy, tb.MetaIndex = max(st.Time, old.UpdatedAt), st.Caller, index
	t.tree(tableTree).Delete(old.key())
	t.putTable(tb)
	return Result{Table: tb}
}

// renameTarget refuses a destination that is malformed, missing or in
// another catalog.
func (t *tx) renameTarget(from, to []string, name string) *Error {
	if err := tableRefError(to, name); err != nil {
		return err
	}
	if to[0] != from[0] {
		return Invalidf("Cannot rename a table across catalogs: %s to %s", from[0], to[0])
	}
	return t.namespaceExists(to)
}

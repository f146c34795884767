package fsm

import (
	"slices"
	"strings"

	iradix "github.com/hashicorp/go-immutable-radix"
)

// Table locations may not overlap (RulesLocations): no table's location
// equals, contains or lies inside another's, no catalog or schema storage
// root lies inside a table, and no external table contains managed
// storage. The check is the state machine's, so two creates racing for
// overlapping locations cannot both pass.
//
// locationTree indexes every table by location, so that both questions
// (is a table at or above this path? below it?) are walks along one key
// rather than scans. It is derived from the tables and never persisted:
// restores rebuild it as they put tables back.
var locationTree = newTree("table locations") // overlapKey(location) -> []string table ids

// overlapKey is the form locations are compared in: schemes that name the
// same store are one (s3a is s3, abfss is abfs), and a trailing slash ends
// the path so that "t1" is not a prefix of "t10".
func overlapKey(loc string) []byte {
	for _, alias := range [][2]string{{"s3a://", "s3://"}, {"abfss://", "abfs://"}} {
		if rest, ok := strings.CutPrefix(loc, alias[0]); ok {
			loc = alias[1] + rest
		}
	}
	return []byte(strings.TrimRight(loc, "/") + "/")
}

// indexTable records a table's location.
func (t *tx) indexTable(tb *Table) {
	if tb.Location == "" {
		return
	}
	tree, key := t.tree(locationTree), overlapKey(tb.Location)
	ids, _ := get[[]string](tree, key)
	if !slices.Contains(ids, tb.ID) {
		tree.Insert(key, append(slices.Clone(ids), tb.ID))
	}
}

// unindexTable forgets a deleted table's location. A table without one
// (a view) was never indexed.
func (t *tx) unindexTable(tb *Table) {
	if tb.Location == "" {
		return
	}
	tree, key := t.tree(locationTree), overlapKey(tb.Location)
	ids, _ := get[[]string](tree, key)
	rest := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == tb.ID })
	if len(rest) == 0 {
		tree.Delete(key)
		return
	}
	tree.Insert(key, rest)
}

// tableAtOrAbove returns the location of a table at loc or containing it.
func (t *tx) tableAtOrAbove(loc string) (string, bool) {
	var found []byte
	t.tree(locationTree).Root().WalkPath(overlapKey(loc), func(k []byte, _ any) bool {
		found = k
		return true
	})
	return strings.TrimSuffix(string(found), "/"), found != nil
}

// tableBelow returns the location of a table inside loc (or at it).
func (t *tx) tableBelow(loc string) (string, bool) {
	var found []byte
	t.tree(locationTree).Root().WalkPrefix(overlapKey(loc), func(k []byte, _ any) bool {
		found = k
		return true
	})
	return strings.TrimSuffix(string(found), "/"), found != nil
}

// checkTableLocation refuses a new table whose location overlaps another
// table's, or an external one that contains managed storage.
func (t *tx) checkTableLocation(c *CreateTable) *Error {
	return t.checkNewLocation(c.Rules, c.Location, c.TableType)
}

// checkNewLocation is checkTableLocation for any command placing a table
// of the given type at loc, proposed under rules.
func (t *tx) checkNewLocation(rules uint16, loc, tableType string) *Error {
	if rules < RulesLocations {
		return nil
	}
	if other, ok := t.tableAtOrAbove(loc); ok {
		return overlapError(loc, other)
	}
	if other, ok := t.tableBelow(loc); ok {
		return overlapError(loc, other)
	}
	if tableType == TableExternal {
		if zone, ok := t.managedZoneBelow(loc); ok {
			return Invalidf("LOCATION_OVERLAP: Input path '%s' overlaps with managed storage '%s'.", loc, zone)
		}
	}
	return nil
}

func overlapError(loc, other string) *Error {
	return Invalidf("LOCATION_OVERLAP: Input path '%s' overlaps with the location of another table, '%s'.", loc, other)
}

// checkRootLocation refuses a catalog or schema storage root inside (or
// at) a table's location.
func (t *tx) checkRootLocation(rules uint16, root string) *Error {
	if rules < RulesLocations || root == "" {
		return nil
	}
	if other, ok := t.tableAtOrAbove(root); ok {
		return Invalidf("LOCATION_OVERLAP: Storage root '%s' overlaps with the location of table '%s'.", root, other)
	}
	return nil
}

// managedZoneBelow returns the managed storage of a catalog or a schema
// that lies at or inside loc (the metastore's is checkOutsideManagedStorage's).
func (t *tx) managedZoneBelow(loc string) (string, bool) {
	prefix := overlapKey(loc)
	inside := func(zone string) bool {
		return zone != "" && strings.HasPrefix(string(overlapKey(zone)), string(prefix))
	}
	for _, tree := range []treeID{catalogTree, schemaTree} {
		if zone, ok := firstZone(t.tree(tree), inside); ok {
			return zone, true
		}
	}
	return "", false
}

// firstZone walks a tree of catalogs or schemas for a managed storage
// location that inside accepts.
func firstZone(txn *iradix.Txn, inside func(string) bool) (string, bool) {
	var zone string
	txn.Root().Walk(func(_ []byte, v any) bool {
		switch x := v.(type) {
		case *Catalog:
			zone = x.StorageLocation
		case *Schema:
			zone = x.StorageLocation
		}
		return inside(zone)
	})
	return zone, inside(zone)
}

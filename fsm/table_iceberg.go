package fsm

import (
	"slices"
	"strings"
)

// FormatIceberg is the format of Iceberg tables.
const FormatIceberg = "ICEBERG"

// IcebergState is what an Iceberg table holds beyond the common table
// fields: the pointer to its current metadata file. The metadata itself
// (schemas, snapshots, the metadata log) lives in that file, which the
// HTTP layer writes create-only before proposing; the state machine only
// swaps the pointer, so every replica agrees on which file is current.
//
// The table uuid of the metadata is the table's ID. MetadataVersion
// counts the pointer's swaps (0 at create), so a reader can tell a newer
// pointer from an older one and name the next metadata file without
// reading storage. PreviousMetadataLocation is the pointer a commit
// replaced: it lets a retried commit whose first attempt was applied be
// recognised as a replay.
type IcebergState struct {
	MetadataLocation         string `json:"metadata_location"`
	PreviousMetadataLocation string `json:"previous_metadata_location,omitempty"`
	MetadataVersion          int64  `json:"metadata_version"`
}

// tableRefError refuses a table reference by namespace path and name that
// no table could have: a path shorter than catalog and schema, or an empty
// or NUL-carrying name.
func tableRefError(namespace []string, name string) *Error {
	bad := func(n string) bool { return n == "" || strings.Contains(n, sep) }
	if len(namespace) < 2 || slices.ContainsFunc(namespace, bad) || bad(name) {
		return Invalidf("A table needs a namespace path of a catalog, a schema and non-empty names below it, and a name: %q %q",
			namespace, name)
	}
	return nil
}

func (t *tx) tableIn(namespace []string, name string) (*Table, bool) {
	return get[*Table](t.tree(tableTree), tableKeyIn(namespace, name))
}

// resolveTableIn looks up a table by namespace path and name, with the
// 404 of the first missing level.
func (t *tx) resolveTableIn(namespace []string, name string) (*Table, *Error) {
	if err := tableRefError(namespace, name); err != nil {
		return nil, err
	}
	if err := t.namespaceExists(namespace); err != nil {
		return nil, err
	}
	tb, ok := t.tableIn(namespace, name)
	if !ok {
		return nil, Errf(CodeTableNotFound, "Table not found: %s", strings.Join(append(slices.Clone(namespace), name), "."))
	}
	return tb, nil
}

// resolveIceberg is resolveTableIn for a table that must be Iceberg's.
func (t *tx) resolveIceberg(namespace []string, name string) (*Table, *Error) {
	tb, err := t.resolveTableIn(namespace, name)
	if err != nil {
		return nil, err
	}
	if tb.Format != FormatIceberg || tb.Iceberg == nil {
		return nil, Errf(CodeUnsupportedFormat, "Table is not an Iceberg table: %s", tb.FullName())
	}
	if tb.IsView() {
		return nil, Errf(CodeTableNotFound, "Table not found: %s is a view", tb.FullName())
	}
	return tb, nil
}

// placeIn sets the table's namespace fields to the path, sharing the
// schema's names.
func (t *tx) placeIn(tb *Table, namespace []string) {
	_, sch, _ := t.resolveSchema(namespace[0], namespace[1])
	tb.CatalogName, tb.SchemaName = sch.CatalogName, sch.Name
	tb.Subnamespace = nil
	if len(namespace) > 2 {
		tb.Subnamespace = slices.Clone(namespace[2:])
	}
}

package fsm

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Table types.
const (
	TableManaged  = "MANAGED"
	TableExternal = "EXTERNAL"
	// TableView is the type of an Iceberg view (iceberg_view.go): a named
	// query with no data, and so no location.
	TableView = "VIEW"
)

// Table is the format-agnostic heart of the catalog: a named table in a
// namespace with a format, a uuid, a location, metadata (columns,
// partitioning, properties) and an etag derived from its last metadata
// change, plus the state only its format understands.
//
// Per-format state has a slot of its own. Delta's (the commit log and the
// UniForm metadata, table_delta.go) is embedded, so its fields read as the
// table's own; it is zero for tables of other formats. A format that keeps
// state of its own (Iceberg's metadata pointer, Lance's version list) adds
// a pointer slot beside it, nil for other formats, with its own JSON key
// and its own file (table_<format>.go), and copies it in clone when its
// appliers change it in place.
//
// A *Table reachable from a State is never mutated: appliers clone it, so
// readers and snapshots may hold it without locks.
type Table struct {
	ID          string `json:"id"`
	CatalogName string `json:"catalog_name"`
	SchemaName  string `json:"schema_name"`
	// Subnamespace is the path below the schema of a table in a nested
	// namespace; empty for a table directly in its schema.
	Subnamespace     []string          `json:"subnamespace,omitempty"`
	Name             string            `json:"name"`
	Format           string            `json:"format"`
	Type             string            `json:"type"`
	Location         string            `json:"location"`
	Comment          *string           `json:"comment,omitempty"`
	Columns          json.RawMessage   `json:"columns,omitempty"` // format's canonical schema encoding
	ColumnNames      []string          `json:"column_names,omitempty"`
	PartitionColumns []string          `json:"partition_columns,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"`
	Owner            string            `json:"owner,omitempty"`
	CreatedAt        int64             `json:"created_at"`
	CreatedBy        string            `json:"created_by,omitempty"`
	UpdatedAt        int64             `json:"updated_at"`
	UpdatedBy        string            `json:"updated_by,omitempty"`
	MetaIndex        uint64            `json:"meta_index"` // raft index of the last metadata change

	DeltaState `json:"delta,omitzero"` // FormatDelta
	// Iceberg is the metadata pointer of an Iceberg table (table_iceberg.go);
	// nil for other formats. Appliers replace it, never write through it.
	Iceberg *IcebergState `json:"iceberg,omitempty"`
	// Lance is what a Lance table's versions add up to (table_lance.go);
	// nil for other formats. Appliers replace it, never write through it.
	Lance *LanceState `json:"lance,omitempty"`

	cols *columnSet // keeps the shared schema alive while this table holds it
}

// NamespacePath is the path of the namespace the table is in.
func (t *Table) NamespacePath() []string {
	return append([]string{t.CatalogName, t.SchemaName}, t.Subnamespace...)
}

// FullName is the dotted path and name: "catalog.schema.table".
func (t *Table) FullName() string {
	if len(t.Subnamespace) > 0 {
		return strings.Join(append(t.NamespacePath(), t.Name), ".")
	}
	return t.CatalogName + "." + t.SchemaName + "." + t.Name
}

// ETag is the table's opaque version token. It is a hash of the table uuid
// and the raft index of its last metadata change, so every replica computes
// the same value and it changes exactly when metadata changes.
func (t *Table) ETag() string {
	var buf [64]byte // every load answers with it: hashed without a heap copy
	sum := sha256.Sum256(binary.BigEndian.AppendUint64(append(buf[:0], t.ID...), t.MetaIndex))
	return base64.RawURLEncoding.EncodeToString(sum[:18])
}

// clone returns a copy that an applier may modify. Only the per-format
// state that appliers change in place is copied: Properties stays shared
// with t until writableProperties is called, and every other reference
// field is replaced, never written through, when it changes.
func (t *Table) clone() *Table {
	c := *t
	c.DeltaState = t.DeltaState.cloned()
	return &c
}

// writableProperties gives a clone its own copy of the properties, so
// that writing them leaves the stored table untouched. Call it once,
// right after clone, before any property write.
func (t *Table) writableProperties() {
	p := make(map[string]string, len(t.Properties))
	maps.Copy(p, t.Properties)
	t.Properties = p
}

// Command types of tables (UpdateTable, type 10, is Delta's: delta_update.go).
const (
	CmdCreateTable CommandType = 9
	CmdDeleteTable CommandType = 11
	CmdRenameTable CommandType = 12
)

// RecordTable is the record kind of a table.
const RecordTable byte = 4

var tableTree = newCountedTree("tables", "table") // namespace path\x00name -> *Table

func init() {
	registerCommand(CmdCreateTable, applyCreateTable)
	registerCommand(CmdDeleteTable, applyDeleteTable)
	registerCommand(CmdRenameTable, applyRenameTable)
	registerRecord(RecordTable, treeRecord(tableTree, decodeTable, putRestoredTable))
	registerChildren(tableTree, renamedTable)
	onDeleteBelow(tableTree, func(t *tx, v any) { t.tableRemoved(v.(*Table)) })
}

// tableLayout1 is a table record of layout 1, which kept the Delta state's
// fields at the top level.
type tableLayout1 struct {
	*Table
	Commits []Commit        `json:"commits,omitempty"`
	Uniform *IcebergUniform `json:"uniform,omitempty"`
}

func decodeTable(layout uint16, payload []byte) (*Table, error) {
	tb := &Table{}
	if layout == 1 {
		old := tableLayout1{Table: tb}
		if err := json.Unmarshal(payload, &old); err != nil {
			return nil, err
		}
		tb.Commits, tb.Uniform = old.Commits, old.Uniform
	} else if err := json.Unmarshal(payload, tb); err != nil {
		return nil, err
	}
	tb.compact()
	return tb, nil
}

// putRestoredTable shares the namespace names of the table's schema
// (schema records come first).
func putRestoredTable(b *Builder, tb *Table) {
	if s, ok := b.t.schema(tb.CatalogName, tb.SchemaName); ok {
		tb.CatalogName, tb.SchemaName = s.CatalogName, s.Name
	}
	b.t.putTable(tb)
}

// ColumnsSpec is the schema of a table as the format encodes it, plus its
// top-level names (what partition columns are checked against).
type ColumnsSpec struct {
	Columns json.RawMessage `json:"columns"`
	Names   []string        `json:"names"`
}

// CreateTable creates a table. For MANAGED tables the identity comes from
// the staging row found by Location; for EXTERNAL ones ID is the new uuid.
type CreateTable struct {
	Stamp
	ID                    string            `json:"id,omitempty"`
	CatalogName           string            `json:"catalog_name"`
	SchemaName            string            `json:"schema_name"`
	Name                  string            `json:"name"`
	Format                string            `json:"format"`
	TableType             string            `json:"table_type"`
	Location              string            `json:"location"` // normalised
	Columns               ColumnsSpec       `json:"columns"`
	PartitionColumns      []string          `json:"partition_columns,omitempty"`
	Protocol              Protocol          `json:"protocol"`
	Properties            map[string]string `json:"properties"`
	DomainMetadata        *DomainMetadata   `json:"domain_metadata,omitempty"`
	Uniform               *IcebergUniform   `json:"uniform,omitempty"`
	Comment               *string           `json:"comment,omitempty"`
	LastCommitTimestampMs int64             `json:"last_commit_timestamp_ms"`
	// PlainProperties stores Properties exactly as given, without the keys
	// the Delta API derives from protocol, domains and commit timestamp
	// (tables registered through UC REST).
	PlainProperties bool `json:"plain_properties,omitempty"`
}

// DeleteTable deletes a table and its commit log.
type DeleteTable struct {
	Stamp
	CatalogName string `json:"catalog_name"`
	SchemaName  string `json:"schema_name"`
	Name        string `json:"name"`
}

// RenameTable renames a table inside its schema.
type RenameTable struct {
	Stamp
	CatalogName string `json:"catalog_name"`
	SchemaName  string `json:"schema_name"`
	Name        string `json:"name"`
	NewName     string `json:"new_name"`
}

func (*CreateTable) Type() CommandType { return CmdCreateTable }
func (*DeleteTable) Type() CommandType { return CmdDeleteTable }
func (*RenameTable) Type() CommandType { return CmdRenameTable }

func tableKey(catalog, schema, table string) []byte {
	return []byte(catalog + sep + schema + sep + table)
}

func tableKeyIn(namespace []string, name string) []byte {
	return append(childPrefix(namespace), name...)
}

// Table returns a table by its three-part name.
func (s *State) Table(catalog, schema, name string) (*Table, bool) {
	return get[*Table](s.trees[tableTree], tableKey(catalog, schema, name))
}

// Tables lists a schema's tables in name order, paged like Catalogs.
func (s *State) Tables(catalog, schema, after string, limit int) []*Table {
	return s.TablesIn([]string{catalog, schema}, after, limit)
}

func (t *tx) table(catalog, schema, name string) (*Table, bool) {
	return get[*Table](t.tree(tableTree), tableKey(catalog, schema, name))
}

// key is the table's key: under its namespace path.
func (t *Table) key() []byte {
	if len(t.Subnamespace) > 0 {
		return tableKeyIn(t.NamespacePath(), t.Name)
	}
	return tableKey(t.CatalogName, t.SchemaName, t.Name)
}

func (t *tx) putTable(tb *Table) {
	t.tree(tableTree).Insert(tb.key(), tb)
	t.indexTable(tb)
}

// removeTable deletes a table and what hangs off it.
func (t *tx) removeTable(tb *Table) {
	t.tree(tableTree).Delete(tb.key())
	t.tableRemoved(tb)
}

// tableRemoved forgets what indexes and per-format trees hold about a
// table that was deleted.
func (t *tx) tableRemoved(tb *Table) {
	t.unindexTable(tb)
	t.forgetLanceVersions(tb)
	t.dropGrants(SecurableTable, tb.ID)
}

// renamedTable is a table below a renamed namespace.
func renamedTable(v any, level int, name string) ([]byte, any) {
	tb := v.(*Table).clone()
	switch level {
	case 0:
		tb.CatalogName = name
	case 1:
		tb.SchemaName = name
	default:
		tb.Subnamespace = slices.Clone(tb.Subnamespace)
		tb.Subnamespace[level-2] = name
	}
	return tb.key(), tb
}

// resolveTable looks up a table with the 404 of the first missing level.
func (t *tx) resolveTable(catalog, schema, name string) (*Table, *Error) {
	if _, _, err := t.resolveSchema(catalog, schema); err != nil {
		return nil, err
	}
	tb, ok := t.table(catalog, schema, name)
	if !ok {
		return nil, Errf(CodeTableNotFound, "Table not found: %s.%s.%s", catalog, schema, name)
	}
	return tb, nil
}

func applyCreateTable(t *tx, index uint64, c *CreateTable) Result {
	_, sch, err := t.resolveSchema(c.CatalogName, c.SchemaName)
	if err != nil {
		return failed(err)
	}
	if _, ok := t.table(c.CatalogName, c.SchemaName, c.Name); ok {
		return failed(Errf(CodeTableExists, "Table already exists: %s.%s.%s", c.CatalogName, c.SchemaName, c.Name))
	}
	if err := t.tableTwinError(c.Rules, []string{c.CatalogName, c.SchemaName}, c.Name, ""); err != nil {
		return failed(err)
	}
	if c.TableType == TableExternal {
		if err := t.checkOutsideManagedStorage(c.Location); err != nil {
			return failed(err)
		}
	}
	id, location := c.ID, c.Location
	if c.TableType == TableManaged {
		st, err := t.claimStaging(c)
		if err != nil {
			return failed(err)
		}
		id, location = st.ID, st.Location // equal to the command's; shared with the staging row
	}
	if err := t.checkTableLocation(c); err != nil {
		return failed(err)
	}
	tb := &Table{ID: id, CatalogName: sch.CatalogName, SchemaName: sch.Name, Name: c.Name,
		Format: canonEnum(c.Format), Type: canonEnum(c.TableType), Location: location, Comment: c.Comment,
		PartitionColumns: slices.Clone(c.PartitionColumns), DeltaState: DeltaState{Uniform: c.Uniform},
		Owner: c.Caller, CreatedAt: c.Time, CreatedBy: c.Caller, UpdatedAt: c.Time, MetaIndex: index}
	tb.setColumns(c.Columns.Columns, c.Columns.Names)
	tb.Properties = compactProperties(c.Properties, id)
	if !c.PlainProperties {
		applyProtocol(tb.Properties, c.Protocol, false)
		applyDomainMetadata(tb.Properties, c.DomainMetadata)
		tb.Properties[PropLastCommitTs] = strconv.FormatInt(c.LastCommitTimestampMs, 10)
		tb.Properties[PropLastUpdate] = "0"
	}
	t.putTable(tb)
	return Result{Table: tb}
}

func applyDeleteTable(t *tx, _ uint64, c *DeleteTable) Result {
	tb, err := t.resolveTable(c.CatalogName, c.SchemaName, c.Name)
	if err != nil {
		return failed(err)
	}
	t.removeTable(tb)
	return Result{Table: tb}
}

func applyRenameTable(t *tx, index uint64, c *RenameTable) Result {
	old, err := t.resolveTable(c.CatalogName, c.SchemaName, c.Name)
	if err != nil {
		return failed(err)
	}
	if c.NewName == c.Name {
		return Result{Table: old, NoOp: true}
	}
	if _, exists := t.table(c.CatalogName, c.SchemaName, c.NewName); exists {
		return failed(Errf(CodeTableExists, "Table already exists: %s", c.NewName))
	}
	if err := t.tableTwinError(c.Rules, []string{c.CatalogName, c.SchemaName}, c.NewName, c.Name); err != nil {
		return failed(err)
	}
	tb := old.clone()
	tb.Name = c.NewName
	tb.UpdatedAt, tb.UpdatedBy, tb.MetaIndex = max(c.Time, old.UpdatedAt), c.Caller, index
	t.tree(tableTree).Delete(tableKey(c.CatalogName, c.SchemaName, c.Name))
	t.putTable(tb)
	return Result{Table: tb}
}

// checkOutsideManagedStorage refuses an external location that contains
// the metastore's managed storage.
func (t *tx) checkOutsideManagedStorage(loc string) *Error {
	if t.meta == nil || t.meta.StorageRoot == "" {
		return nil
	}
	managed := strings.TrimRight(t.meta.StorageRoot, "/") + "/" + unityStorage
	if managed == loc || strings.HasPrefix(managed, strings.TrimRight(loc, "/")+"/") {
		return Invalidf("External table storage location '%s' must not contain the managed storage location '%s'.", loc, managed)
	}
	return nil
}

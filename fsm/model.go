package fsm

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
)

// Table formats and types.
const (
	FormatDelta = "DELTA"

	TableManaged  = "MANAGED"
	TableExternal = "EXTERNAL"
)

// Metastore is the cluster-wide identity fixed at first bootstrap.
type Metastore struct {
	ID          string `json:"id"`
	StorageRoot string `json:"storage_root"` // managed storage when neither catalog nor schema sets one
	CreatedAt   int64  `json:"created_at"`
}

// Catalog is the top of the three-level namespace.
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

// Schema groups tables inside a catalog.
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

// Commit is one ratified entry of a table's commit log. Backfilled marks
// the newest version when every tracked commit has been published: the row
// stays so that the latest version survives a full backfill, but it is no
// longer listed as unbackfilled.
type Commit struct {
	Version     int64  `json:"version"`
	Timestamp   int64  `json:"timestamp"`
	FileName    string `json:"file_name"`
	FileSize    int64  `json:"file_size"`
	FileModTime int64  `json:"file_modification_timestamp"`
	Backfilled  bool   `json:"backfilled,omitempty"`
}

// IcebergUniform is the Iceberg metadata a UniForm Delta table carries.
type IcebergUniform struct {
	MetadataLocation          string `json:"metadata_location"`
	ConvertedDeltaVersion     int64  `json:"converted_delta_version"`
	ConvertedDeltaTimestamp   int64  `json:"converted_delta_timestamp"`
	BaseConvertedDeltaVersion *int64 `json:"base_converted_delta_version,omitempty"`
}

// Table is the format-agnostic heart of the catalog: a named table with a
// format, a uuid, a location, metadata (columns, partitioning, properties),
// an ordered commit log and an etag derived from its last metadata change.
//
// A *Table reachable from a State is never mutated: appliers clone it, so
// readers and snapshots may hold it without locks.
type Table struct {
	ID               string            `json:"id"`
	CatalogName      string            `json:"catalog_name"`
	SchemaName       string            `json:"schema_name"`
	Name             string            `json:"name"`
	Format           string            `json:"format"`
	Type             string            `json:"type"`
	Location         string            `json:"location"`
	Comment          *string           `json:"comment,omitempty"`
	Columns          json.RawMessage   `json:"columns,omitempty"` // format's canonical schema encoding
	ColumnNames      []string          `json:"column_names,omitempty"`
	PartitionColumns []string          `json:"partition_columns,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"`
	Uniform          *IcebergUniform   `json:"uniform,omitempty"`
	Owner            string            `json:"owner,omitempty"`
	CreatedAt        int64             `json:"created_at"`
	CreatedBy        string            `json:"created_by,omitempty"`
	UpdatedAt        int64             `json:"updated_at"`
	UpdatedBy        string            `json:"updated_by,omitempty"`
	MetaIndex        uint64            `json:"meta_index"` // raft index of the last metadata change
	Commits          []Commit          `json:"commits,omitempty"`

	cols *columnSet // keeps the shared schema alive while this table holds it
}

// FullName is "catalog.schema.table".
func (t *Table) FullName() string { return t.CatalogName + "." + t.SchemaName + "." + t.Name }

// ETag is the table's opaque version token. It is a hash of the table uuid
// and the raft index of its last metadata change, so every replica computes
// the same value and it changes exactly when metadata changes.
func (t *Table) ETag() string {
	h := sha256.New()
	h.Write([]byte(t.ID))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], t.MetaIndex)
	h.Write(b[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18])
}

// LatestVersion is the newest ratified version (0 right after create).
func (t *Table) LatestVersion() int64 {
	if len(t.Commits) == 0 {
		return 0
	}
	return t.Commits[len(t.Commits)-1].Version
}

// UnbackfilledCommits returns the ratified commits not yet published,
// newest first, as the Delta API lists them.
func (t *Table) UnbackfilledCommits() []Commit {
	out := make([]Commit, 0, len(t.Commits))
	for i := len(t.Commits) - 1; i >= 0; i-- {
		if !t.Commits[i].Backfilled {
			out = append(out, t.Commits[i])
		}
	}
	return out
}

// clone returns a copy that an applier may modify. Only the commit log,
// which appliers change in place, is copied: Properties stays shared with
// t until writableProperties is called, and every other reference field
// is replaced, never written through, when it changes.
func (t *Table) clone() *Table {
	c := *t
	c.Commits = slices.Clone(t.Commits)
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

// StagingTable is a location handed out for a managed table before it is
// created. The row survives creation (Committed) as UC does.
type StagingTable struct {
	ID          string `json:"id"`
	CatalogName string `json:"catalog_name"`
	SchemaName  string `json:"schema_name"`
	Name        string `json:"name"`
	Location    string `json:"location"`
	CreatedBy   string `json:"created_by,omitempty"`
	CreatedAt   int64  `json:"created_at"`
	Committed   bool   `json:"committed,omitempty"`
}

package fsm

import (
	"encoding/json"
	"fmt"
)

// CommandType is the first byte of every log entry. Values are append-only:
// a type once written to a log keeps its meaning forever.
type CommandType uint8

// Command types.
const (
	CmdInit CommandType = iota + 1
	CmdCreateCatalog
	CmdUpdateCatalog
	CmdDeleteCatalog
	CmdCreateSchema
	CmdUpdateSchema
	CmdDeleteSchema
	CmdCreateStagingTable
	CmdCreateTable
	CmdUpdateTable
	CmdDeleteTable
	CmdRenameTable
)

// IgnoreUnknownFlag marks a command type that older replicas may skip.
// A type without it that a replica does not know is corruption or version
// skew, and applying must stop rather than diverge.
const IgnoreUnknownFlag CommandType = 0x80

// payloadVersion is the version of the JSON payload that follows the type
// byte. Decoders accept every version they know.
const payloadVersion = 1

// Command is any state change. Every field a command carries is decided
// before proposing (by the leader): time in epoch milliseconds, new IDs.
type Command interface {
	Type() CommandType
}

// Encode serialises a command as [type][payload version][JSON payload].
// encoding/json sorts map keys, so the bytes are deterministic.
func Encode(c Command) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", c, err)
	}
	out := make([]byte, 0, len(body)+2)
	out = append(out, byte(c.Type()), payloadVersion)
	return append(out, body...), nil
}

// ErrUnknownCommand is returned by Decode for a type this build does not know.
type ErrUnknownCommand struct{ Type CommandType }

func (e ErrUnknownCommand) Error() string { return fmt.Sprintf("unknown command type %d", e.Type) }

// Decode parses a log entry produced by Encode.
func Decode(b []byte) (Command, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("command too short (%d bytes)", len(b))
	}
	t, ver := CommandType(b[0]), b[1]
	newCmd, ok := commandFactories[t]
	if !ok {
		return nil, ErrUnknownCommand{Type: t}
	}
	if ver != payloadVersion {
		return nil, fmt.Errorf("command type %d: unsupported payload version %d", t, ver)
	}
	c := newCmd()
	if err := json.Unmarshal(b[2:], c); err != nil {
		return nil, fmt.Errorf("decode command type %d: %w", t, err)
	}
	return c, nil
}

var commandFactories = map[CommandType]func() Command{
	CmdInit:               func() Command { return &Init{} },
	CmdCreateCatalog:      func() Command { return &CreateCatalog{} },
	CmdUpdateCatalog:      func() Command { return &UpdateCatalog{} },
	CmdDeleteCatalog:      func() Command { return &DeleteCatalog{} },
	CmdCreateSchema:       func() Command { return &CreateSchema{} },
	CmdUpdateSchema:       func() Command { return &UpdateSchema{} },
	CmdDeleteSchema:       func() Command { return &DeleteSchema{} },
	CmdCreateStagingTable: func() Command { return &CreateStagingTable{} },
	CmdCreateTable:        func() Command { return &CreateTable{} },
	CmdUpdateTable:        func() Command { return &UpdateTable{} },
	CmdDeleteTable:        func() Command { return &DeleteTable{} },
	CmdRenameTable:        func() Command { return &RenameTable{} },
}

// Stamp is what every command carries: the leader's clock and the caller.
type Stamp struct {
	Time   int64  `json:"time"`             // leader wall clock, epoch ms
	Caller string `json:"caller,omitempty"` // authenticated principal, if any
}

// Init seeds a new cluster: the metastore identity, catalog "unity" and
// schema "default". It is a no-op once the state is initialised.
type Init struct {
	Stamp
	MetastoreID string `json:"metastore_id"`
	StorageRoot string `json:"storage_root"`
	CatalogID   string `json:"catalog_id"`
	SchemaID    string `json:"schema_id"`
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

// CreateSchema creates a schema in a catalog.
type CreateSchema struct {
	Stamp
	ID          string            `json:"id"`
	CatalogName string            `json:"catalog_name"`
	Name        string            `json:"name"`
	Comment     string            `json:"comment,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	StorageRoot string            `json:"storage_root,omitempty"`
}

// UpdateSchema changes a schema's comment, properties or name.
type UpdateSchema struct {
	Stamp
	CatalogName string             `json:"catalog_name"`
	Name        string             `json:"name"`
	NewName     string             `json:"new_name,omitempty"`
	Comment     *string            `json:"comment,omitempty"`
	Properties  *map[string]string `json:"properties,omitempty"`
}

// DeleteSchema deletes a schema; Force also deletes its tables.
type DeleteSchema struct {
	Stamp
	CatalogName string `json:"catalog_name"`
	Name        string `json:"name"`
	Force       bool   `json:"force,omitempty"`
}

// CreateStagingTable reserves a managed location for a table to be created.
type CreateStagingTable struct {
	Stamp
	ID          string `json:"id"`
	CatalogName string `json:"catalog_name"`
	SchemaName  string `json:"schema_name"`
	Name        string `json:"name"`
}

// Protocol is a Delta protocol: versions plus feature lists.
type Protocol struct {
	MinReaderVersion int      `json:"min_reader_version"`
	MinWriterVersion int      `json:"min_writer_version"`
	ReaderFeatures   []string `json:"reader_features,omitempty"`
	WriterFeatures   []string `json:"writer_features,omitempty"`
}

// DomainMetadata carries the Delta domains the catalog tracks. A nil
// field leaves that domain unchanged.
type DomainMetadata struct {
	ClusteringColumns  *[][]string `json:"clustering_columns,omitempty"`
	RowIDHighWaterMark *int64      `json:"row_id_high_water_mark,omitempty"`
}

// Schema of a table as the format encodes it, plus its top-level names
// (what partition columns are checked against).
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

// Purged-version replay verdicts, decided by reading storage before proposing.
const (
	ReplayIdentical = "identical" // published file bytes equal the staged file's
	ReplayDifferent = "different"
	ReplayUnknown   = "unknown" // storage could not be read
)

// AddCommit ratifies the next version of a managed table.
type AddCommit struct {
	Commit  Commit          `json:"commit"`
	Uniform *IcebergUniform `json:"uniform,omitempty"`
	// PurgedReplay is the storage verdict for a version below the oldest
	// tracked one, computed before proposing; empty when not computed.
	PurgedReplay string `json:"purged_replay,omitempty"`
}

// SnapshotVersion records an external table's last commit.
type SnapshotVersion struct {
	LastCommitVersion     int64 `json:"last_commit_version"`
	LastCommitTimestampMs int64 `json:"last_commit_timestamp_ms"`
}

// UpdateTable is one Delta API update request: requirements plus at most
// one of each action. The FSM applies the actions in a fixed canonical
// order, whatever their order on the wire, and all or nothing.
type UpdateTable struct {
	Stamp
	CatalogName string  `json:"catalog_name"`
	SchemaName  string  `json:"schema_name"`
	Name        string  `json:"name"`
	AssertUUID  string  `json:"assert_uuid"`
	AssertETag  *string `json:"assert_etag,omitempty"`

	SetColumns           *ColumnsSpec       `json:"set_columns,omitempty"`
	SetPartitionColumns  *[]string          `json:"set_partition_columns,omitempty"`
	SetProtocol          *Protocol          `json:"set_protocol,omitempty"`
	SetProperties        *map[string]string `json:"set_properties,omitempty"`
	RemoveProperties     *[]string          `json:"remove_properties,omitempty"`
	SetDomainMetadata    *DomainMetadata    `json:"set_domain_metadata,omitempty"`
	RemoveDomainMetadata *[]string          `json:"remove_domain_metadata,omitempty"`
	SetTableComment      *string            `json:"set_table_comment,omitempty"`
	SetSnapshotVersion   *SnapshotVersion   `json:"set_snapshot_version,omitempty"`
	AddCommit            *AddCommit         `json:"add_commit,omitempty"`
	SetLatestBackfilled  *int64             `json:"set_latest_backfilled,omitempty"`
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

func (*Init) Type() CommandType               { return CmdInit }
func (*CreateCatalog) Type() CommandType      { return CmdCreateCatalog }
func (*UpdateCatalog) Type() CommandType      { return CmdUpdateCatalog }
func (*DeleteCatalog) Type() CommandType      { return CmdDeleteCatalog }
func (*CreateSchema) Type() CommandType       { return CmdCreateSchema }
func (*UpdateSchema) Type() CommandType       { return CmdUpdateSchema }
func (*DeleteSchema) Type() CommandType       { return CmdDeleteSchema }
func (*CreateStagingTable) Type() CommandType { return CmdCreateStagingTable }
func (*CreateTable) Type() CommandType        { return CmdCreateTable }
func (*UpdateTable) Type() CommandType        { return CmdUpdateTable }
func (*DeleteTable) Type() CommandType        { return CmdDeleteTable }
func (*RenameTable) Type() CommandType        { return CmdRenameTable }

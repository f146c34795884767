package fsm

import (
	"slices"
	"strconv"
	"strings"
)

// CmdUpdateTable is the command type of UpdateTable.
const CmdUpdateTable CommandType = 10

func init() {
	registerCommand(CmdUpdateTable, applyUpdateTable)
	allowInTransaction(CmdUpdateTable)
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

func (*UpdateTable) Type() CommandType { return CmdUpdateTable }

// applyUpdateTable runs one Delta API update against the state at this
// index: resolve, assert-table-uuid, the actions in canonical order on a
// clone, the commit log, then assert-etag against the pre-apply etag. Any
// failure discards the clone, so nothing is half-applied.
func applyUpdateTable(t *tx, index uint64, c *UpdateTable) Result {
	old, err := t.resolveTable(c.CatalogName, c.SchemaName, c.Name)
	if err != nil {
		return failed(err)
	}
	if old.Format != FormatDelta {
		return failed(Errf(CodeUnsupportedFormat, "Table is not a Delta table: %s", old.FullName()))
	}
	if c.AssertUUID != "" && c.AssertUUID != old.ID {
		return failed(Errf(CodeRequirementConflict, "assert-table-uuid failed: expected %s but table has %s", c.AssertUUID, old.ID))
	}
	preETag := old.ETag()
	tb := old.clone()
	if c.writesProperties() {
		tb.writableProperties()
	}
	if err := applyMetadataActions(tb, c); err != nil {
		return failed(err)
	}
	replay, err := applyCommitActions(tb, c)
	if err != nil {
		return failed(err)
	}
	if replay {
		return Result{Table: old, NoOp: true}
	}
	if c.AssertETag != nil && *c.AssertETag != preETag {
		return failed(Errf(CodeRequirementConflict, "assert-etag failed: expected %s but table has %s", *c.AssertETag, preETag))
	}
	if c.changesMetadata() {
		tb.UpdatedAt, tb.UpdatedBy, tb.MetaIndex = max(c.Time, old.UpdatedAt), c.Caller, index
		if c.AddCommit != nil {
			tb.Properties[PropLastUpdate] = strconv.FormatInt(c.AddCommit.Commit.Version, 10)
			tb.Properties[PropLastCommitTs] = strconv.FormatInt(c.AddCommit.Commit.Timestamp, 10)
		}
	}
	t.putTable(tb)
	return Result{Table: tb}
}

// changesMetadata reports whether the request changes table metadata, and
// so the etag and updated-time. Data-only commits, backfills and a
// row-tracking high-water mark alone do not.
func (c *UpdateTable) changesMetadata() bool {
	return c.SetColumns != nil || c.SetPartitionColumns != nil || c.SetProtocol != nil ||
		c.SetProperties != nil || c.RemoveProperties != nil ||
		(c.SetDomainMetadata != nil && c.SetDomainMetadata.ClusteringColumns != nil) ||
		c.RemoveDomainMetadata != nil || c.SetTableComment != nil || c.SetSnapshotVersion != nil ||
		(c.AddCommit != nil && c.AddCommit.Uniform != nil)
}

// writesProperties reports whether applying c may write the table's
// properties. Commits and backfills alone do not, so the many tables that
// only ever commit keep sharing one properties map across versions.
func (c *UpdateTable) writesProperties() bool {
	return c.SetProtocol != nil || c.SetProperties != nil || c.RemoveProperties != nil ||
		c.SetDomainMetadata != nil || c.RemoveDomainMetadata != nil || c.SetSnapshotVersion != nil ||
		(c.AddCommit != nil && c.changesMetadata())
}

// applyMetadataActions applies the metadata actions in the canonical order
// and re-checks the managed contract on the result.
func applyMetadataActions(tb *Table, c *UpdateTable) *Error {
	if c.SetColumns != nil || c.SetPartitionColumns != nil {
		if err := applyColumns(tb, c.SetColumns, c.SetPartitionColumns); err != nil {
			return err
		}
	}
	if c.SetProtocol != nil {
		applyProtocol(tb.Properties, *c.SetProtocol, true)
	}
	if c.SetProperties != nil {
		for k, v := range *c.SetProperties {
			tb.Properties[k] = v
		}
	}
	if c.RemoveProperties != nil {
		for _, k := range *c.RemoveProperties {
			delete(tb.Properties, k)
		}
	}
	applyDomainMetadata(tb.Properties, c.SetDomainMetadata)
	if c.RemoveDomainMetadata != nil {
		for _, d := range *c.RemoveDomainMetadata {
			delete(tb.Properties, domainProperty(d))
		}
	}
	if c.SetTableComment != nil {
		s := *c.SetTableComment
		tb.Comment = &s
	}
	if c.SetSnapshotVersion != nil {
		if tb.Type == TableManaged {
			return Invalidf("update-metadata-snapshot-version is only supported for EXTERNAL Delta tables; for MANAGED tables, use the Delta commit endpoint.")
		}
		tb.Properties[PropLastUpdate] = strconv.FormatInt(c.SetSnapshotVersion.LastCommitVersion, 10)
		tb.Properties[PropLastCommitTs] = strconv.FormatInt(c.SetSnapshotVersion.LastCommitTimestampMs, 10)
	}
	return recheckManagedContract(tb, c)
}

// recheckManagedContract validates a managed table after its metadata
// actions: the whole contract when the protocol changed, else only that
// the stored domains are backed by declared writer features.
func recheckManagedContract(tb *Table, c *UpdateTable) *Error {
	if tb.Type != TableManaged {
		return nil
	}
	_, hasClustering := tb.Properties[PropClustering]
	_, hasRowTracking := tb.Properties[PropRowIDHighWater]
	if c.SetProtocol != nil {
		return CheckManagedContract(*c.SetProtocol, tb.Properties, nil, hasClustering, hasRowTracking)
	}
	if c.SetDomainMetadata != nil {
		return checkDomainFeatures(protocolFromProperties(tb.Properties), hasClustering, hasRowTracking)
	}
	return nil
}

// applyColumns replaces columns and/or partition columns; the one not
// given is kept, and partition columns must name top-level columns.
func applyColumns(tb *Table, cols *ColumnsSpec, parts *[]string) *Error {
	names := tb.ColumnNames
	if cols != nil {
		names = cols.Names
	}
	partitions := tb.PartitionColumns
	if parts != nil {
		partitions = *parts
	}
	resolved, err := ResolvePartitionColumns(names, partitions)
	if err != nil {
		return err
	}
	if cols != nil {
		tb.setColumns(cols.Columns, cols.Names)
	}
	tb.PartitionColumns = resolved
	return nil
}

// ResolvePartitionColumns matches partition columns to top-level column
// names case-insensitively and returns them in the columns' casing.
func ResolvePartitionColumns(columnNames, partitions []string) ([]string, *Error) {
	out := make([]string, 0, len(partitions))
	seen := map[string]bool{}
	for _, p := range partitions {
		key := strings.ToLower(p)
		if seen[key] {
			return nil, Invalidf("partition-columns contains duplicate entry (case-insensitive): %s", p)
		}
		seen[key] = true
		i := slices.IndexFunc(columnNames, func(n string) bool { return strings.EqualFold(n, p) })
		if i < 0 {
			return nil, Invalidf("partition-columns references unknown column: %s", p)
		}
		out = append(out, columnNames[i])
	}
	return out, nil
}

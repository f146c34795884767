package fsm

import "slices"

// FormatDelta is the format of Delta tables.
const FormatDelta = "DELTA"

// DeltaState is what a Delta table holds beyond the common table fields:
// the ordered log of ratified commits the catalog tracks (managed tables)
// and the Iceberg metadata of a UniForm table.
type DeltaState struct {
	Commits []Commit        `json:"commits,omitempty"`
	Uniform *IcebergUniform `json:"uniform,omitempty"`
}

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

// LatestVersion is the newest ratified version (0 right after create).
func (d *DeltaState) LatestVersion() int64 {
	if len(d.Commits) == 0 {
		return 0
	}
	return d.Commits[len(d.Commits)-1].Version
}

// UnbackfilledCommits returns the ratified commits not yet published,
// newest first, as the Delta API lists them.
func (d *DeltaState) UnbackfilledCommits() []Commit {
	out := make([]Commit, 0, len(d.Commits))
	for i := len(d.Commits) - 1; i >= 0; i-- {
		if !d.Commits[i].Backfilled {
			out = append(out, d.Commits[i])
		}
	}
	return out
}

// cloned copies what appliers change in place: the commit log.
func (d DeltaState) cloned() DeltaState {
	d.Commits = slices.Clone(d.Commits)
	return d
}

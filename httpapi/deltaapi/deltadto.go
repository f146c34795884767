package deltaapi

import (
	"encoding/json"
	"slices"

	"github.com/raftcat/raftcat/fsm"
)

// Delta API wire types (kebab-case JSON, nulls omitted).

type deltaProtocol struct {
	MinReaderVersion *int     `json:"min-reader-version,omitempty"`
	MinWriterVersion *int     `json:"min-writer-version,omitempty"`
	ReaderFeatures   []string `json:"reader-features,omitempty"`
	WriterFeatures   []string `json:"writer-features,omitempty"`
}

func (p *deltaProtocol) toFSM() fsm.Protocol {
	out := fsm.Protocol{ReaderFeatures: slices.Clone(p.ReaderFeatures), WriterFeatures: slices.Clone(p.WriterFeatures)}
	if p.MinReaderVersion != nil {
		out.MinReaderVersion = *p.MinReaderVersion
	}
	if p.MinWriterVersion != nil {
		out.MinWriterVersion = *p.MinWriterVersion
	}
	return out
}

type storageCredential struct {
	Prefix         string            `json:"prefix"`
	Operation      string            `json:"operation"`
	Config         map[string]string `json:"config"`
	ExpirationTime *int64            `json:"expiration-time-ms,omitempty"`
}

type credentialsResponse struct {
	StorageCredentials []storageCredential `json:"storage-credentials"`
}

type stagingTableResponse struct {
	TableID             string              `json:"table-id"`
	TableType           string              `json:"table-type"`
	Location            string              `json:"location"`
	StorageCredentials  []storageCredential `json:"storage-credentials"`
	RequiredProtocol    deltaProtocol       `json:"required-protocol"`
	SuggestedProtocol   deltaProtocol       `json:"suggested-protocol"`
	RequiredProperties  map[string]*string  `json:"required-properties"`
	SuggestedProperties map[string]*string  `json:"suggested-properties"`
}

type clusteringDomain struct {
	ClusteringColumns *[][]string `json:"clusteringColumns"`
}

type rowTrackingDomain struct {
	RowIDHighWaterMark *int64 `json:"rowIdHighWaterMark"`
}

type domainMetadata struct {
	Clustering  *clusteringDomain  `json:"delta.clustering,omitempty"`
	RowTracking *rowTrackingDomain `json:"delta.rowTracking,omitempty"`
}

func (d *domainMetadata) toFSM() *fsm.DomainMetadata {
	if d == nil {
		return nil
	}
	out := &fsm.DomainMetadata{}
	if d.Clustering != nil {
		cols := [][]string{}
		if d.Clustering.ClusteringColumns != nil {
			cols = *d.Clustering.ClusteringColumns
		}
		out.ClusteringColumns = &cols
	}
	if d.RowTracking != nil && d.RowTracking.RowIDHighWaterMark != nil {
		hwm := *d.RowTracking.RowIDHighWaterMark
		out.RowIDHighWaterMark = &hwm
	}
	return out
}

type icebergUniform struct {
	MetadataLocation          *string `json:"metadata-location,omitempty"`
	ConvertedDeltaVersion     *int64  `json:"converted-delta-version,omitempty"`
	ConvertedDeltaTimestamp   *int64  `json:"converted-delta-timestamp,omitempty"`
	BaseConvertedDeltaVersion *int64  `json:"base-converted-delta-version,omitempty"`
}

type uniform struct {
	Iceberg *icebergUniform `json:"iceberg,omitempty"`
}

type createTableRequest struct {
	Name                  *string            `json:"name"`
	Location              *string            `json:"location"`
	TableType             *string            `json:"table-type"`
	Columns               json.RawMessage    `json:"columns"`
	Protocol              *deltaProtocol     `json:"protocol"`
	Properties            map[string]*string `json:"properties"`
	LastCommitTimestampMs *int64             `json:"last-commit-timestamp-ms"`
	Comment               *string            `json:"comment"`
	PartitionColumns      []string           `json:"partition-columns"`
	DomainMetadata        *domainMetadata    `json:"domain-metadata"`
	Uniform               *uniform           `json:"uniform"`
}

type deltaCommit struct {
	Version                   *int64  `json:"version"`
	Timestamp                 *int64  `json:"timestamp"`
	FileName                  *string `json:"file-name"`
	FileSize                  *int64  `json:"file-size"`
	FileModificationTimestamp *int64  `json:"file-modification-timestamp"`
}

type deltaCommitOut struct {
	Version                   int64  `json:"version"`
	Timestamp                 int64  `json:"timestamp"`
	FileName                  string `json:"file-name"`
	FileSize                  int64  `json:"file-size"`
	FileModificationTimestamp int64  `json:"file-modification-timestamp"`
}

type tableMetadata struct {
	ETag                  string            `json:"etag"`
	TableType             string            `json:"table-type"`
	TableUUID             string            `json:"table-uuid"`
	Location              string            `json:"location"`
	CreatedTime           int64             `json:"created-time"`
	UpdatedTime           int64             `json:"updated-time"`
	Columns               json.RawMessage   `json:"columns"`
	PartitionColumns      []string          `json:"partition-columns"`
	Properties            map[string]string `json:"properties"`
	LastCommitVersion     *int64            `json:"last-commit-version,omitempty"`
	LastCommitTimestampMs *int64            `json:"last-commit-timestamp-ms,omitempty"`
}

type loadTableResponse struct {
	Metadata           tableMetadata     `json:"metadata"`
	Commits            *[]deltaCommitOut `json:"commits,omitempty"`
	LatestTableVersion *int64            `json:"latest-table-version,omitempty"`
	Uniform            *uniform          `json:"uniform,omitempty"`
}

type requirement struct {
	Type string  `json:"type"`
	UUID *string `json:"uuid"`
	ETag *string `json:"etag"`
}

// tableUpdate is one element of `updates`; which fields apply depends on
// the action.
type tableUpdate struct {
	Action                 string          `json:"action"`
	Commit                 *deltaCommit    `json:"commit"`
	Uniform                *uniform        `json:"uniform"`
	LatestPublishedVersion *int64          `json:"latest-published-version"`
	Updates                json.RawMessage `json:"updates"`
	Removals               *[]string       `json:"removals"`
	Protocol               *deltaProtocol  `json:"protocol"`
	Columns                json.RawMessage `json:"columns"`
	PartitionColumns       *[]string       `json:"partition-columns"`
	Comment                *string         `json:"comment"`
	Domains                *[]string       `json:"domains"`
	LastCommitVersion      *int64          `json:"last-commit-version"`
	LastCommitTimestampMs  *int64          `json:"last-commit-timestamp-ms"`
}

type updateTableRequest struct {
	Requirements []requirement `json:"requirements"`
	Updates      []tableUpdate `json:"updates"`
}

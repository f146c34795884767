package deltalog

import (
	"strconv"

	"github.com/goccy/go-json"
)

// Protocol is the protocol action: the reader and writer versions and
// table features a client must support.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// Format is the data file format of a table; Options is never nil in a
// snapshot or commit read by this package, so it encodes as {}.
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the metaData action. PartitionColumns and Configuration
// are never nil once read by this package.
type Metadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
}

// AddFile is the add action: a data file that becomes part of the table.
// Path is kept as written in the log (a URI-encoded path relative to the
// table root, or an absolute URI); see [Log.FileLocation].
type AddFile struct {
	Path                    string             `json:"path"`
	PartitionValues         map[string]*string `json:"partitionValues"`
	Size                    int64              `json:"size"`
	ModificationTime        int64              `json:"modificationTime"`
	DataChange              bool               `json:"dataChange"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider      string             `json:"clusteringProvider,omitempty"`
}

// RemoveFile is the remove action: a file that leaves the table.
type RemoveFile struct {
	Path                    string             `json:"path"`
	DeletionTimestamp       *int64             `json:"deletionTimestamp,omitempty"`
	DataChange              bool               `json:"dataChange"`
	ExtendedFileMetadata    *bool              `json:"extendedFileMetadata,omitempty"`
	PartitionValues         map[string]*string `json:"partitionValues,omitempty"`
	Size                    *int64             `json:"size,omitempty"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
}

// CDCFile is the cdc action: a change-data file (under _change_data/)
// holding the row-level changes of a commit.
type CDCFile struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
	Size            int64              `json:"size"`
	DataChange      bool               `json:"dataChange"`
	Tags            map[string]string  `json:"tags,omitempty"`
}

// Action is one line of a commit; exactly one field is set. Lines with
// other actions (txn, domainMetadata, …) are not returned. CommitInfo
// holds the decoded JSON object (numbers as float64).
type Action struct {
	Add        *AddFile
	Remove     *RemoveFile
	CDC        *CDCFile
	Metadata   *Metadata
	Protocol   *Protocol
	CommitInfo map[string]any
}

// Commit is one version's actions, in file order, with its commit
// timestamp (ms since the epoch).
type Commit struct {
	Version   int64
	Timestamp int64
	Actions   []Action
}

// Snapshot is the state of a table at a version.
type Snapshot struct {
	Version   int64
	Timestamp int64 // commit timestamp of Version, ms
	Protocol  Protocol
	Metadata  Metadata
	Files     []AddFile // active files, sorted by Key; DataChange is always false
}

// Key is the reconciliation key of a file: its path, followed by "#" and
// the deletion vector's unique id when it has one ("#" never occurs in a
// URI-encoded path).
func (a *AddFile) Key() string {
	return fileKey(a.Path, a.DeletionVector)
}

// Key is the reconciliation key of the file the remove deletes.
func (r *RemoveFile) Key() string {
	return fileKey(r.Path, r.DeletionVector)
}

func fileKey(path string, dv *DeletionVector) string {
	if dv == nil {
		return path
	}
	return path + "#" + dv.UniqueID()
}

// NumRecords returns stats.numRecords; false when the file has no stats
// or they do not say.
func (a *AddFile) NumRecords() (int64, bool) {
	if a.Stats == "" {
		return 0, false
	}
	var s struct {
		NumRecords *json.Number `json:"numRecords"`
	}
	if json.Unmarshal([]byte(a.Stats), &s) != nil || s.NumRecords == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(*s.NumRecords), 10, 64)
	return n, err == nil
}

// normalize gives nil maps and slices their empty value, so they encode
// as {} and [].
func (m *Metadata) normalize() {
	if m.Format.Options == nil {
		m.Format.Options = map[string]string{}
	}
	if m.PartitionColumns == nil {
		m.PartitionColumns = []string{}
	}
	if m.Configuration == nil {
		m.Configuration = map[string]string{}
	}
}

func (a *AddFile) normalize() {
	if a.PartitionValues == nil {
		a.PartitionValues = map[string]*string{}
	}
}

func (c *CDCFile) normalize() {
	if c.PartitionValues == nil {
		c.PartitionValues = map[string]*string{}
	}
}

package sharing

import (
	"bufio"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"

	gojson "github.com/goccy/go-json"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/deltalog"
)

// The NDJSON lines of metadata, query and changes answers. Each line is
// one object with exactly one key.

type protocolLine struct {
	Protocol any `json:"protocol"`
}

type parquetProtocol struct {
	MinReaderVersion int `json:"minReaderVersion"`
}

type deltaProtocolLine struct {
	DeltaProtocol deltalog.Protocol `json:"deltaProtocol"`
	Version       *int64            `json:"version,omitempty"`
}

type metadataLine struct {
	MetaData any `json:"metaData"`
}

type parquetMetadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Format           deltalog.Format   `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	Version          *int64            `json:"version,omitempty"`
	Size             *int64            `json:"size,omitempty"`
	NumFiles         *int64            `json:"numFiles,omitempty"`
}

type deltaMetadata struct {
	DeltaMetadata deltalog.Metadata `json:"deltaMetadata"`
	Version       *int64            `json:"version,omitempty"`
	Size          *int64            `json:"size,omitempty"`
	NumFiles      *int64            `json:"numFiles,omitempty"`
}

// parquetFile is a file, add, remove or cdf line of the parquet format.
type parquetFile struct {
	URL                 string             `json:"url"`
	ID                  string             `json:"id"`
	PartitionValues     map[string]*string `json:"partitionValues"`
	Size                int64              `json:"size"`
	Stats               string             `json:"stats,omitempty"`
	Version             *int64             `json:"version,omitempty"`
	Timestamp           *int64             `json:"timestamp,omitempty"`
	ExpirationTimestamp int64              `json:"expirationTimestamp"`
}

// deltaFile is a file line of the delta format: the log's action with
// its path replaced by a URL.
type deltaFile struct {
	ID                  string            `json:"id"`
	DeletionVectorID    string            `json:"deletionVectorFileId,omitempty"`
	DeltaSingleAction   deltaSingleAction `json:"deltaSingleAction"`
	Version             *int64            `json:"version,omitempty"`
	Timestamp           *int64            `json:"timestamp,omitempty"`
	ExpirationTimestamp int64             `json:"expirationTimestamp"`
}

type deltaSingleAction struct {
	Add    *deltalog.AddFile    `json:"add,omitempty"`
	Remove *deltalog.RemoveFile `json:"remove,omitempty"`
	CDC    *deltalog.CDCFile    `json:"cdc,omitempty"`
}

type endStreamAction struct {
	RefreshToken              string `json:"refreshToken,omitempty"`
	NextPageToken             string `json:"nextPageToken,omitempty"`
	MinURLExpirationTimestamp *int64 `json:"minUrlExpirationTimestamp,omitempty"`
	ErrorMessage              string `json:"errorMessage,omitempty"`
}

// fileID is a file's stable id: the same for its add and its remove, on
// every page and every refresh (hex MD5 of its reconciliation key in the
// parquet format, SHA-256 in the delta format, as the reference server).
func fileID(key string, delta bool) string {
	if delta {
		sum := sha256.Sum256([]byte(key))
		return hex.EncodeToString(sum[:])
	}
	sum := md5.Sum([]byte(key))
	return hex.EncodeToString(sum[:])
}

// ndjson writes an answer's lines after its headers.
type ndjson struct {
	w *bufio.Writer
}

// startNDJSON sends the status line and headers of a 200 NDJSON answer.
func startNDJSON(c echo.Context, version int64, delta, endStream bool) *ndjson {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/x-ndjson; charset=utf-8")
	h.Set("Delta-Table-Version", strconv.FormatInt(version, 10))
	caps := "responseformat=" + formatName(delta)
	if endStream {
		caps += ";includeendstreamaction=true"
	}
	h.Set(capabilitiesHeader, caps)
	c.Response().WriteHeader(http.StatusOK)
	return &ndjson{w: bufio.NewWriterSize(c.Response(), 64<<10)}
}

func (n *ndjson) line(v any) error {
	raw, err := gojson.Marshal(v)
	if err != nil {
		return err
	}
	n.w.Write(raw)
	return n.w.WriteByte('\n')
}

func (n *ndjson) flush() error { return n.w.Flush() }

package sharing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/deltalog"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

// tableRequest is a request on one shared table: the table, its log as
// listed now, the signing key and what the client announced.
type tableRequest struct {
	sharedTable
	log  *deltalog.Log
	key  *fsm.URLSigningKey
	caps capabilities
}

// sharedTableKey holds the request's shared table, for its error messages.
const sharedTableKey = "sharing.table"

// openTable resolves the request's shared table (404 unless the caller
// holds a grant on its share) and opens its Delta log.
func (s *Server) openTable(c echo.Context) (*tableRequest, error) {
	if s.cfg.Objects == nil {
		return nil, &httpapi.KindError{Status: http.StatusServiceUnavailable, Kind: "TEMPORARILY_UNAVAILABLE",
			Message: "This node has no table storage configured."}
	}
	t, err := findTable(c)
	if err != nil {
		return nil, err
	}
	c.Set(sharedTableKey, t)
	key, err := s.signingKey(c, principalOf(c).state)
	if err != nil {
		return nil, err
	}
	lg, err := deltalog.Open(c.Request().Context(), s.cfg.Objects, s.cache, deltalog.Source{Location: t.table.Location, Ratified: ratified(t.table)})
	if err != nil {
		return nil, s.logError(c, err)
	}
	return &tableRequest{sharedTable: t, log: lg, key: key, caps: parseCapabilities(c.Request().Header.Get(capabilitiesHeader))}, nil
}

func findTable(c echo.Context) (sharedTable, error) {
	shareName, schema, table := c.Param("share"), c.Param("schema"), c.Param("table")
	sh, err := granted(c, shareName)
	if err != nil {
		return sharedTable{}, err
	}
	if obj, ok := sh.SharedObject(schema, table); ok {
		if tb, ok := principalOf(c).state.SharedTable(obj); ok {
			return sharedTable{share: sh, obj: obj, table: tb}, nil
		}
	}
	return sharedTable{}, notFound("[Share/Schema/Table] '%s/%s/%s' does not exist, please contact your share provider for further information.", shareName, schema, table)
}

// ratified lists a catalog-managed table's ratified commits, whose files
// may not be published in _delta_log/ yet.
func ratified(tb *fsm.Table) []deltalog.Ratified {
	if tb.Type != fsm.TableManaged {
		return nil
	}
	out := make([]deltalog.Ratified, 0, len(tb.Commits))
	for _, cm := range tb.Commits {
		out = append(out, deltalog.Ratified{Version: cm.Version, Timestamp: cm.Timestamp,
			Location: storage.Join(tb.Location, "_delta_log/_staged_commits/"+cm.FileName)})
	}
	return out
}

// dotted is the table's name as recipients see it: share.schema.table.
func (t sharedTable) dotted() string { return t.share.Name + "." + t.obj.SharedAs }

func (t sharedTable) history() bool { return t.obj.HistoryDataSharingStatus == "ENABLED" }

// needHistory refuses time travel and change feeds on a table shared
// without its history.
func (t sharedTable) needHistory() error {
	if !t.history() {
		return invalid("Reading table by version or timestamp is not supported because history sharing is not enabled on table: %s", t.dotted())
	}
	return nil
}

// checkStart refuses versions below the share's start version.
func (t sharedTable) checkStart(v int64) error {
	if v < t.obj.StartVersion {
		return invalid("You can only query table data since version %d.", t.obj.StartVersion)
	}
	return nil
}

// logError answers a failure to read the table's log. A log that
// storage cannot give (none yet, a commit or checkpoint missing, a file
// that does not parse) is the provider's to repair, and a retry does not
// help: 409 FAILED_PRECONDITION, naming the cause. A storage that fails
// to answer is a 503 a client retries. Messages never show the table's
// storage location.
func (s *Server) logError(c echo.Context, err error) error {
	t, _ := c.Get(sharedTableKey).(sharedTable)
	name := "the table"
	if t.share != nil {
		name = t.dotted()
	}
	switch {
	case errors.Is(err, deltalog.ErrVersionUnavailable), errors.Is(err, deltalog.ErrTimestampOutOfRange):
		return invalid("%s", t.redact(err))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	cause, definite := logCause(err)
	s.log.WarnContext(c.Request().Context(), "reading a shared table's Delta log failed", "path", c.Request().URL.Path, "err", err)
	if !definite {
		return &httpapi.KindError{Status: http.StatusServiceUnavailable, Kind: codeUnavailable,
			Message: fmt.Sprintf("The storage of shared table %s could not be read (%s); retry later.", name, t.redact(err))}
	}
	return &httpapi.KindError{Status: http.StatusConflict, Kind: codeFailedPrecondition,
		Message: fmt.Sprintf("The shared table %s cannot be read: %s (%s). Please contact your share provider: its Delta log must be repaired or published before the table can be read.", name, cause, t.redact(err))}
}

// logCause tells a log storage cannot give (definite: retrying does not
// help) from a storage that failed to answer, and says which in words.
func logCause(err error) (cause string, definite bool) {
	switch {
	case errors.Is(err, deltalog.ErrNotDeltaTable):
		return "it has no Delta log in storage", true
	case errors.Is(err, deltalog.ErrCorrupt):
		return "its Delta log is incomplete or damaged", true
	}
	return "", false
}

// redact is an error's text without the table's storage location: paths
// inside the table become relative to it, and the prefix of the log
// reader's errors goes.
func (t sharedTable) redact(err error) string {
	msg := err.Error()
	if t.table != nil && t.table.Location != "" {
		loc := strings.TrimRight(t.table.Location, "/")
		msg = strings.ReplaceAll(msg, loc+"/", "")
		msg = strings.ReplaceAll(msg, loc, "the table")
	}
	return strings.ReplaceAll(msg, "deltalog: ", "")
}

// signer returns the URL signer of one answer: every URL it hands out
// expires together, URLTTL from now.
func (s *Server) signer(c echo.Context, tr *tableRequest) *urlSigner {
	return &urlSigner{s: s, ctx: c.Request().Context(), key: tr.key, root: tr.table.Location,
		base: s.endpoint(c), expires: time.Now().Add(s.cfg.URLTTL)}
}

// endpoint is the protocol's public URL.
func (s *Server) endpoint(c echo.Context) string {
	if s.cfg.Endpoint != "" {
		return strings.TrimRight(s.cfg.Endpoint, "/")
	}
	return httpapi.BaseURL(c) + Prefix
}

// tableVersion answers GET .../version and HEAD .../{table}: the latest
// version, or with startingTimestamp the earliest version committed at
// or after it, in the Delta-Table-Version header.
func (s *Server) tableVersion(c echo.Context) error {
	tr, err := s.openTable(c)
	if err != nil {
		return err
	}
	v := tr.log.Latest()
	if ts := c.QueryParam("startingTimestamp"); ts != "" {
		if v, err = tr.versionAtOrAfter(c, ts, "startingTimestamp"); err != nil {
			return err
		}
	}
	c.Response().Header().Set("Delta-Table-Version", itoa(v))
	return c.NoContent(http.StatusOK)
}

// versionAtOrAfter resolves a starting timestamp (history required).
func (tr *tableRequest) versionAtOrAfter(c echo.Context, ts, field string) (int64, error) {
	if err := tr.needHistory(); err != nil {
		return 0, err
	}
	ms, err := parseTimestamp(field, ts)
	if err != nil {
		return 0, err
	}
	v, err := tr.log.VersionAtOrAfter(c.Request().Context(), ms)
	if err != nil {
		return 0, invalid("The provided timestamp (%s) is after the latest commit of the table.", ts)
	}
	return v, tr.checkStart(v)
}

func parseTimestamp(field, s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, invalid("Invalid %s: '%s'; use an ISO-8601 timestamp with an offset, such as 2024-01-01T00:00:00Z.", field, s)
	}
	return t.UnixMilli(), nil
}

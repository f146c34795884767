// Package deltaapi serves the UC Delta API (kebab-case): config, staging
// tables, managed and external Delta tables, their commits and vended
// credentials. It translates between that wire format and fsm commands
// and state; the httpapi core routes, reads, proposes and renders errors
// with this package's mapping.
package deltaapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

const (
	tablePath = "/catalogs/:catalog/schemas/:schema/tables/:table"
	// deltaProtocolVersion is the only Delta API protocol version served.
	deltaProtocolVersion = "1.0"
	// objectReadTimeout bounds the replay check's reads of table files.
	objectReadTimeout = 10 * time.Second
)

// Prefix is the path the Delta API is served under.
const Prefix = "/api/2.1/unity-catalog/delta/v1"

// Config configures the Delta API.
type Config struct {
	// Credentials vend what clients get for a location (nil: nothing;
	// they use their ambient credentials).
	Credentials CredentialVendor
	// Objects reads table files for the purged-version replay check (nil:
	// such replays answer "unknown, retry").
	Objects ObjectReader
}

// ObjectReader reads the table files the catalog itself compares (the
// published and staged commit of a purged-version replay), named by full
// location URL; storage.Blobs is one.
type ObjectReader interface {
	Read(ctx context.Context, location string) ([]byte, error)
}

// Server serves the Delta API on a core.
type Server struct {
	core *httpapi.Server
	cfg  Config
	// log writes a message about one table at most once a minute (records
	// with a "table" attribute): a client can provoke some of them, such
	// as the failed comparison of a purged commit's files, at will.
	log *slog.Logger
}

// Register mounts the Delta API on the core. Every request goes to the
// leader (stale reads excepted).
func Register(core *httpapi.Server, cfg Config) *Server {
	s := &Server{core: core, cfg: cfg, log: httpapi.Throttled(core.Logger(), httpapi.FailureLogInterval, "table")}
	g := core.Mount(httpapi.Group{Name: "delta", Prefix: Prefix, Errors: errorMapping{}, ToLeader: true, Relay: true})
	g.GET("/config", httpapi.AnyCaller(), s.deltaConfig)
	g.POST("/catalogs/:catalog/schemas/:schema/staging-tables", inSchema, httpapi.Write(core, buildStagingTable, nil, s.stagingAnswer))
	g.GET("/staging-tables/:id/credentials", httpapi.Needs(s.stagingNeeds), s.stagingCredentials)
	g.POST("/catalogs/:catalog/schemas/:schema/tables", inSchema, httpapi.Write(core, buildCreateTable, nil, loadAnswer))
	g.GET(tablePath, onTable(fsm.PrivSelect), s.loadDeltaTable)
	g.HEAD(tablePath, onTable(fsm.PrivSelect), s.headDeltaTable)
	g.POST(tablePath, onTable(fsm.PrivModify), httpapi.Write(core, buildUpdateTable, s.decidePurgedReplay, loadAnswer))
	g.DELETE(tablePath, ownsTable, httpapi.Write(core, buildDeleteTable, nil, noContent))
	g.POST(tablePath+"/rename", ownsTable, httpapi.Write(core, buildRenameTable, nil, noContent))
	g.GET(tablePath+"/credentials", httpapi.Needs(credentialNeeds), s.tableCredentials)
	g.POST(tablePath+"/metrics", onTable(fsm.PrivSelect), s.reportMetrics)
	core.AddTxPlanner("delta", s.planTxOp)
	return s
}

func loadAnswer(c echo.Context, res fsm.Result) error {
	return c.JSON(http.StatusOK, loadResponse(res.Table))
}

func noContent(c echo.Context, _ fsm.Result) error { return c.NoContent(http.StatusNoContent) }

// invalid is a 400.
func invalid(format string, args ...any) error { return httpapi.Invalid(format, args...) }

// deltaEndpoints are the endpoints config advertises, in UC's order.
var deltaEndpoints = []string{
	"POST /v1/catalogs/{catalog}/schemas/{schema}/staging-tables",
	"POST /v1/catalogs/{catalog}/schemas/{schema}/tables",
	"GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
	"POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
	"DELETE /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
	"HEAD /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
	"POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/rename",
	"GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/credentials",
	"POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/metrics",
	"GET /v1/staging-tables/{table_id}/credentials",
}

func (s *Server) deltaConfig(c echo.Context) error {
	q := c.QueryParams()
	if _, ok := q["catalog"]; !ok {
		return invalid("Required query parameter 'catalog' is missing.")
	}
	catalog := q.Get("catalog")
	if strings.TrimSpace(catalog) == "" {
		return invalid("Must supply a proper catalog in catalog parameter.")
	}
	if err := checkProtocolVersions(q); err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	if _, err := httpapi.LookupCatalog(st, catalog); err != nil {
		return err
	}
	endpoints := make([]string, len(deltaEndpoints))
	for i, e := range deltaEndpoints {
		endpoints[i] = strings.Replace(e, "{catalog}", catalog, 1)
	}
	return c.JSON(http.StatusOK, map[string]any{"endpoints": endpoints, "protocol-version": deltaProtocolVersion})
}

// checkProtocolVersions validates the client's protocol-versions list
// (comma-separated <major>.<minor>); the server answers 1.0.
func checkProtocolVersions(q map[string][]string) error {
	vals, ok := q["protocol-versions"]
	if !ok {
		return invalid("Required query parameter 'protocol-versions' is missing.")
	}
	raw := strings.Join(vals, ",")
	if strings.TrimSpace(raw) == "" {
		return invalid("Must supply the protocol-versions parameter: a comma-separated list such as 1.0. Server supports protocol versions: %s.", deltaProtocolVersion)
	}
	for _, e := range strings.Split(raw, ",") {
		e = strings.TrimSpace(e)
		major, minor, found := strings.Cut(e, ".")
		if !found || !isDigits(major) || !isDigits(minor) {
			return invalid("Invalid protocol-versions parameter %q: entry %q is not of the form <major>.<minor>. Server supports protocol versions: %s.", raw, e, deltaProtocolVersion)
		}
	}
	return nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func strp(s string) *string { return &s }

// Staging answer content, fixed as UC 0.7.0 hands it out.
func (s *Server) stagingResponse(st *fsm.StagingTable, cred storageCredential) stagingTableResponse {
	reader, writer := fsm.ManagedReaderFeatures, fsm.ManagedWriterFeatures
	minR, minW := 3, 7
	required := map[string]*string{fsm.PropTableID: strp(st.ID)}
	for _, kv := range fsm.ManagedProperties {
		required[kv[0]] = strp(kv[1])
	}
	return stagingTableResponse{
		TableID: st.ID, TableType: fsm.TableManaged, Location: st.Location,
		StorageCredentials: []storageCredential{cred},
		RequiredProtocol:   deltaProtocol{MinReaderVersion: &minR, MinWriterVersion: &minW, ReaderFeatures: reader, WriterFeatures: writer},
		SuggestedProtocol: deltaProtocol{ReaderFeatures: []string{"columnMapping"},
			WriterFeatures: []string{"columnMapping", "domainMetadata", "rowTracking"}},
		RequiredProperties: required,
		SuggestedProperties: map[string]*string{
			"delta.columnMapping.mode":                                 strp("name"),
			"delta.columnMapping.maxColumnId":                          nil,
			"delta.enableRowTracking":                                  strp("true"),
			"delta.rowTracking.materializedRowIdColumnName":            nil,
			"delta.rowTracking.materializedRowCommitVersionColumnName": nil,
			"delta.randomizeFilePrefixes":                              strp("true"),
			"delta.parquet.compression.codec":                          strp("zstd"),
		},
	}
}

type stagingRequest struct {
	Name *string `json:"name"`
}

func buildStagingTable(in *httpapi.In[stagingRequest]) (*fsm.CreateStagingTable, error) {
	req := in.Body
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		return nil, invalid("Staging table name is required.")
	}
	if err := httpapi.CheckName(*req.Name); err != nil {
		return nil, err
	}
	return &fsm.CreateStagingTable{Stamp: in.Stamp, ID: uuid.NewString(),
		CatalogName: in.Param("catalog"), SchemaName: in.Param("schema"), Name: *req.Name}, nil
}

func (s *Server) stagingAnswer(c echo.Context, res fsm.Result) error {
	cred, err := s.credentialFor(c.Request().Context(), res.Staging.Location, "READ_WRITE")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.stagingResponse(res.Staging, cred))
}

func (s *Server) stagingCredentials(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return invalid("Invalid staging table id: %s", c.Param("id"))
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	stg, ok := st.StagingTable(id.String())
	if !ok {
		return fsm.Errf(fsm.CodeStagingNotFound, "Staging table not found with id: %s", id)
	}
	return s.credentialsJSON(c, stg.Location, "READ_WRITE")
}

// loadResponse renders a table as the Delta API's load answer.
func loadResponse(t *fsm.Table) loadTableResponse {
	md := tableMetadata{ETag: t.ETag(), TableType: t.Type, TableUUID: t.ID, Location: t.Location,
		CreatedTime: t.CreatedAt, UpdatedTime: t.UpdatedAt, Columns: t.Columns,
		PartitionColumns: t.PartitionColumns, Properties: httpapi.NonNil(t.Properties)}
	if len(md.Columns) == 0 {
		md.Columns = deltaschema.Empty()
	}
	if md.PartitionColumns == nil {
		md.PartitionColumns = []string{}
	}
	if v, err := strconv.ParseInt(t.Properties[fsm.PropLastUpdate], 10, 64); err == nil {
		md.LastCommitVersion = &v
	}
	if v, err := strconv.ParseInt(t.Properties[fsm.PropLastCommitTs], 10, 64); err == nil {
		md.LastCommitTimestampMs = &v
	}
	out := loadTableResponse{Metadata: md}
	if t.Type == fsm.TableManaged {
		commits := []deltaCommitOut{}
		for _, cm := range t.UnbackfilledCommits() {
			commits = append(commits, deltaCommitOut{Version: cm.Version, Timestamp: cm.Timestamp,
				FileName: cm.FileName, FileSize: cm.FileSize, FileModificationTimestamp: cm.FileModTime})
		}
		latest := t.LatestVersion()
		out.Commits, out.LatestTableVersion = &commits, &latest
	}
	if u := t.Uniform; u != nil {
		ml, cv, ct := u.MetadataLocation, u.ConvertedDeltaVersion, u.ConvertedDeltaTimestamp
		out.Uniform = &uniform{Iceberg: &icebergUniform{MetadataLocation: &ml, ConvertedDeltaVersion: &cv, ConvertedDeltaTimestamp: &ct}}
	}
	return out
}

func (s *Server) deltaTable(c echo.Context) (*fsm.Table, error) {
	st, err := s.core.State(c)
	if err != nil {
		return nil, err
	}
	return httpapi.LookupTable(st, c.Param("catalog"), c.Param("schema"), c.Param("table"))
}

func (s *Server) loadDeltaTable(c echo.Context) error {
	t, err := s.deltaTable(c)
	if err != nil {
		return err
	}
	if t.Format != fsm.FormatDelta {
		return fsm.Errf(fsm.CodeUnsupportedFormat, "Table is not a Delta table: %s", t.FullName())
	}
	return c.JSON(http.StatusOK, loadResponse(t))
}

func (s *Server) headDeltaTable(c echo.Context) error {
	if _, err := s.deltaTable(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func buildUpdateTable(in *httpapi.In[updateTableRequest]) (*fsm.UpdateTable, error) {
	cmd, err := buildUpdate(&in.Body, in.Found)
	if err != nil {
		return nil, err
	}
	cmd.Stamp = in.Stamp
	cmd.CatalogName, cmd.SchemaName, cmd.Name = in.Param("catalog"), in.Param("schema"), in.Param("table")
	return cmd, nil
}

// decidePurgedReplay compares, before proposing, the published and staged
// files of a commit whose version the log no longer tracks (files are
// immutable, so the verdict stays true). The FSM decides with it; without
// one it answers "unknown, retry".
func (s *Server) decidePurgedReplay(c echo.Context, st *fsm.State, cmd *fsm.UpdateTable) {
	if cmd.AddCommit == nil {
		return
	}
	t, ok := st.Table(cmd.CatalogName, cmd.SchemaName, cmd.Name)
	if !ok || len(t.Commits) == 0 || cmd.AddCommit.Commit.Version >= t.Commits[0].Version {
		return
	}
	v := cmd.AddCommit.Commit.Version
	same, err := s.sameObjects(c.Request().Context(), storage.Join(t.Location, publishedName(v)),
		storage.Join(t.Location, "_delta_log/_staged_commits/"+cmd.AddCommit.Commit.FileName))
	switch {
	case err != nil:
		s.log.WarnContext(c.Request().Context(), "cannot compare commit files for a purged version", "table", t.FullName(), "version", v, "err", err)
		cmd.AddCommit.PurgedReplay = fsm.ReplayUnknown
	case same:
		cmd.AddCommit.PurgedReplay = fsm.ReplayIdentical
	default:
		cmd.AddCommit.PurgedReplay = fsm.ReplayDifferent
	}
}

// sameObjects compares two table files through the object store, giving
// up after objectReadTimeout.
func (s *Server) sameObjects(ctx context.Context, a, b string) (bool, error) {
	if s.cfg.Objects == nil {
		return false, errors.New("no object store configured")
	}
	ctx, cancel := context.WithTimeout(ctx, objectReadTimeout)
	defer cancel()
	return storage.SameContent(ctx, s.cfg.Objects, a, b)
}

func buildDeleteTable(in *httpapi.In[httpapi.NoBody]) (*fsm.DeleteTable, error) {
	return &fsm.DeleteTable{Stamp: in.Stamp, CatalogName: in.Param("catalog"),
		SchemaName: in.Param("schema"), Name: in.Param("table")}, nil
}

type renameRequest struct {
	NewName *string `json:"new-name"`
}

func buildRenameTable(in *httpapi.In[renameRequest]) (*fsm.RenameTable, error) {
	req := in.Body
	if req.NewName == nil || strings.TrimSpace(*req.NewName) == "" {
		return nil, invalid("New table name is required.")
	}
	if err := httpapi.CheckName(*req.NewName); err != nil {
		return nil, err
	}
	return &fsm.RenameTable{Stamp: in.Stamp, CatalogName: in.Param("catalog"),
		SchemaName: in.Param("schema"), Name: in.Param("table"), NewName: *req.NewName}, nil
}

func (s *Server) tableCredentials(c echo.Context) error {
	op := c.QueryParam("operation")
	if op != "READ" && op != "READ_WRITE" {
		return invalid("operation must be READ or READ_WRITE, got '%s'.", op)
	}
	t, err := s.deltaTable(c)
	if err != nil {
		return err
	}
	return s.credentialsJSON(c, t.Location, op)
}

func (s *Server) credentialsJSON(c echo.Context, loc, op string) error {
	cred, err := s.credentialFor(c.Request().Context(), loc, op)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, credentialsResponse{StorageCredentials: []storageCredential{cred}})
}

func (s *Server) reportMetrics(c echo.Context) error {
	var req struct {
		TableID *string `json:"table-id"`
	}
	if _, err := httpapi.BindJSON(c, &req); err != nil {
		return err
	}
	if req.TableID == nil || *req.TableID == "" {
		return invalid("table-id is required.")
	}
	t, err := s.deltaTable(c)
	if err != nil {
		return err
	}
	if *req.TableID != t.ID {
		return invalid("table-id %s does not match table %s.", *req.TableID, t.FullName())
	}
	return c.NoContent(http.StatusNoContent)
}

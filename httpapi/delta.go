package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/storage"
)

const (
	tablePath = "/catalogs/:catalog/schemas/:schema/tables/:table"
	// deltaProtocolVersion is the only Delta API protocol version served.
	deltaProtocolVersion = "1.0"
	// objectReadTimeout bounds the replay check's reads of table files.
	objectReadTimeout = 10 * time.Second
)

// registerDelta mounts the UC Delta API (kebab-case).
func (s *Server) registerDelta(g *echo.Group) {
	g.GET("/config", s.deltaConfig)
	g.POST("/catalogs/:catalog/schemas/:schema/staging-tables", s.createStagingTable)
	g.GET("/staging-tables/:id/credentials", s.stagingCredentials)
	g.POST("/catalogs/:catalog/schemas/:schema/tables", s.createDeltaTable)
	g.GET(tablePath, s.loadDeltaTable)
	g.HEAD(tablePath, s.headDeltaTable)
	g.POST(tablePath, s.updateDeltaTable)
	g.DELETE(tablePath, s.deleteDeltaTable)
	g.POST(tablePath+"/rename", s.renameDeltaTable)
	g.GET(tablePath+"/credentials", s.tableCredentials)
	g.POST(tablePath+"/metrics", s.reportMetrics)
}

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
	st, err := s.readState(c)
	if err != nil {
		return err
	}
	if _, ok := st.Catalog(catalog); !ok {
		return fsm.Errf(fsm.CodeCatalogNotFound, "Catalog not found: %s", catalog)
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

func (s *Server) createStagingTable(c echo.Context) error {
	var req struct {
		Name *string `json:"name"`
	}
	if _, err := bindJSON(c, &req); err != nil {
		return err
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		return invalid("Staging table name is required.")
	}
	if err := checkName(*req.Name); err != nil {
		return err
	}
	res, err := s.propose(c, &fsm.CreateStagingTable{Stamp: stamp(c), ID: uuid.NewString(),
		CatalogName: c.Param("catalog"), SchemaName: c.Param("schema"), Name: *req.Name})
	if err != nil {
		return err
	}
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
	st, err := s.readState(c)
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
		PartitionColumns: t.PartitionColumns, Properties: nonNil(t.Properties)}
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
	st, err := s.readState(c)
	if err != nil {
		return nil, err
	}
	return lookupTable(st, c.Param("catalog"), c.Param("schema"), c.Param("table"))
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

func (s *Server) updateDeltaTable(c echo.Context) error {
	var req updateTableRequest
	found, err := bindJSON(c, &req)
	if err != nil {
		return err
	}
	cmd, err := buildUpdate(&req, found)
	if err != nil {
		return err
	}
	cmd.Stamp = stamp(c)
	cmd.CatalogName, cmd.SchemaName, cmd.Name = c.Param("catalog"), c.Param("schema"), c.Param("table")
	s.decidePurgedReplay(c.Request().Context(), cmd)
	res, err := s.propose(c, cmd)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, loadResponse(res.Table))
}

// decidePurgedReplay compares, before proposing, the published and staged
// files of a commit whose version the log no longer tracks (files are
// immutable, so the verdict stays true). The FSM decides with it; without
// one it answers "unknown, retry".
func (s *Server) decidePurgedReplay(ctx context.Context, cmd *fsm.UpdateTable) {
	if cmd.AddCommit == nil {
		return
	}
	st, _ := s.cluster.StaleState()
	t, ok := st.Table(cmd.CatalogName, cmd.SchemaName, cmd.Name)
	if !ok || len(t.Commits) == 0 || cmd.AddCommit.Commit.Version >= t.Commits[0].Version {
		return
	}
	v := cmd.AddCommit.Commit.Version
	same, err := s.sameObjects(ctx, storage.Join(t.Location, publishedName(v)),
		storage.Join(t.Location, "_delta_log/_staged_commits/"+cmd.AddCommit.Commit.FileName))
	switch {
	case err != nil:
		s.log.Warn("cannot compare commit files for a purged version", "table", t.FullName(), "version", v, "err", err)
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

func (s *Server) deleteDeltaTable(c echo.Context) error {
	if _, err := s.propose(c, &fsm.DeleteTable{Stamp: stamp(c), CatalogName: c.Param("catalog"),
		SchemaName: c.Param("schema"), Name: c.Param("table")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) renameDeltaTable(c echo.Context) error {
	var req struct {
		NewName *string `json:"new-name"`
	}
	if _, err := bindJSON(c, &req); err != nil {
		return err
	}
	if req.NewName == nil || strings.TrimSpace(*req.NewName) == "" {
		return invalid("New table name is required.")
	}
	if err := checkName(*req.NewName); err != nil {
		return err
	}
	if _, err := s.propose(c, &fsm.RenameTable{Stamp: stamp(c), CatalogName: c.Param("catalog"),
		SchemaName: c.Param("schema"), Name: c.Param("table"), NewName: *req.NewName}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
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
	if _, err := bindJSON(c, &req); err != nil {
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

package iceberg

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

const (
	tablesPath = nsPath + "/tables"
	tablePath  = tablesPath + "/:table"
	// viewType is the table type of Iceberg views, which table routes
	// never see.
	viewType = "VIEW"
	// purgeTimeout bounds deleting a dropped table's files.
	purgeTimeout = 5 * time.Minute
)

func init() {
	addRoutes(
		route{http.MethodGet, tablesPath, h((*Server).listTables)},
		route{http.MethodPost, tablesPath, writeRoute((*Server).buildCreateTable, (*Server).tableAnswer)},
		route{http.MethodPost, nsPath + "/register", writeRoute((*Server).buildRegister, (*Server).tableAnswer)},
		route{http.MethodGet, tablePath, h((*Server).loadTable)},
		route{http.MethodHead, tablePath, h((*Server).tableExists)},
		route{http.MethodDelete, tablePath, writeRoute((*Server).buildDropTable, (*Server).dropped)},
		route{http.MethodPost, "/tables/rename", writeRoute((*Server).buildRename, noContentAnswer)},
	)
}

// isTable reports whether tb is an Iceberg table (not a view, not Delta).
func isTable(tb *fsm.Table) bool {
	return tb.Format == fsm.FormatIceberg && tb.Iceberg != nil && tb.Type != viewType
}

// lookupTable resolves an Iceberg table: 404 NoSuchNamespaceException
// for a missing namespace, NoSuchTableException for a missing table or
// one that is not an Iceberg table.
func lookupTable(st *fsm.State, r ref) (*fsm.Table, error) {
	if _, err := lookupNamespace(st, r); err != nil {
		return nil, err
	}
	tb, found := st.TableIn(r.path(), r.name)
	switch {
	case !found || tb.Type == viewType:
		return nil, fsm.Errf(fsm.CodeTableNotFound, "Table does not exist: %s", r.dotted())
	case !isTable(tb):
		return nil, fsm.Errf(fsm.CodeUnsupportedFormat, "Table %s is a %s table, not an Iceberg table", r.dotted(), tb.Format)
	}
	return tb, nil
}

// readTable resolves the request's table in the read state.
func (s *Server) readTable(c echo.Context) (*fsm.Table, error) {
	r, err := tableRef(c)
	if err != nil {
		return nil, err
	}
	st, err := s.core.State(c)
	if err != nil {
		return nil, err
	}
	return lookupTable(st, r)
}

type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

type tableList struct {
	Identifiers   []identifier `json:"identifiers"`
	NextPageToken *string      `json:"next-page-token,omitempty"`
}

func (s *Server) listTables(c echo.Context) error {
	r, err := namespaceRef(c)
	if err != nil {
		return err
	}
	p, err := pageParams(c)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	if _, err := lookupNamespace(st, r); err != nil {
		return err
	}
	var tables []*fsm.Table
	for _, tb := range st.TablesIn(r.path(), p.after, 0) {
		if isTable(tb) {
			tables = append(tables, tb)
		}
	}
	found, next := cut(p, tables, func(tb *fsm.Table) string { return tb.Name })
	out := tableList{Identifiers: []identifier{}, NextPageToken: next}
	for _, tb := range found {
		out.Identifiers = append(out.Identifiers, identifier{Namespace: r.levels, Name: tb.Name})
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) tableExists(c echo.Context) error {
	if _, err := s.readTable(c); err != nil {
		return err
	}
	return noContent(c)
}

// loadTable answers a table's metadata, or 304 when If-None-Match names
// the current tag (decided from the pointer, before storage is read).
func (s *Server) loadTable(c echo.Context) error {
	mode, err := snapshotMode(c)
	if err != nil {
		return err
	}
	tb, err := s.readTable(c)
	if err != nil {
		return err
	}
	tag := etag(tb.Iceberg.MetadataLocation, mode)
	if noneMatch(c.Request().Header.Values("If-None-Match"), tag) {
		c.Response().Header().Set("ETag", tag)
		return c.NoContent(http.StatusNotModified)
	}
	return s.answerTable(c, tb, mode)
}

func snapshotMode(c echo.Context) (string, error) {
	switch m := c.QueryParam("snapshots"); m {
	case "", modeAll:
		return modeAll, nil
	case modeRefs:
		return modeRefs, nil
	default:
		return "", httpapi.Invalid("snapshots must be all or refs, got %q", httpapi.Clip(m))
	}
}

type loadResult struct {
	MetadataLocation *string           `json:"metadata-location,omitempty"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

// answerTable writes a table's LoadTableResult with its ETag.
func (s *Server) answerTable(c echo.Context, tb *fsm.Table, mode string) error {
	loc := tb.Iceberg.MetadataLocation
	f, err := s.readMetadata(c.Request().Context(), loc)
	if err != nil {
		return err
	}
	body := f.raw
	if mode == modeRefs {
		if body, err = refsOnly(f); err != nil {
			return err
		}
	}
	c.Response().Header().Set("ETag", etag(loc, mode))
	return c.JSON(http.StatusOK, loadResult{MetadataLocation: &loc, Metadata: body, Config: map[string]string{}})
}

// tableAnswer renders a create, register or commit: the table as a
// default load shows it, with the same ETag.
func (s *Server) tableAnswer(c echo.Context, res fsm.Result) error {
	return s.answerTable(c, res.Table, modeAll)
}

func noContentAnswer(_ *Server, c echo.Context, _ fsm.Result) error { return noContent(c) }

type createTableBody struct {
	Name          *string           `json:"name"`
	Location      string            `json:"location"`
	Schema        json.RawMessage   `json:"schema"`
	PartitionSpec json.RawMessage   `json:"partition-spec"`
	WriteOrder    json.RawMessage   `json:"write-order"`
	StageCreate   bool              `json:"stage-create"`
	Properties    map[string]string `json:"properties"`
}

// newTable is a table about to be created: where, and its metadata.
type newTable struct {
	ref      ref
	location string
	managed  bool
	meta     table.Metadata
}

func (s *Server) buildCreateTable(in *httpapi.In[createTableBody]) (fsm.Command, error) {
	nt, err := s.planCreate(in)
	if err != nil {
		return nil, err
	}
	if in.Body.StageCreate {
		return nil, stagedAnswer(nt.meta)
	}
	return s.proposeCreate(in, in.Stamp, nt)
}

// planCreate checks a create request and builds the table's metadata.
func (s *Server) planCreate(in *httpapi.In[createTableBody]) (*newTable, error) {
	r, err := namespaceRef(in)
	if err != nil {
		return nil, err
	}
	if r.name, err = httpapi.RequiredName(in.Body.Name, "Table name"); err != nil {
		return nil, err
	}
	st, err := s.core.State(in)
	if err != nil {
		return nil, err
	}
	if err := checkNameFree(st, r); err != nil {
		return nil, err
	}
	nt := &newTable{ref: r}
	id := uuid.New()
	if nt.location, nt.managed, err = tableLocation(st, r, in.Body.Location, id); err != nil {
		return nil, err
	}
	if err := in.CheckNotReserved("Table location", nt.location); err != nil {
		return nil, err
	}
	nt.meta, err = createMetadata(&in.Body, nt.location, id)
	return nt, err
}

// checkNameFree refuses a create in a missing namespace or over any
// existing table or view of the name.
func checkNameFree(st *fsm.State, r ref) error {
	if _, err := lookupNamespace(st, r); err != nil {
		return err
	}
	if tb, taken := st.TableIn(r.path(), r.name); taken {
		return fsm.Errf(fsm.CodeTableExists, "Table or view already exists: %s (%s %s)", r.dotted(), tb.Format, strings.ToLower(tb.Type))
	}
	return nil
}

// tableLocation is the requested location, or the schema's managed root
// + /tables/<uuid>; managed tells which.
func tableLocation(st *fsm.State, r ref, requested string, id uuid.UUID) (string, bool, error) {
	if requested != "" {
		loc, err := storage.Normalize(requested)
		if err != nil {
			return "", false, httpapi.Invalid("Invalid table location: %v", err)
		}
		return strings.TrimRight(loc, "/"), false, httpapi.CheckExternalLocation(loc)
	}
	root := st.ManagedRoot(r.warehouse, r.levels[0])
	if root == "" {
		return "", false, httpapi.Invalid("No managed storage location is configured for %s; give the table a location.", r.dotted())
	}
	return root + "/tables/" + id.String(), true, nil
}

// createMetadata builds fresh metadata (ids reassigned) from a request.
func createMetadata(b *createTableBody, loc string, id uuid.UUID) (table.Metadata, error) {
	if len(b.Schema) == 0 || string(b.Schema) == "null" {
		return nil, httpapi.Invalid("A table needs a schema")
	}
	var sc iceberg.Schema
	if err := json.Unmarshal(b.Schema, &sc); err != nil {
		return nil, httpapi.Invalid("Invalid schema: %v", err)
	}
	spec := iceberg.UnpartitionedSpec
	if len(b.PartitionSpec) > 0 && string(b.PartitionSpec) != "null" {
		var u iceberg.UnboundPartitionSpec
		if err := json.Unmarshal(b.PartitionSpec, &u); err != nil {
			return nil, httpapi.Invalid("Invalid partition-spec: %v", err)
		}
		spec = &u.PartitionSpec
	}
	order := table.UnsortedSortOrder
	if len(b.WriteOrder) > 0 && string(b.WriteOrder) != "null" {
		var u table.UnboundSortOrder
		if err := json.Unmarshal(b.WriteOrder, &u); err != nil {
			return nil, httpapi.Invalid("Invalid write-order: %v", err)
		}
		order = u.SortOrder
	}
	meta, err := table.NewMetadataWithUUID(&sc, spec, order, loc, b.Properties, id)
	if err != nil {
		return nil, httpapi.Invalid("Invalid table: %v", err)
	}
	return meta, nil
}

// proposeCreate writes version 0's metadata file and builds the create.
func (s *Server) proposeCreate(in echo.Context, stamp fsm.Stamp, nt *newTable) (fsm.Command, error) {
	f, err := s.writeNew(in, metadataLocation(nt.location, 0), nt.meta)
	if err != nil {
		return nil, err
	}
	tt := fsm.TableExternal
	if nt.managed {
		tt = fsm.TableManaged
	}
	return &fsm.CreateIcebergTable{Stamp: stamp, ID: nt.meta.TableUUID().String(), Namespace: nt.ref.path(),
		Name: nt.ref.name, TableType: tt, Location: nt.location, MetadataLocation: f.location,
		Properties: nt.meta.Properties()}, nil
}

// stagedAnswer answers a staged create: its metadata, no location, no
// tag; nothing is persisted.
func stagedAnswer(meta table.Metadata) error {
	raw, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	return &settled{status: http.StatusOK, body: loadResult{Metadata: raw, Config: map[string]string{}}}
}

func (s *Server) buildDropTable(in *httpapi.In[httpapi.NoBody]) (fsm.Command, error) {
	tb, err := s.readTable(in)
	if err != nil {
		return nil, err
	}
	purge, err := httpapi.BoolParam(in, "purgeRequested", false)
	if err != nil {
		return nil, err
	}
	in.Set(purgeKey, purge)
	return &fsm.DropIcebergTable{Stamp: in.Stamp, Namespace: tb.NamespacePath(), Name: tb.Name}, nil
}

const purgeKey = "iceberg.purge"

// dropped answers a drop; a purge then deletes every object under the
// table's location (best effort: failures are logged).
func (s *Server) dropped(c echo.Context, res fsm.Result) error {
	if purge, _ := c.Get(purgeKey).(bool); purge && s.cfg.Objects != nil {
		s.purge(res.Table.Location)
	}
	return noContent(c)
}

func (s *Server) purge(loc string) {
	ctx, cancel := context.WithTimeout(context.Background(), purgeTimeout)
	defer cancel()
	objs, err := s.cfg.Objects.List(ctx, strings.TrimRight(loc, "/")+"/")
	if err != nil {
		s.log.Warn("purge: could not list the dropped table's files", "location", loc, "err", err)
		return
	}
	for _, o := range objs {
		s.cache.drop(o.Location)
		if err := s.cfg.Objects.Delete(ctx, o.Location); err != nil {
			s.log.Warn("purge: could not delete a dropped table's file", "location", o.Location, "err", err)
		}
	}
}

type renameBody struct {
	Source      *identifier `json:"source"`
	Destination *identifier `json:"destination"`
}

func (s *Server) buildRename(in *httpapi.In[renameBody]) (fsm.Command, error) {
	w, err := warehouseParam(in)
	if err != nil {
		return nil, err
	}
	src, err := identRef(w, in.Body.Source, "source")
	if err != nil {
		return nil, err
	}
	dst, err := identRef(w, in.Body.Destination, "destination")
	if err != nil {
		return nil, err
	}
	st, err := s.core.State(in)
	if err != nil {
		return nil, err
	}
	if _, err := lookupTable(st, src); err != nil {
		return nil, asTableMissing(err)
	}
	return &fsm.RenameIcebergTable{Stamp: in.Stamp, Namespace: src.path(), Name: src.name,
		NewNamespace: dst.path(), NewName: dst.name}, nil
}

// identRef checks a table identifier of a request body.
func identRef(w string, id *identifier, what string) (ref, error) {
	if id == nil {
		return ref{}, httpapi.Invalid("%s is required", what)
	}
	if err := checkNamespace(id.Namespace); err != nil {
		return ref{}, err
	}
	return ref{warehouse: w, levels: id.Namespace, name: id.Name}, checkLevel("Table name", id.Name)
}

// asTableMissing reports a missing namespace of a table to act on as the
// table's absence (a rename's source, a commit's table).
func asTableMissing(err error) error {
	var de *fsm.Error
	if errorsAs(err, &de) && de.Code == fsm.CodeSchemaNotFound {
		return fsm.Errf(fsm.CodeTableNotFound, "%s", de.Message)
	}
	return err
}

package iceberg

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

const (
	tablesPath = nsPath + "/tables"
	tablePath  = tablesPath + "/:table"
	// purgeTimeout bounds deleting a dropped table's files.
	purgeTimeout = 5 * time.Minute
)

func init() {
	addRoutes(
		route{http.MethodGet, tablesPath, useNamespace, h((*Server).listTables)},
		route{http.MethodPost, tablesPath, createIn, writeRoute((*Server).buildCreateTable, (*Server).tableAnswer)},
		route{http.MethodPost, nsPath + "/register", registerTable, writeRoute((*Server).buildRegister, (*Server).tableAnswer)},
		route{http.MethodGet, tablePath, selectTable, h((*Server).loadTable)},
		route{http.MethodHead, tablePath, selectTable, h((*Server).tableExists)},
		route{http.MethodDelete, tablePath, ownTable, writeRoute((*Server).buildDropTable, (*Server).dropped)},
		route{http.MethodPost, "/tables/rename", renameObject, writeRoute((*Server).buildRename, noContentAnswer)},
	)
}

// isTable reports whether tb is an Iceberg table (not a view, not Delta).
func isTable(tb *fsm.Table) bool {
	return tb.Format == fsm.FormatIceberg && tb.Iceberg != nil && !tb.IsView()
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
	case !found || tb.IsView():
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

func (s *Server) listTables(c echo.Context) error { return s.listObjects(c, isTable) }

// listObjects lists the tables or views (those keep accepts) of the
// request's namespace that the caller may see, paged.
func (s *Server) listObjects(c echo.Context, keep func(*fsm.Table) bool) error {
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
	shown := func(tb *fsm.Table) bool { return keep(tb) && s.core.Visible(c, st, true, append(r.path(), tb.Name)...) }
	found, next := cut(p, st.TablesInWhere(r.path(), p.after, p.limit(), shown), func(tb *fsm.Table) string { return tb.Name })
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
	MetadataLocation   *string             `json:"metadata-location,omitempty"`
	Metadata           json.RawMessage     `json:"metadata"`
	Config             map[string]string   `json:"config"`
	StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
}

// answerTable writes a table's LoadTableResult with its ETag, and the
// credentials of its location when the request asks for them.
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
	config := map[string]string{}
	creds, err := s.delegate(c, tb.Location, s.operation(c, tb), config)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(loc, mode))
	return writeTableResult(c, loc, body, config, creds)
}

// writeTableResult writes a LoadTableResult or a CommitTableResponse,
// the metadata's bytes as they are stored: an encoder would check and
// copy them all again, which for a table with a long history cost more
// than the rest of the answer. A nil config is left out.
func writeTableResult(c echo.Context, loc string, metadata []byte, config map[string]string, creds []storageCredential) error {
	t := resultTail{StorageCredentials: creds}
	if config != nil {
		t.Config = &config
	}
	tail, err := json.Marshal(t)
	if err != nil {
		return err
	}
	head, err := json.Marshal(loc)
	if err != nil {
		return err
	}
	body := make([]byte, 0, len(metadata)+len(head)+len(tail)+40)
	body = append(append(append(body, `{"metadata-location":`...), head...), `,"metadata":`...)
	body = append(body, metadata...)
	if len(tail) > 2 {
		body = append(append(body, ','), tail[1:len(tail)-1]...)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, append(body, '}'))
}

// resultTail is what a table result holds beside its metadata.
type resultTail struct {
	Config             *map[string]string  `json:"config,omitempty"`
	StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
}

// tableAnswer renders a create, register or commit: the table as a
// default load shows it, with the same ETag.
func (s *Server) tableAnswer(c echo.Context, res fsm.Result) error {
	return s.answerTable(c, res.Table, modeAll)
}

func noContentAnswer(_ *Server, c echo.Context, _ fsm.Result) error { return noContent(c) }

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
		s.purge(c.Request().Context(), res.Table.Location)
	}
	return noContent(c)
}

func (s *Server) purge(reqCtx context.Context, loc string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(reqCtx), purgeTimeout)
	defer cancel()
	objs, err := s.cfg.Objects.List(ctx, strings.TrimRight(loc, "/")+"/")
	if err != nil {
		s.log.WarnContext(ctx, "purge: could not list the dropped table's files", "location", loc, "err", err)
		return
	}
	for _, o := range objs {
		s.cache.drop(o.Location)
		if err := s.cfg.Objects.Delete(ctx, o.Location); err != nil {
			s.log.WarnContext(ctx, "purge: could not delete a dropped table's file", "location", o.Location, "err", err)
		}
	}
}

type renameBody struct {
	Source      *identifier `json:"source"`
	Destination *identifier `json:"destination"`
}

func (s *Server) buildRename(in *httpapi.In[renameBody]) (fsm.Command, error) {
	src, dst, err := s.renameRefs(in, lookupTable)
	if err != nil {
		return nil, err
	}
	return &fsm.RenameIcebergTable{Stamp: in.Stamp, Namespace: src.path(), Name: src.name,
		NewNamespace: dst.path(), NewName: dst.name}, nil
}

// renameRefs checks a rename's source and destination (of tables or of
// views) and resolves the source with lookup.
func (s *Server) renameRefs(in *httpapi.In[renameBody], lookup func(*fsm.State, ref) (*fsm.Table, error)) (src, dst ref, err error) {
	w, err := warehouseParam(in)
	if err != nil {
		return ref{}, ref{}, err
	}
	if src, err = identRef(w, in.Body.Source, "source"); err != nil {
		return ref{}, ref{}, err
	}
	if dst, err = identRef(w, in.Body.Destination, "destination"); err != nil {
		return ref{}, ref{}, err
	}
	if err := httpapi.CheckName(dst.name); err != nil {
		return ref{}, ref{}, err
	}
	st, err := s.core.State(in)
	if err != nil {
		return ref{}, ref{}, err
	}
	if _, err := lookup(st, src); err != nil {
		return ref{}, ref{}, asTableMissing(err)
	}
	return src, dst, nil
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

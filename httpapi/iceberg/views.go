package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// Views: a view is an fsm table of type VIEW whose metadata pointer names
// its view-metadata file. Its files are written create-only before
// proposing, like a table's; a replace is a pointer compare-and-swap from
// the metadata it was computed from. View routes never see tables (a
// table of the name is a missing view, NoSuchViewException), and a view
// never takes a table's name (409 both ways).

const (
	viewsPath = "/namespaces/:namespace/views"
	viewPath  = viewsPath + "/:view"
	// metadataTimeout bounds one read or write of a metadata file.
	metadataTimeout = 30 * time.Second
)

// viewRoutes are the view endpoints below {Prefix}/v1/:prefix.
func viewRoutes() []route {
	return []route{
		{http.MethodGet, viewsPath, func(s *Server) echo.HandlerFunc { return viewErrors(s.listViews) }},
		{http.MethodPost, viewsPath, func(s *Server) echo.HandlerFunc { return viewErrors(s.createView) }},
		{http.MethodGet, viewPath, func(s *Server) echo.HandlerFunc { return viewErrors(s.loadView) }},
		{http.MethodPost, viewPath, func(s *Server) echo.HandlerFunc { return viewErrors(s.replaceView) }},
		{http.MethodHead, viewPath, func(s *Server) echo.HandlerFunc { return viewErrors(s.viewExists) }},
		{http.MethodDelete, viewPath, func(s *Server) echo.HandlerFunc {
			return viewErrors(httpapi.Write(s.core, buildDropView, nil, noContent))
		}},
		{http.MethodPost, "/views/rename", func(s *Server) echo.HandlerFunc {
			return viewErrors(httpapi.Write(s.core, buildRenameView, nil, noContent))
		}},
	}
}

// viewErrors answers a missing view (or a table where a view was asked
// for) as NoSuchViewException, which the code alone cannot tell from a
// missing table; every other error goes to the group's mapping.
func viewErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		var de *fsm.Error
		if !errors.As(err, &de) || de.Code != fsm.CodeTableNotFound || c.Response().Committed {
			return err
		}
		if c.Request().Method == http.MethodHead {
			return c.NoContent(http.StatusNotFound)
		}
		return c.JSON(http.StatusNotFound, envelope(http.StatusNotFound, "NoSuchViewException", httpapi.Clip(de.Message)))
	}
}

func noContent(c echo.Context, _ fsm.Result) error { return c.NoContent(http.StatusNoContent) }

// viewIn resolves the request's view with the 404 of the first missing
// level; a table of the name is not a view.
func viewIn(st *fsm.State, path []string, name string) (*fsm.Table, error) {
	if err := lookupNamespace(st, path); err != nil {
		return nil, err
	}
	v, ok := st.ViewIn(path, name)
	if !ok {
		return nil, fsm.Errf(fsm.CodeTableNotFound, "View does not exist: %s", httpapi.Clip(strings.Join(append(path[1:], name), ".")))
	}
	return v, nil
}

// viewRef is the request's namespace path and view name.
func viewRef(c echo.Context) ([]string, string, error) {
	path, err := namespacePath(c)
	if err != nil {
		return nil, "", err
	}
	name := c.Param("view")
	if err := checkObjectName(name); err != nil {
		return nil, "", err
	}
	return path, name, nil
}

// checkObjectName refuses a table or view name no object could have.
func checkObjectName(name string) error {
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "\x00\x1f") {
		return httpapi.Invalid("A view needs a name without control characters: %q", httpapi.Clip(name))
	}
	return nil
}

type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

func (s *Server) listViews(c echo.Context) error {
	path, err := namespacePath(c)
	if err != nil {
		return err
	}
	after, size, err := page(c)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	if err := lookupNamespace(st, path); err != nil {
		return err
	}
	limit := size
	if size > 0 {
		limit = size + 1 // one more tells whether a next page exists
	}
	vs := st.ViewsIn(path, after, limit)
	out := map[string]any{}
	if size > 0 && len(vs) > size {
		vs = vs[:size]
		out["next-page-token"] = vs[size-1].Name
	}
	ids := make([]identifier, len(vs))
	for i, v := range vs {
		ids[i] = identifier{Namespace: path[1:], Name: v.Name}
	}
	out["identifiers"] = ids
	return c.JSON(http.StatusOK, out)
}

func (s *Server) viewExists(c echo.Context) error {
	path, name, err := viewRef(c)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	if _, err := viewIn(st, path, name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) loadView(c echo.Context) error {
	path, name, err := viewRef(c)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	v, err := viewIn(st, path, name)
	if err != nil {
		return err
	}
	raw, err := s.readMetadata(c.Request().Context(), v.Iceberg.MetadataLocation)
	if err != nil {
		return err
	}
	return viewResult(c, v.Iceberg.MetadataLocation, raw)
}

// viewResult is LoadViewResult.
func viewResult(c echo.Context, loc string, raw []byte) error {
	return c.JSON(http.StatusOK, map[string]any{"metadata-location": loc, "metadata": json.RawMessage(raw),
		"config": map[string]string{}})
}

// readMetadata reads a metadata file the state points at.
func (s *Server) readMetadata(ctx context.Context, loc string) ([]byte, error) {
	if s.cfg.Objects == nil {
		return nil, errNoObjects
	}
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	raw, err := s.cfg.Objects.Read(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("read view metadata %s: %w", loc, err)
	}
	return raw, nil
}

var errNoObjects = &echo.HTTPError{Code: http.StatusServiceUnavailable, Message: "This node has no object store for Iceberg metadata."}

// metadataFile names a view's metadata file of a pointer version.
func metadataFile(location string, version int64) string {
	return fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", strings.TrimRight(location, "/"), version, uuid.NewString())
}

// written is a metadata file a write request created before proposing:
// kept when the command applied or its outcome is unknown, removed (best
// effort) when the state machine refused it.
type written struct {
	loc string
	raw []byte
}

func (s *Server) writeMetadata(ctx context.Context, w *written, loc string, raw []byte) error {
	if s.cfg.Objects == nil {
		return errNoObjects
	}
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	if err := s.cfg.Objects.Write(ctx, loc, raw); err != nil {
		return fmt.Errorf("write view metadata %s: %w", loc, err)
	}
	w.loc, w.raw = loc, raw
	return nil
}

// discard removes the file of a refused command.
func (s *Server) discard(c echo.Context, w *written, err error) {
	var de *fsm.Error
	if w.loc == "" || !errors.As(err, &de) || de.Code == fsm.CodeCommitStateUnknown {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), metadataTimeout)
	defer cancel()
	if derr := s.cfg.Objects.Delete(ctx, w.loc); derr != nil {
		s.core.Logger().Warn("iceberg: could not remove the metadata file of a refused view change", "file", w.loc, "err", derr)
	}
}

// answer renders the view the command left, from the file just written.
func (w *written) answer(c echo.Context, res fsm.Result) error {
	return viewResult(c, res.Table.Iceberg.MetadataLocation, w.raw)
}

// createViewRequest is CreateViewRequest.
type createViewRequest struct {
	Name        *string           `json:"name"`
	Location    string            `json:"location"`
	Schema      json.RawMessage   `json:"schema"`
	ViewVersion json.RawMessage   `json:"view-version"`
	Properties  map[string]string `json:"properties"`
}

func (s *Server) createView(c echo.Context) error {
	w := &written{}
	err := httpapi.Write(s.core, func(in *httpapi.In[createViewRequest]) (*fsm.CreateIcebergView, error) {
		return s.buildCreateView(in, w)
	}, nil, w.answer)(c)
	s.discard(c, w, err)
	return err
}

// buildCreateView checks the request against the state, builds the first
// metadata and writes it.
func (s *Server) buildCreateView(in *httpapi.In[createViewRequest], w *written) (*fsm.CreateIcebergView, error) {
	path, err := namespacePath(in)
	if err != nil {
		return nil, err
	}
	req := &in.Body
	if req.Name == nil {
		return nil, httpapi.Invalid("name is required.")
	}
	if err := httpapi.CheckName(*req.Name); err != nil {
		return nil, err
	}
	st, err := s.core.State(in)
	if err != nil {
		return nil, err
	}
	if err := checkViewName(st, path, *req.Name); err != nil {
		return nil, err
	}
	id := uuid.New()
	loc, err := viewLocation(in, st, path, req.Location, id)
	if err != nil {
		return nil, err
	}
	meta, err := newViewMetadata(req, loc, id)
	if err != nil {
		return nil, err
	}
	file := metadataFile(loc, 0)
	if err := s.writeMetadata(in.Request().Context(), w, file, meta); err != nil {
		return nil, err
	}
	return &fsm.CreateIcebergView{Stamp: in.Stamp, ID: id.String(), Namespace: path, Name: *req.Name,
		MetadataLocation: file, Properties: req.Properties}, nil
}

// checkViewName answers a missing namespace, or a name a table or a view
// has, before any file is written.
func checkViewName(st *fsm.State, path []string, name string) error {
	if err := lookupNamespace(st, path); err != nil {
		return err
	}
	if other, ok := st.TableIn(path, name); ok {
		kind := "Table"
		if other.IsView() {
			kind = "View"
		}
		return fsm.Errf(fsm.CodeTableExists, "%s with the same name already exists: %s", kind,
			httpapi.Clip(strings.Join(append(path[1:], name), ".")))
	}
	return nil
}

// viewLocation is the requested location, or the schema's managed root
// + "/views/" + the view uuid.
func viewLocation(in *httpapi.In[createViewRequest], st *fsm.State, path []string, asked string, id uuid.UUID) (string, error) {
	if asked != "" {
		loc := strings.TrimRight(asked, "/")
		return loc, checkViewLocation(in, loc)
	}
	root, _ := st.ManagedRoot(path[0], path[1])
	if root == "" {
		return "", httpapi.Invalid("The namespace has no managed location; give the view a location.")
	}
	return strings.TrimRight(root, "/") + "/views/" + id.String(), nil
}

// checkViewLocation refuses a view location that is not a URL or that
// would hold the node's own files.
func checkViewLocation[R any](in *httpapi.In[R], loc string) error {
	if scheme, rest, ok := strings.Cut(loc, "://"); !ok || scheme == "" || strings.Trim(rest, "/") == "" {
		return httpapi.Invalid("A view location must be a URL, got '%s'.", httpapi.Clip(loc))
	}
	return in.CheckNotReserved("location", loc)
}

// locationOf is the location a metadata file names ("" if unreadable).
func locationOf(raw []byte) string {
	var m struct {
		Location string `json:"location"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Location
}

// newViewMetadata builds the first metadata of a view and encodes it.
func newViewMetadata(req *createViewRequest, loc string, id uuid.UUID) ([]byte, error) {
	if len(req.Schema) == 0 || len(req.ViewVersion) == 0 {
		return nil, httpapi.Invalid("schema and view-version are required.")
	}
	var sc iceberg.Schema
	if err := json.Unmarshal(req.Schema, &sc); err != nil {
		return nil, httpapi.Invalid("Invalid schema: %v", err)
	}
	var v view.Version
	if err := json.Unmarshal(req.ViewVersion, &v); err != nil {
		return nil, httpapi.Invalid("Invalid view-version: %v", err)
	}
	if v.VersionID < 1 {
		return nil, httpapi.Invalid("view-version needs a version-id of at least 1, got %d.", v.VersionID)
	}
	meta, err := view.NewMetadataWithUUID(&v, &sc, loc, req.Properties, id)
	if err != nil {
		return nil, httpapi.Invalid("Invalid view: %v", err)
	}
	return json.Marshal(meta)
}

// commitViewRequest is CommitViewRequest.
type commitViewRequest struct {
	Identifier   *identifier       `json:"identifier"`
	Requirements view.Requirements `json:"requirements"`
	Updates      *view.Updates     `json:"updates"`
}

func (s *Server) replaceView(c echo.Context) error {
	w := &written{}
	var current *loaded
	err := httpapi.Write(s.core, func(in *httpapi.In[commitViewRequest]) (*fsm.ReplaceIcebergView, error) {
		cmd, cur, err := s.buildReplaceView(in, w)
		current = cur
		return cmd, err
	}, nil, w.answer)(c)
	if errors.Is(err, errUnchanged) {
		return viewResult(c, current.loc, current.raw)
	}
	s.discard(c, w, err)
	return err
}

// errUnchanged stops a replace whose updates change nothing: it is
// answered with the current metadata and proposes nothing.
var errUnchanged = errors.New("view unchanged")

// loaded is a view's current metadata file.
type loaded struct {
	loc string
	raw []byte
}

// buildReplaceView applies the requirements and updates to the view's
// current metadata and writes the result.
func (s *Server) buildReplaceView(in *httpapi.In[commitViewRequest], w *written) (*fsm.ReplaceIcebergView, *loaded, error) {
	path, name, err := viewRef(in)
	if err != nil {
		return nil, nil, err
	}
	if err := checkCommitRequest(&in.Body, path, name); err != nil {
		return nil, nil, err
	}
	st, err := s.core.State(in)
	if err != nil {
		return nil, nil, err
	}
	v, err := viewIn(st, path, name)
	if err != nil {
		return nil, nil, err
	}
	cur := &loaded{loc: v.Iceberg.MetadataLocation}
	if cur.raw, err = s.readMetadata(in.Request().Context(), cur.loc); err != nil {
		return nil, nil, err
	}
	next, err := updatedView(cur.raw, &in.Body)
	if err != nil {
		return nil, cur, err
	}
	if loc := next.Location(); loc != locationOf(cur.raw) {
		if err := checkViewLocation(in, loc); err != nil {
			return nil, nil, err
		}
	}
	raw, err := json.Marshal(next)
	if err != nil {
		return nil, nil, err
	}
	file := metadataFile(next.Location(), v.Iceberg.MetadataVersion+1)
	if err := s.writeMetadata(in.Request().Context(), w, file, raw); err != nil {
		return nil, nil, err
	}
	props := map[string]string(next.Properties())
	return &fsm.ReplaceIcebergView{Stamp: in.Stamp, Namespace: path, Name: name, BaseMetadataLocation: cur.loc,
		MetadataLocation: file, Properties: &props}, cur, nil
}

// checkCommitRequest refuses a body without updates or naming another view.
func checkCommitRequest(req *commitViewRequest, path []string, name string) error {
	if req.Updates == nil {
		return httpapi.Invalid("updates is required.")
	}
	if id := req.Identifier; id != nil && (id.Name != name || strings.Join(id.Namespace, unitSeparator) != strings.Join(path[1:], unitSeparator)) {
		return httpapi.Invalid("The identifier in the body names another view than the path: %s", httpapi.Clip(id.Name))
	}
	return nil
}

// updatedView validates the requirements against the current metadata
// (409 CommitFailedException) and applies the updates (400 when invalid);
// errUnchanged when they change nothing.
func updatedView(raw []byte, req *commitViewRequest) (view.Metadata, error) {
	base, err := view.ParseMetadataBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("parse current view metadata: %w", err)
	}
	for _, r := range req.Requirements {
		if err := r.Validate(base); err != nil {
			return nil, fsm.Errf(fsm.CodeRequirementConflict, "Requirement failed: %v", err)
		}
	}
	b, err := view.MetadataBuilderFromBase(base)
	if err != nil {
		return nil, err
	}
	for _, u := range *req.Updates {
		if err := u.Apply(b); err != nil {
			return nil, httpapi.Invalid("Invalid update %s: %v", u.Action(), err)
		}
	}
	if !b.HasChanges() {
		return nil, errUnchanged
	}
	res, err := b.Build()
	if err != nil {
		return nil, httpapi.Invalid("Invalid view update: %v", err)
	}
	return res.Metadata, nil
}

func buildDropView(in *httpapi.In[httpapi.NoBody]) (*fsm.DropIcebergView, error) {
	path, name, err := viewRef(in)
	if err != nil {
		return nil, err
	}
	return &fsm.DropIcebergView{Stamp: in.Stamp, Namespace: path, Name: name}, nil
}

// renameRequest is RenameTableRequest.
type renameRequest struct {
	Source      *identifier `json:"source"`
	Destination *identifier `json:"destination"`
}

func buildRenameView(in *httpapi.In[renameRequest]) (*fsm.RenameIcebergView, error) {
	req := &in.Body
	if req.Source == nil || req.Destination == nil {
		return nil, httpapi.Invalid("source and destination are required.")
	}
	from, err := levelsIn(in.Param("prefix"), req.Source.Namespace)
	if err != nil {
		return nil, err
	}
	to, err := levelsIn(in.Param("prefix"), req.Destination.Namespace)
	if err != nil {
		return nil, err
	}
	if err := checkObjectName(req.Source.Name); err != nil {
		return nil, err
	}
	if err := httpapi.CheckName(req.Destination.Name); err != nil {
		return nil, err
	}
	return &fsm.RenameIcebergView{Stamp: in.Stamp, Namespace: from, Name: req.Source.Name,
		NewNamespace: to, NewName: req.Destination.Name}, nil
}

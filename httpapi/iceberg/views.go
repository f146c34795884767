package iceberg

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

// Views: a view is an fsm table of type VIEW whose metadata pointer names
// its view-metadata file. Its files are written create-only before
// proposing, like a table's; a replace is a pointer compare-and-swap from
// the metadata it was computed from. View routes never see tables (a
// table of the name is a missing view, NoSuchViewException), and a view
// never takes a table's name (409 both ways).

const (
	viewsPath = nsPath + "/views"
	viewPath  = viewsPath + "/:view"
	// viewFileKey holds, in the request context, the bytes of the view
	// metadata file a write created, for its answer.
	viewFileKey = "iceberg.view-file"
)

func init() {
	addRoutes(
		route{http.MethodGet, viewsPath, useNamespace, viewErrors(h((*Server).listViews))},
		route{http.MethodPost, viewsPath, createIn, viewErrors(writeRoute((*Server).buildCreateView, (*Server).viewAnswer))},
		route{http.MethodGet, viewPath, selectView, viewErrors(h((*Server).loadView))},
		route{http.MethodPost, viewPath, modifyView, viewErrors(writeRoute((*Server).buildReplaceView, (*Server).viewAnswer))},
		route{http.MethodHead, viewPath, selectView, viewErrors(h((*Server).viewExists))},
		route{http.MethodDelete, viewPath, ownView, viewErrors(writeRoute((*Server).buildDropView, noContentAnswer))},
		route{http.MethodPost, "/views/rename", renameObject, viewErrors(writeRoute((*Server).buildRenameView, noContentAnswer))},
	)
}

// viewErrors answers a missing view (or a table where a view was asked
// for) as NoSuchViewException, which the code alone cannot tell from a
// missing table; every other error goes to the group's mapping.
func viewErrors(next func(*Server) echo.HandlerFunc) func(*Server) echo.HandlerFunc {
	return func(s *Server) echo.HandlerFunc {
		inner := next(s)
		return func(c echo.Context) error {
			err := inner(c)
			var de *fsm.Error
			if !errors.As(err, &de) || de.Code != fsm.CodeTableNotFound || c.Response().Committed {
				return err
			}
			if c.Request().Method == http.MethodHead {
				return c.NoContent(http.StatusNotFound)
			}
			return c.JSON(http.StatusNotFound, map[string]any{"error": map[string]any{
				"message": httpapi.Clip(de.Message), "type": "NoSuchViewException", "code": http.StatusNotFound}})
		}
	}
}

// viewRef reads {prefix}, {namespace} and {view}.
func viewRef(c echo.Context) (ref, error) {
	r, err := namespaceRef(c)
	if err != nil {
		return r, err
	}
	r.name = c.Param("view")
	return r, checkLevel("View name", r.name)
}

// lookupView resolves a view with the 404 of the first missing level; a
// table of the name is not a view.
func lookupView(st *fsm.State, r ref) (*fsm.Table, error) {
	if _, err := lookupNamespace(st, r); err != nil {
		return nil, err
	}
	v, ok := st.ViewIn(r.path(), r.name)
	if !ok {
		return nil, fsm.Errf(fsm.CodeTableNotFound, "View does not exist: %s", r.dotted())
	}
	return v, nil
}

// readView resolves the request's view in the read state.
func (s *Server) readView(c echo.Context) (*fsm.Table, error) {
	r, err := viewRef(c)
	if err != nil {
		return nil, err
	}
	st, err := s.core.State(c)
	if err != nil {
		return nil, err
	}
	return lookupView(st, r)
}

func (s *Server) listViews(c echo.Context) error { return s.listObjects(c, (*fsm.Table).IsView) }

func (s *Server) viewExists(c echo.Context) error {
	if _, err := s.readView(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) loadView(c echo.Context) error {
	v, err := s.readView(c)
	if err != nil {
		return err
	}
	raw, err := s.readViewMetadata(c, v.Iceberg.MetadataLocation)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, viewResult(v.Iceberg.MetadataLocation, raw))
}

// viewResult is LoadViewResult.
func viewResult(loc string, raw []byte) map[string]any {
	return map[string]any{"metadata-location": loc, "metadata": json.RawMessage(raw), "config": map[string]string{}}
}

// viewAnswer renders the view a write left, from the file it wrote.
func (s *Server) viewAnswer(c echo.Context, res fsm.Result) error {
	raw, _ := c.Get(viewFileKey).([]byte)
	if raw == nil {
		var err error
		if raw, err = s.readViewMetadata(c, res.Table.Iceberg.MetadataLocation); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, viewResult(res.Table.Iceberg.MetadataLocation, raw))
}

// readViewMetadata reads a view metadata file the state points at (view
// files are small and read uncached).
func (s *Server) readViewMetadata(c echo.Context, loc string) ([]byte, error) {
	objs, err := s.objects()
	if err != nil {
		return nil, err
	}
	raw, err := objs.Read(c.Request().Context(), loc)
	if err != nil {
		return nil, fmt.Errorf("read view metadata file %s: %w", loc, err)
	}
	return raw, nil
}

// writeViewMetadata writes a new view metadata file create-only and
// records it for settle (removed if the entry is refused) and the answer.
func (s *Server) writeViewMetadata(c echo.Context, loc string, raw []byte) error {
	objs, err := s.objects()
	if err != nil {
		return err
	}
	if err := objs.Write(c.Request().Context(), loc, raw); err != nil {
		return fmt.Errorf("write view metadata file %s: %w", loc, err)
	}
	files, _ := c.Get(writtenKey).([]string)
	c.Set(writtenKey, append(files, loc))
	c.Set(viewFileKey, raw)
	return nil
}

// createViewBody is CreateViewRequest.
type createViewBody struct {
	Name        *string           `json:"name"`
	Location    string            `json:"location"`
	Schema      json.RawMessage   `json:"schema"`
	ViewVersion json.RawMessage   `json:"view-version"`
	Properties  map[string]string `json:"properties"`
}

// buildCreateView checks the request against the state, builds the first
// metadata and writes it.
func (s *Server) buildCreateView(in *httpapi.In[createViewBody]) (fsm.Command, error) {
	r, st, err := s.freeRef(in, in.Body.Name, "View name")
	if err != nil {
		return nil, err
	}
	id := uuid.New()
	loc, err := viewLocation(in, st, r, id)
	if err != nil {
		return nil, err
	}
	raw, err := newViewMetadata(&in.Body, loc, id)
	if err != nil {
		return nil, err
	}
	file := metadataLocation(loc, 0)
	if err := s.writeViewMetadata(in, file, raw); err != nil {
		return nil, err
	}
	return &fsm.CreateIcebergView{Stamp: in.Stamp, ID: id.String(), Namespace: r.path(), Name: r.name,
		MetadataLocation: file, Properties: in.Body.Properties}, nil
}

// viewLocation is the requested location, or the schema's managed root
// + "/views/" + the view uuid.
func viewLocation(in *httpapi.In[createViewBody], st *fsm.State, r ref, id uuid.UUID) (string, error) {
	if in.Body.Location != "" {
		return checkViewLocation(in, in.Body.Location)
	}
	root := st.ManagedRoot(r.warehouse, r.levels[0])
	if root == "" {
		return "", httpapi.Invalid("No managed storage location is configured for %s; give the view a location.", r.dotted())
	}
	return storage.Join(root, "views/"+id.String()), nil
}

// checkViewLocation normalises a view location and refuses one that is
// not a URL or that would hold the node's own files.
func checkViewLocation[R any](in *httpapi.In[R], asked string) (string, error) {
	loc, err := storage.Normalize(asked)
	if err != nil {
		return "", httpapi.Invalid("Invalid view location: %v", err)
	}
	loc = strings.TrimRight(loc, "/")
	if err := httpapi.CheckExternalLocation(loc); err != nil {
		return "", err
	}
	return loc, in.CheckNotReserved("View location", loc)
}

// newViewMetadata builds the first metadata of a view and encodes it.
func newViewMetadata(req *createViewBody, loc string, id uuid.UUID) ([]byte, error) {
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

// commitViewBody is CommitViewRequest.
type commitViewBody struct {
	Identifier   *identifier       `json:"identifier"`
	Requirements view.Requirements `json:"requirements"`
	Updates      *view.Updates     `json:"updates"`
}

// buildReplaceView applies the requirements and updates to the view's
// current metadata and writes the result; updates that change nothing
// are answered with the current metadata, proposing nothing.
func (s *Server) buildReplaceView(in *httpapi.In[commitViewBody]) (fsm.Command, error) {
	r, err := viewRef(in)
	if err != nil {
		return nil, err
	}
	if err := checkCommitBody(&in.Body, r); err != nil {
		return nil, err
	}
	v, err := s.readView(in)
	if err != nil {
		return nil, err
	}
	cur := v.Iceberg.MetadataLocation
	raw, err := s.readViewMetadata(in, cur)
	if err != nil {
		return nil, err
	}
	next, err := updatedView(raw, &in.Body)
	if errors.Is(err, errUnchanged) {
		return nil, &settled{status: http.StatusOK, body: viewResult(cur, raw)}
	}
	if err != nil {
		return nil, err
	}
	return s.writeReplace(in, v, next, locationOf(raw))
}

// writeReplace writes the new metadata and builds the pointer swap.
func (s *Server) writeReplace(in *httpapi.In[commitViewBody], v *fsm.Table, next view.Metadata, oldLoc string) (fsm.Command, error) {
	loc := next.Location()
	if loc != oldLoc {
		var err error
		if loc, err = checkViewLocation(in, loc); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	file := metadataLocation(loc, v.Iceberg.MetadataVersion+1)
	if err := s.writeViewMetadata(in, file, raw); err != nil {
		return nil, err
	}
	props := map[string]string(next.Properties())
	return &fsm.ReplaceIcebergView{Stamp: in.Stamp, Namespace: v.NamespacePath(), Name: v.Name,
		BaseMetadataLocation: v.Iceberg.MetadataLocation, MetadataLocation: file, Properties: &props}, nil
}

// checkCommitBody refuses a body without updates or naming another view.
func checkCommitBody(req *commitViewBody, r ref) error {
	if req.Updates == nil {
		return httpapi.Invalid("updates is required.")
	}
	if id := req.Identifier; id != nil && (id.Name != r.name || strings.Join(id.Namespace, nsSep) != strings.Join(r.levels, nsSep)) {
		return httpapi.Invalid("The identifier in the body names another view than the path: %s", httpapi.Clip(id.Name))
	}
	return nil
}

// errUnchanged is updatedView's answer to updates that change nothing.
var errUnchanged = errors.New("view unchanged")

// updatedView validates the requirements against the current metadata
// (409 CommitFailedException) and applies the updates (400 when invalid).
func updatedView(raw []byte, req *commitViewBody) (view.Metadata, error) {
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

// locationOf is the location a metadata file names ("" if unreadable).
func locationOf(raw []byte) string {
	var m struct {
		Location string `json:"location"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Location
}

func (s *Server) buildDropView(in *httpapi.In[httpapi.NoBody]) (fsm.Command, error) {
	r, err := viewRef(in)
	if err != nil {
		return nil, err
	}
	return &fsm.DropIcebergView{Stamp: in.Stamp, Namespace: r.path(), Name: r.name}, nil
}

func (s *Server) buildRenameView(in *httpapi.In[renameBody]) (fsm.Command, error) {
	src, dst, err := s.renameRefs(in, lookupView)
	if err != nil {
		return nil, err
	}
	return &fsm.RenameIcebergView{Stamp: in.Stamp, Namespace: src.path(), Name: src.name,
		NewNamespace: dst.path(), NewName: dst.name}, nil
}

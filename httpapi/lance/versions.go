package lance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

type versionBody struct {
	idBody
	Version      *int64            `json:"version"`
	ManifestPath string            `json:"manifest_path"`
	ManifestSize *int64            `json:"manifest_size"`
	ETag         string            `json:"e_tag"`
	Metadata     map[string]string `json:"metadata"`
	NamingScheme string            `json:"naming_scheme"`
	Branch       string            `json:"branch"`
}

// tableVersion is Lance's TableVersion.
type tableVersion struct {
	Version         int64             `json:"version"`
	ManifestPath    string            `json:"manifest_path"`
	ManifestSize    int64             `json:"manifest_size"`
	ETag            string            `json:"e_tag,omitempty"`
	TimestampMillis int64             `json:"timestamp_millis"`
	Metadata        map[string]string `json:"metadata,omitempty"`
}

// versionAnswer shows a version with its manifest path as Lance clients
// name objects: relative to the root of the store that holds it.
func versionAnswer(v *fsm.LanceVersion) tableVersion {
	return tableVersion{Version: v.Version, ManifestPath: storeRelative(v.ManifestPath), ManifestSize: v.ManifestSize,
		ETag: v.ETag, TimestampMillis: v.TimestampMillis, Metadata: v.Metadata}
}

func storeRelative(loc string) string {
	root, err := storage.Root(loc)
	if err != nil {
		return loc
	}
	return strings.TrimPrefix(loc, root)
}

// objectTimeout bounds each manifest read, write or delete.
const objectTimeout = 30 * time.Second

func (s *Server) objects() (ObjectStore, error) {
	if s.cfg.Objects == nil {
		return nil, lanceError(codeUnavailable, "This node has no object store configured; versions cannot be created")
	}
	return s.cfg.Objects, nil
}

// Manifest naming schemes: V1 names version v "{v}.manifest", V2
// "{u64::MAX - v, 20 digits}.manifest", so that names sort newest first.
func manifestName(scheme string, v int64) string {
	if scheme == "V1" {
		return strconv.FormatInt(v, 10) + ".manifest"
	}
	return fmt.Sprintf("%020d.manifest", uint64(math.MaxUint64)-uint64(v))
}

// namingScheme is the request's scheme, or the one the staging file's
// name follows.
func namingScheme(raw, staging string, v int64) (string, error) {
	switch strings.ToUpper(raw) {
	case "V1", "V2":
		return strings.ToUpper(raw), nil
	case "":
		if strings.HasPrefix(path.Base(staging), manifestName("V2", v)) {
			return "V2", nil
		}
		return "V1", nil
	}
	return "", invalid("Unknown naming_scheme %q (V1 or V2)", httpapi.Clip(raw))
}

// stagingLocation resolves the client's staging manifest path (relative
// to the table's store root, or a full URL), which must lie in the
// table's _versions/ directory.
func stagingLocation(tb *fsm.Table, p string) (string, error) {
	loc := p
	if !strings.Contains(p, "://") {
		root, err := storage.Root(tb.Location)
		if err != nil {
			return "", invalid("The table's location cannot hold manifests: %v", err)
		}
		loc = root + strings.TrimLeft(p, "/")
	}
	norm, err := storage.Normalize(loc)
	if err != nil {
		return "", invalid("Invalid manifest_path %q: %v", httpapi.Clip(p), err)
	}
	dir := strings.TrimRight(tb.Location, "/") + "/_versions/"
	if !strings.HasPrefix(norm, dir) || strings.Contains(strings.TrimPrefix(norm, dir), "/") {
		return "", invalid("manifest_path %q is not in the table's _versions/ directory", httpapi.Clip(p))
	}
	return norm, nil
}

func (s *Server) createVersion(c echo.Context) error {
	var b versionBody
	id, err := bindTarget(c, &b)
	if err != nil {
		return err
	}
	delim := delimiter(c)
	return s.write(c, func(p *httpapi.Plan) (httpapi.OpRender, error) {
		render, err := s.planVersion(p, id, delim, &b)
		if err != nil {
			return nil, err
		}
		return func(res *fsm.Result) any { return map[string]any{"version": render(res)} }, nil
	})
}

// planVersion finalizes a version's manifest and plans its record.
func (s *Server) planVersion(p *httpapi.Plan, id []string, delim string, b *versionBody) (httpapi.OpRender, error) {
	if b.Branch != "" {
		return nil, unsupported("Branches are not supported")
	}
	if b.Version == nil || *b.Version < 0 || b.ManifestPath == "" {
		return nil, invalid("A version needs a version >= 0 and a manifest_path")
	}
	store, err := s.objects()
	if err != nil {
		return nil, err
	}
	tb, err := lookupTable(p.State, id, delim)
	if err != nil {
		return nil, err
	}
	v := *b.Version
	staging, err := stagingLocation(tb, b.ManifestPath)
	if err != nil {
		return nil, err
	}
	scheme, err := namingScheme(b.NamingScheme, staging, v)
	if err != nil {
		return nil, err
	}
	final := strings.TrimRight(tb.Location, "/") + "/_versions/" + manifestName(scheme, v)
	if staging == final {
		return nil, invalid("manifest_path names the final manifest of version %d, not a staging file", v)
	}
	if old, ok := p.State.LanceVersion(tb, v); ok {
		if old.Source == staging && old.ManifestPath == final {
			return func(*fsm.Result) any { return versionAnswer(old) }, nil // an exact replay
		}
		return nil, lanceError(codeConcurrentChange, "Version %d of table %s already exists", v, joinID(id, delim))
	}
	lv, err := s.finalize(p, store, staging, final, b)
	if err != nil {
		return nil, err
	}
	lv.Version, lv.Metadata = v, b.Metadata
	planned, err := p.Add(&fsm.CreateLanceVersion{Stamp: p.Stamp, Namespace: tb.NamespacePath(), Name: tb.Name,
		TableID: tb.ID, Version: *lv})
	if err != nil {
		return nil, err
	}
	p.OnCommit(func() { s.removeObject(p.Request().Context(), store, staging) })
	return func(res *fsm.Result) any {
		if res == nil || res.Lance == nil {
			res = &planned
		}
		return versionAnswer(res.Lance.Version)
	}, nil
}

// finalize copies the staging manifest to its final name, create-only,
// and describes the final object. A final manifest already there with
// the same bytes is an earlier attempt of this very version, whose entry
// did not apply: it is used as it is.
func (s *Server) finalize(p *httpapi.Plan, store ObjectStore, staging, final string, b *versionBody) (*fsm.LanceVersion, error) {
	ctx, cancel := context.WithTimeout(p.Request().Context(), objectTimeout)
	defer cancel()
	data, err := store.Read(ctx, staging)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, invalid("The staging manifest %s does not exist", storeRelative(staging))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the staging manifest: %w", err)
	}
	if b.ManifestSize != nil && *b.ManifestSize != int64(len(data)) {
		return nil, invalid("manifest_size %d does not match the staging manifest's %d bytes", *b.ManifestSize, len(data))
	}
	switch err := store.Write(ctx, final, data); {
	case err == nil:
		p.OnAbort(func() { s.removeObject(p.Request().Context(), store, final) })
	case errors.Is(err, storage.ErrExists):
		if prev, rerr := store.Read(ctx, final); rerr != nil || !bytes.Equal(prev, data) {
			return nil, lanceError(codeConcurrentChange, "The final manifest %s already exists", storeRelative(final))
		}
	default:
		return nil, fmt.Errorf("writing the final manifest: %w", err)
	}
	info, err := store.Stat(ctx, final)
	if err != nil {
		return nil, fmt.Errorf("reading back the final manifest: %w", err)
	}
	return &fsm.LanceVersion{ManifestPath: final, ManifestSize: int64(len(data)), ETag: info.ETag, Source: staging}, nil
}

// removeObject deletes an object, best effort; a failure is logged
// with the request (reqCtx) that asked for it.
func (s *Server) removeObject(reqCtx context.Context, store ObjectStore, loc string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(reqCtx), objectTimeout)
	defer cancel()
	if err := store.Delete(ctx, loc); err != nil && !errors.Is(err, storage.ErrNotFound) {
		s.log.WarnContext(ctx, "could not remove a manifest", "location", loc, "err", err)
	}
}

// purge deletes a dropped table's files, best effort.
func (s *Server) purge(reqCtx context.Context, tb *fsm.Table) {
	store, err := s.objects()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(reqCtx), 5*objectTimeout)
	defer cancel()
	objs, err := store.List(ctx, strings.TrimRight(tb.Location, "/")+"/")
	if err != nil {
		s.log.WarnContext(ctx, "could not list a dropped table's files", "table", tb.FullName(), "err", err)
		return
	}
	for _, o := range objs {
		s.removeObject(ctx, store, o.Location)
	}
	s.log.InfoContext(ctx, "deleted a dropped table's files", "table", tb.FullName(), "location", tb.Location, "files", len(objs))
}

func (s *Server) listVersions(c echo.Context) error {
	if err := bind(c, &struct{}{}); err != nil {
		return err
	}
	if c.QueryParam("branch") != "" {
		return unsupported("Branches are not supported")
	}
	limit, err := pageLimit(c)
	if err != nil {
		return err
	}
	desc := c.QueryParam("descending") == "true"
	after := int64(-1)
	if tok := c.QueryParam("page_token"); tok != "" {
		if after, err = strconv.ParseInt(tok, 10, 64); err != nil || after < 0 {
			return invalid("Invalid page_token %q", httpapi.Clip(tok))
		}
	}
	st, tb, err := s.readTable(c, &describeBody{})
	if err != nil {
		return err
	}
	var out []tableVersion
	for _, v := range st.LanceVersions(tb, after, desc, limit+1) {
		out = append(out, versionAnswer(v))
	}
	return c.JSON(http.StatusOK, page("versions", out, limit, func(v tableVersion) string { return strconv.FormatInt(v.Version, 10) }))
}

func (s *Server) describeVersion(c echo.Context) error {
	var b describeBody
	st, tb, err := s.readTable(c, &b)
	if err != nil {
		return err
	}
	var v *fsm.LanceVersion
	if b.Version != nil {
		v, _ = st.LanceVersion(tb, *b.Version)
	} else if latest := st.LanceVersions(tb, -1, true, 1); len(latest) == 1 {
		v = latest[0]
	}
	if v == nil {
		return lanceError(codeVersionNotFound, "Table %s has no versions", tb.FullName())
	}
	return c.JSON(http.StatusOK, map[string]any{"version": versionAnswer(v)})
}

type deleteVersionsBody struct {
	idBody
	Branch string `json:"branch"`
	Ranges []struct {
		Start *int64 `json:"start_version"`
		End   *int64 `json:"end_version"`
	} `json:"ranges"`
}

func (s *Server) deleteVersions(c echo.Context) error {
	var b deleteVersionsBody
	id, err := bindTarget(c, &b)
	if err != nil {
		return err
	}
	delim := delimiter(c)
	return s.write(c, func(p *httpapi.Plan) (httpapi.OpRender, error) { return planDeleteVersions(p, id, delim, &b) })
}

func planDeleteVersions(p *httpapi.Plan, id []string, delim string, b *deleteVersionsBody) (httpapi.OpRender, error) {
	if b.Branch != "" {
		return nil, unsupported("Branches are not supported")
	}
	if len(b.Ranges) == 0 {
		return nil, invalid("A version delete needs at least one range")
	}
	var ranges []fsm.VersionRange
	for _, r := range b.Ranges {
		if r.Start == nil || r.End == nil || *r.Start < 0 || (*r.End != -1 && *r.End < *r.Start) {
			return nil, invalid("A range needs start_version >= 0 and end_version >= start_version (or -1: through the latest)")
		}
		ranges = append(ranges, fsm.VersionRange{Start: *r.Start, End: *r.End})
	}
	tb, err := lookupTable(p.State, id, delim)
	if err != nil {
		return nil, err
	}
	planned, err := p.Add(&fsm.DeleteLanceVersions{Stamp: p.Stamp, Namespace: tb.NamespacePath(), Name: tb.Name, Ranges: ranges})
	if err != nil {
		return nil, err
	}
	return func(res *fsm.Result) any {
		if res == nil || res.Lance == nil {
			res = &planned
		}
		return map[string]any{"deleted_count": res.Lance.Deleted}
	}, nil
}

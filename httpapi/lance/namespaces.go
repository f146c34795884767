package lance

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

type namespaceBody struct {
	idBody
	Mode       string            `json:"mode"`
	Behavior   string            `json:"behavior"`
	Properties map[string]string `json:"properties"`
}

// mode reads a mode or behavior, case-insensitive, Pascal or snake case.
func mode(v, def string, allowed ...string) (string, error) {
	m := strings.ToLower(strings.ReplaceAll(v, "_", ""))
	if m == "" {
		return def, nil
	}
	if !slices.Contains(allowed, m) {
		return "", invalid("Unknown mode %q (one of %s)", httpapi.Clip(v), strings.Join(allowed, ", "))
	}
	return m, nil
}

func propertiesAnswer(props map[string]string) map[string]any {
	return map[string]any{"properties": httpapi.NonNil(props)}
}

func (s *Server) createNamespace(c echo.Context) error {
	var b namespaceBody
	id, err := bindTarget(c, &b)
	if err != nil {
		return err
	}
	m, err := mode(b.Mode, "create", "create", "existok", "overwrite")
	if err != nil {
		return err
	}
	if err := checkNames(id); err != nil {
		return err
	}
	return s.write(c, func(p *httpapi.Plan) (httpapi.OpRender, error) { return planCreateNamespace(p, id, m, b.Properties) })
}

func planCreateNamespace(p *httpapi.Plan, id []string, m string, props map[string]string) (httpapi.OpRender, error) {
	ns, exists := p.State.Namespace(id)
	switch {
	case len(id) == 0 && m == "create":
		return nil, lanceError(codeNamespaceExists, "The root namespace always exists")
	case len(id) == 0:
		return func(*fsm.Result) any { return propertiesAnswer(nil) }, nil
	case exists && m == "create":
		return nil, lanceError(codeNamespaceExists, "Namespace already exists: %s", strings.Join(id, "."))
	case exists && m == "existok":
		return func(*fsm.Result) any { return propertiesAnswer(ns.Properties) }, nil
	case exists:
		return overwriteProperties(p, id, ns.Properties, props)
	}
	if _, err := p.Add(createCommand(p.Stamp, id, props)); err != nil {
		return nil, err
	}
	return func(*fsm.Result) any { return propertiesAnswer(props) }, nil
}

// overwriteProperties replaces an existing namespace's properties (what
// it holds stays).
func overwriteProperties(p *httpapi.Plan, id []string, old, props map[string]string) (httpapi.OpRender, error) {
	var removals []string
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if _, keep := props[k]; !keep {
			removals = append(removals, k)
		}
	}
	if _, err := p.Add(&fsm.UpdateNamespaceProperties{Stamp: p.Stamp, Path: id, Updates: props, Removals: removals}); err != nil {
		return nil, err
	}
	return func(*fsm.Result) any { return propertiesAnswer(props) }, nil
}

// createCommand creates a catalog, a schema or a namespace below one.
func createCommand(st fsm.Stamp, id []string, props map[string]string) fsm.Command {
	newID := uuid.NewString()
	switch len(id) {
	case 1:
		return &fsm.CreateCatalog{Stamp: st, ID: newID, Name: id[0], Properties: props}
	case 2:
		return &fsm.CreateSchema{Stamp: st, ID: newID, CatalogName: id[0], Name: id[1], Properties: props}
	}
	return &fsm.CreateNamespace{Stamp: st, ID: newID, Path: id, Properties: props}
}

// deleteCommand deletes a catalog, a schema or a namespace below one.
func deleteCommand(st fsm.Stamp, id []string, cascade bool) fsm.Command {
	switch len(id) {
	case 1:
		return &fsm.DeleteCatalog{Stamp: st, Name: id[0], Force: cascade}
	case 2:
		return &fsm.DeleteSchema{Stamp: st, CatalogName: id[0], Name: id[1], Force: cascade}
	}
	return &fsm.DeleteNamespace{Stamp: st, Path: id, Force: cascade}
}

// lookupNamespace resolves a namespace id (the root always exists).
func lookupNamespace(st *fsm.State, id []string) (*fsm.Namespace, error) {
	if len(id) == 0 {
		return &fsm.Namespace{}, nil
	}
	ns, ok := st.Namespace(id)
	if !ok {
		return nil, lanceError(codeNamespaceNotFound, "Namespace not found: %s", strings.Join(id, "."))
	}
	return ns, nil
}

// readNamespace is the common start of the namespace reads.
func (s *Server) readNamespace(c echo.Context) (*fsm.State, []string, *fsm.Namespace, error) {
	var b namespaceBody
	id, err := bindTarget(c, &b)
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := s.state(c)
	if err != nil {
		return nil, nil, nil, err
	}
	ns, err := lookupNamespace(st, id)
	return st, id, ns, err
}

func (s *Server) describeNamespace(c echo.Context) error {
	_, _, ns, err := s.readNamespace(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, propertiesAnswer(ns.Properties))
}

func (s *Server) namespaceExists(c echo.Context) error {
	if _, _, _, err := s.readNamespace(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}

func (s *Server) listNamespaces(c echo.Context) error {
	st, id, _, err := s.readNamespace(c)
	if err != nil {
		return err
	}
	limit, err := pageLimit(c)
	if err != nil {
		return err
	}
	names := s.visibleNamespaces(c, st, id, c.QueryParam("page_token"), limit+1)
	return c.JSON(http.StatusOK, page("namespaces", names, limit, func(n string) string { return n }))
}

// visibleNamespaces names up to n children of parent after the name
// after that the caller may see, reading on past those it may not.
func (s *Server) visibleNamespaces(c echo.Context, st *fsm.State, parent []string, after string, n int) []string {
	var names []string
	for len(names) < n {
		read := st.Namespaces(parent, after, n)
		for _, ns := range read {
			if s.core.Visible(c, st, false, append(slices.Clone(parent), ns.Name())...) {
				names = append(names, ns.Name())
			}
		}
		if len(read) < n {
			break
		}
		after = read[len(read)-1].Name()
	}
	return names[:min(n, len(names))]
}

func (s *Server) dropNamespace(c echo.Context) error {
	var b namespaceBody
	id, err := bindTarget(c, &b)
	if err != nil {
		return err
	}
	m, err := mode(b.Mode, "fail", "fail", "skip")
	if err != nil {
		return err
	}
	behavior, err := mode(b.Behavior, "restrict", "restrict", "cascade")
	if err != nil {
		return err
	}
	if len(id) == 0 {
		return invalid("The root namespace cannot be dropped")
	}
	return s.write(c, func(p *httpapi.Plan) (httpapi.OpRender, error) {
		ns, ok := p.State.Namespace(id)
		if !ok && m == "skip" {
			return empty, nil
		}
		if !ok {
			return nil, lanceError(codeNamespaceNotFound, "Namespace not found: %s", strings.Join(id, "."))
		}
		if _, err := p.Add(deleteCommand(p.Stamp, id, behavior == "cascade")); err != nil {
			return nil, err
		}
		return func(*fsm.Result) any { return propertiesAnswer(ns.Properties) }, nil
	})
}

// maxPage bounds a page of any list.
const maxPage = 1000

// pageLimit reads ?limit= (absent or 0: the largest page).
func pageLimit(c echo.Context) (int, error) {
	raw := c.QueryParam("limit")
	if raw == "" {
		return maxPage, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, invalid("Invalid limit %q: a non-negative integer", httpapi.Clip(raw))
	}
	if n == 0 || n > maxPage {
		n = maxPage
	}
	return n, nil
}

// page answers a list fetched with one item more than limit: the extra
// item means another page follows, whose token is the last item's.
func page[T any](key string, items []T, limit int, token func(T) string) map[string]any {
	out := map[string]any{}
	if len(items) > limit {
		items = items[:limit]
		out["page_token"] = token(items[limit-1])
	}
	if items == nil {
		items = []T{}
	}
	out[key] = items
	return out
}

package iceberg

import (
	"net/http"
	"slices"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

const nsPath = "/namespaces/:namespace"

func init() {
	addRoutes(
		route{http.MethodGet, "/namespaces", useParent, h((*Server).listNamespaces)},
		route{http.MethodPost, "/namespaces", createNamespace, func(s *Server) echo.HandlerFunc {
			return httpapi.Write(s.core, buildCreateNamespace, nil, namespaceAnswer)
		}},
		route{http.MethodGet, nsPath, useNamespace, h((*Server).loadNamespace)},
		route{http.MethodHead, nsPath, useNamespace, h((*Server).namespaceExists)},
		route{http.MethodDelete, nsPath, ownNamespace, func(s *Server) echo.HandlerFunc {
			return httpapi.Write(s.core, buildDropNamespace, nil, func(c echo.Context, _ fsm.Result) error { return noContent(c) })
		}},
		route{http.MethodPost, nsPath + "/properties", ownNamespace, func(s *Server) echo.HandlerFunc {
			return httpapi.Write(s.core, buildUpdateProperties, nil, propertiesAnswer)
		}},
	)
}

type namespaceBody struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

func buildCreateNamespace(in *httpapi.In[namespaceBody]) (fsm.Command, error) {
	w, err := warehouseParam(in)
	if err != nil {
		return nil, err
	}
	if err := checkNamespace(in.Body.Namespace); err != nil {
		return nil, err
	}
	levels, id := in.Body.Namespace, uuid.NewString()
	if len(levels) == 1 {
		return &fsm.CreateSchema{Stamp: in.Stamp, ID: id, CatalogName: w, Name: levels[0], Properties: in.Body.Properties}, nil
	}
	return &fsm.CreateNamespace{Stamp: in.Stamp, ID: id, Path: ref{warehouse: w, levels: levels}.path(),
		Properties: in.Body.Properties}, nil
}

// namespaceOf is the namespace a create or property update answered with.
func namespaceOf(res fsm.Result) *fsm.Namespace {
	if res.Namespace != nil {
		return res.Namespace
	}
	return &fsm.Namespace{Path: []string{res.Schema.CatalogName, res.Schema.Name}, Properties: res.Schema.Properties}
}

func namespaceAnswer(c echo.Context, res fsm.Result) error {
	n := namespaceOf(res)
	return c.JSON(http.StatusOK, namespaceBody{Namespace: n.Path[1:], Properties: httpapi.NonNil(n.Properties)})
}

// lookupNamespace resolves a namespace: 404 NoSuchWarehouseException for
// a missing catalog, NoSuchNamespaceException for a missing namespace.
func lookupNamespace(st *fsm.State, r ref) (*fsm.Namespace, error) {
	if _, err := httpapi.LookupCatalog(st, r.warehouse); err != nil {
		return nil, err
	}
	n, found := st.Namespace(r.path())
	if !found || len(r.levels) == 0 {
		return nil, fsm.Errf(fsm.CodeSchemaNotFound, "Namespace does not exist: %s", r.dotted())
	}
	return n, nil
}

// readNamespace resolves the request's namespace in the read state.
func (s *Server) readNamespace(c echo.Context) (*fsm.State, *fsm.Namespace, error) {
	r, err := namespaceRef(c)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.core.State(c)
	if err != nil {
		return nil, nil, err
	}
	n, err := lookupNamespace(st, r)
	return st, n, err
}

func (s *Server) loadNamespace(c echo.Context) error {
	_, n, err := s.readNamespace(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, namespaceBody{Namespace: n.Path[1:], Properties: httpapi.NonNil(n.Properties)})
}

func (s *Server) namespaceExists(c echo.Context) error {
	if _, _, err := s.readNamespace(c); err != nil {
		return err
	}
	return noContent(c)
}

type namespaceList struct {
	Namespaces    [][]string `json:"namespaces"`
	NextPageToken *string    `json:"next-page-token,omitempty"`
}

func (s *Server) listNamespaces(c echo.Context) error {
	r, err := parentRef(c)
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
	if err := parentExists(st, r); err != nil {
		return err
	}
	found, next := cut(p, st.Namespaces(r.path(), p.after, p.limit()), (*fsm.Namespace).Name)
	out := namespaceList{Namespaces: [][]string{}, NextPageToken: next}
	for _, n := range found {
		// Filtered after the cut, so the token still follows the last
		// namespace fetched: a page may hold fewer than it could.
		if s.core.Visible(c, st, false, n.Path...) {
			out.Namespaces = append(out.Namespaces, slices.Clone(n.Path[1:]))
		}
	}
	return c.JSON(http.StatusOK, out)
}

// parentExists checks a listing's parent: the warehouse, or a namespace.
func parentExists(st *fsm.State, r ref) error {
	if len(r.levels) == 0 {
		_, err := httpapi.LookupCatalog(st, r.warehouse)
		return err
	}
	_, err := lookupNamespace(st, r)
	return err
}

func buildDropNamespace(in *httpapi.In[httpapi.NoBody]) (fsm.Command, error) {
	r, err := namespaceRef(in)
	if err != nil {
		return nil, err
	}
	if len(r.levels) == 1 {
		return &fsm.DeleteSchema{Stamp: in.Stamp, CatalogName: r.warehouse, Name: r.levels[0]}, nil
	}
	return &fsm.DeleteNamespace{Stamp: in.Stamp, Path: r.path()}, nil
}

type propertiesBody struct {
	Removals []string          `json:"removals"`
	Updates  map[string]string `json:"updates"`
}

func buildUpdateProperties(in *httpapi.In[propertiesBody]) (*fsm.UpdateNamespaceProperties, error) {
	r, err := namespaceRef(in)
	if err != nil {
		return nil, err
	}
	for _, k := range in.Body.Removals {
		if _, both := in.Body.Updates[k]; both {
			return nil, echo.NewHTTPError(http.StatusUnprocessableEntity, "Property cannot be both set and removed: "+httpapi.Clip(k))
		}
	}
	for k := range in.Body.Updates {
		if k == "" {
			return nil, httpapi.Invalid("Property keys must not be empty")
		}
	}
	return &fsm.UpdateNamespaceProperties{Stamp: in.Stamp, Path: r.path(), Updates: in.Body.Updates,
		Removals: in.Body.Removals}, nil
}

func propertiesAnswer(c echo.Context, res fsm.Result) error {
	return c.JSON(http.StatusOK, res.Properties)
}

package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/storage"
)

// registerUC mounts the Unity Catalog REST hierarchy (snake_case).
func (s *Server) registerUC(g *echo.Group) {
	g.GET("/metastore_summary", s.metastoreSummary)
	g.POST("/catalogs", s.createCatalog)
	g.GET("/catalogs", s.listCatalogs)
	g.GET("/catalogs/:name", s.getCatalog)
	g.PATCH("/catalogs/:name", s.updateCatalog)
	g.DELETE("/catalogs/:name", s.deleteCatalog)
	g.POST("/schemas", s.createSchema)
	g.GET("/schemas", s.listSchemas)
	g.GET("/schemas/:full_name", s.getSchema)
	g.PATCH("/schemas/:full_name", s.updateSchema)
	g.DELETE("/schemas/:full_name", s.deleteSchema)
	g.POST("/tables", s.createTableUC)
	g.GET("/tables", s.listTables)
	g.GET("/tables/:full_name", s.getTable)
	g.DELETE("/tables/:full_name", s.deleteTableUC)
}

type catalogInfo struct {
	Name            string            `json:"name"`
	Comment         string            `json:"comment,omitempty"`
	Properties      map[string]string `json:"properties"`
	Owner           string            `json:"owner,omitempty"`
	CreatedAt       int64             `json:"created_at"`
	CreatedBy       string            `json:"created_by,omitempty"`
	UpdatedAt       int64             `json:"updated_at"`
	UpdatedBy       string            `json:"updated_by,omitempty"`
	ID              string            `json:"id"`
	StorageRoot     string            `json:"storage_root,omitempty"`
	StorageLocation string            `json:"storage_location,omitempty"`
}

func toCatalogInfo(c *fsm.Catalog) catalogInfo {
	return catalogInfo{Name: c.Name, Comment: c.Comment, Properties: nonNil(c.Properties), Owner: c.Owner,
		CreatedAt: c.CreatedAt, CreatedBy: c.CreatedBy, UpdatedAt: c.UpdatedAt, UpdatedBy: c.UpdatedBy,
		ID: c.ID, StorageRoot: c.StorageRoot, StorageLocation: c.StorageLocation}
}

type schemaInfo struct {
	Name            string            `json:"name"`
	CatalogName     string            `json:"catalog_name"`
	Comment         string            `json:"comment,omitempty"`
	Properties      map[string]string `json:"properties"`
	FullName        string            `json:"full_name"`
	Owner           string            `json:"owner,omitempty"`
	CreatedAt       int64             `json:"created_at"`
	CreatedBy       string            `json:"created_by,omitempty"`
	UpdatedAt       int64             `json:"updated_at"`
	UpdatedBy       string            `json:"updated_by,omitempty"`
	SchemaID        string            `json:"schema_id"`
	StorageRoot     string            `json:"storage_root,omitempty"`
	StorageLocation string            `json:"storage_location,omitempty"`
}

func toSchemaInfo(s *fsm.Schema) schemaInfo {
	return schemaInfo{Name: s.Name, CatalogName: s.CatalogName, Comment: s.Comment, Properties: nonNil(s.Properties),
		FullName: s.FullName(), Owner: s.Owner, CreatedAt: s.CreatedAt, CreatedBy: s.CreatedBy,
		UpdatedAt: s.UpdatedAt, UpdatedBy: s.UpdatedBy, SchemaID: s.ID, StorageRoot: s.StorageRoot,
		StorageLocation: s.StorageLocation}
}

type tableInfo struct {
	Name             string                   `json:"name"`
	CatalogName      string                   `json:"catalog_name"`
	SchemaName       string                   `json:"schema_name"`
	TableType        string                   `json:"table_type"`
	DataSourceFormat string                   `json:"data_source_format"`
	Columns          []deltaschema.ColumnInfo `json:"columns"`
	StorageLocation  string                   `json:"storage_location"`
	Comment          *string                  `json:"comment,omitempty"`
	Properties       map[string]string        `json:"properties"`
	Owner            string                   `json:"owner,omitempty"`
	CreatedAt        int64                    `json:"created_at"`
	CreatedBy        string                   `json:"created_by,omitempty"`
	UpdatedAt        int64                    `json:"updated_at"`
	UpdatedBy        string                   `json:"updated_by,omitempty"`
	TableID          string                   `json:"table_id"`
}

func toTableInfo(t *fsm.Table) tableInfo {
	cols := []deltaschema.ColumnInfo{}
	if st, err := deltaschema.Parse("columns", t.Columns); err == nil {
		cols = st.ColumnInfos(t.PartitionColumns)
	}
	return tableInfo{Name: t.Name, CatalogName: t.CatalogName, SchemaName: t.SchemaName, TableType: t.Type,
		DataSourceFormat: t.Format, Columns: cols, StorageLocation: t.Location, Comment: t.Comment,
		Properties: nonNil(t.Properties), Owner: t.Owner, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy,
		UpdatedAt: t.UpdatedAt, UpdatedBy: t.UpdatedBy, TableID: t.ID}
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func (s *Server) metastoreSummary(c echo.Context) error {
	st, err := s.readState(c)
	if err != nil {
		return err
	}
	ms := st.Metastore()
	if ms == nil {
		return errf503("the cluster is not initialised yet")
	}
	return c.JSON(http.StatusOK, map[string]string{"metastore_id": ms.ID})
}

type createContainerReq struct {
	Name        *string           `json:"name"`
	CatalogName *string           `json:"catalog_name"`
	Comment     string            `json:"comment"`
	Properties  map[string]string `json:"properties"`
	StorageRoot string            `json:"storage_root"`
}

func normalizeRoot(root string) (string, error) {
	if root == "" {
		return "", nil
	}
	n, err := storage.Normalize(root)
	if err != nil {
		return "", invalid("Invalid storage_root: %v", err)
	}
	return n, nil
}

func (s *Server) createCatalog(c echo.Context) error {
	var req createContainerReq
	if _, err := bindJSON(c, &req); err != nil {
		return err
	}
	name, err := requiredName(req.Name, "name")
	if err != nil {
		return err
	}
	root, err := normalizeRoot(req.StorageRoot)
	if err != nil {
		return err
	}
	res, err := s.propose(c, &fsm.CreateCatalog{Stamp: stamp(c), ID: uuid.NewString(), Name: name,
		Comment: req.Comment, Properties: req.Properties, StorageRoot: root})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toCatalogInfo(res.Catalog))
}

// page reads max_results and page_token. Tokens are the last name returned.
func page(c echo.Context, maxAllowed int) (after string, limit int, err error) {
	limit = maxAllowed
	if v := c.QueryParam("max_results"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 0 {
			return "", 0, invalid("max_results must be a non-negative integer, got %q", v)
		}
		if n > 0 && n < limit {
			limit = n
		}
	}
	if tok := c.QueryParam("page_token"); tok != "" {
		b, derr := base64.RawURLEncoding.DecodeString(tok)
		if derr != nil {
			return "", 0, invalid("Invalid page_token.")
		}
		after = string(b)
	}
	return after, limit, nil
}

// listing renders one page: the items converted, and the token of the
// next page when this page is full (the token is the last name returned).
func listing[T, O any](key string, items []T, limit int, name func(T) string, conv func(T) O) map[string]any {
	out := make([]O, 0, len(items))
	for _, it := range items {
		out = append(out, conv(it))
	}
	var next *string
	if limit > 0 && len(items) >= limit {
		t := base64.RawURLEncoding.EncodeToString([]byte(name(items[len(items)-1])))
		next = &t
	}
	return map[string]any{key: out, "next_page_token": next}
}

const maxPage = 1000

func (s *Server) listCatalogs(c echo.Context) error {
	after, limit, err := page(c, maxPage)
	if err != nil {
		return err
	}
	st, err := s.readState(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listing("catalogs", st.Catalogs(after, limit), limit,
		func(c *fsm.Catalog) string { return c.Name }, toCatalogInfo))
}

func (s *Server) getCatalog(c echo.Context) error {
	st, err := s.readState(c)
	if err != nil {
		return err
	}
	cat, ok := st.Catalog(c.Param("name"))
	if !ok {
		return fsm.Errf(fsm.CodeCatalogNotFound, "Catalog not found: %s", c.Param("name"))
	}
	return c.JSON(http.StatusOK, toCatalogInfo(cat))
}

type updateContainerReq struct {
	Comment    *string            `json:"comment"`
	Properties *map[string]string `json:"properties"`
	NewName    string             `json:"new_name"`
}

func (s *Server) bindUpdate(c echo.Context) (updateContainerReq, error) {
	var req updateContainerReq
	if _, err := bindJSON(c, &req); err != nil {
		return req, err
	}
	if req.NewName != "" {
		if err := checkName(req.NewName); err != nil {
			return req, err
		}
	}
	return req, nil
}

func (s *Server) updateCatalog(c echo.Context) error {
	req, err := s.bindUpdate(c)
	if err != nil {
		return err
	}
	res, err := s.propose(c, &fsm.UpdateCatalog{Stamp: stamp(c), Name: c.Param("name"), NewName: req.NewName,
		Comment: req.Comment, Properties: req.Properties})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toCatalogInfo(res.Catalog))
}

func forceParam(c echo.Context) (bool, error) { return boolParam(c, "force", false) }

// boolParam reads a boolean query parameter: false when absent, bare when
// given without a value (?name), else true or false as written.
func boolParam(c echo.Context, name string, bare bool) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return bare && c.QueryParams().Has(name), nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalid("%s must be true or false, got %q", name, v)
	}
	return b, nil
}

func (s *Server) deleteCatalog(c echo.Context) error {
	force, err := forceParam(c)
	if err != nil {
		return err
	}
	if _, err := s.propose(c, &fsm.DeleteCatalog{Stamp: stamp(c), Name: c.Param("name"), Force: force}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{})
}

func (s *Server) createSchema(c echo.Context) error {
	var req createContainerReq
	if _, err := bindJSON(c, &req); err != nil {
		return err
	}
	name, err := requiredName(req.Name, "name")
	if err != nil {
		return err
	}
	catalog, err := requiredName(req.CatalogName, "catalog_name")
	if err != nil {
		return err
	}
	root, err := normalizeRoot(req.StorageRoot)
	if err != nil {
		return err
	}
	res, err := s.propose(c, &fsm.CreateSchema{Stamp: stamp(c), ID: uuid.NewString(), CatalogName: catalog,
		Name: name, Comment: req.Comment, Properties: req.Properties, StorageRoot: root})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toSchemaInfo(res.Schema))
}

func (s *Server) listSchemas(c echo.Context) error {
	catalog := c.QueryParam("catalog_name")
	if catalog == "" {
		return invalid("catalog_name is required.")
	}
	after, limit, err := page(c, maxPage)
	if err != nil {
		return err
	}
	st, err := s.readState(c)
	if err != nil {
		return err
	}
	if _, ok := st.Catalog(catalog); !ok {
		return fsm.Errf(fsm.CodeCatalogNotFound, "Catalog not found: %s", catalog)
	}
	return c.JSON(http.StatusOK, listing("schemas", st.Schemas(catalog, after, limit), limit,
		func(s *fsm.Schema) string { return s.Name }, toSchemaInfo))
}

// splitFullName splits "a.b" or "a.b.c" into n parts.
func splitFullName(full string, n int, what string) ([]string, error) {
	parts := strings.Split(full, ".")
	if len(parts) != n {
		return nil, invalid("Invalid %s full name: %q", what, full)
	}
	for _, p := range parts {
		if p == "" {
			return nil, invalid("Invalid %s full name: %q", what, full)
		}
	}
	return parts, nil
}

func (s *Server) getSchema(c echo.Context) error {
	parts, err := splitFullName(c.Param("full_name"), 2, "schema")
	if err != nil {
		return err
	}
	st, err := s.readState(c)
	if err != nil {
		return err
	}
	if _, ok := st.Catalog(parts[0]); !ok {
		return fsm.Errf(fsm.CodeCatalogNotFound, "Catalog not found: %s", parts[0])
	}
	sc, ok := st.Schema(parts[0], parts[1])
	if !ok {
		return fsm.Errf(fsm.CodeSchemaNotFound, "Schema not found: %s", c.Param("full_name"))
	}
	return c.JSON(http.StatusOK, toSchemaInfo(sc))
}

func (s *Server) updateSchema(c echo.Context) error {
	parts, err := splitFullName(c.Param("full_name"), 2, "schema")
	if err != nil {
		return err
	}
	req, err := s.bindUpdate(c)
	if err != nil {
		return err
	}
	res, err := s.propose(c, &fsm.UpdateSchema{Stamp: stamp(c), CatalogName: parts[0], Name: parts[1],
		NewName: req.NewName, Comment: req.Comment, Properties: req.Properties})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toSchemaInfo(res.Schema))
}

func (s *Server) deleteSchema(c echo.Context) error {
	parts, err := splitFullName(c.Param("full_name"), 2, "schema")
	if err != nil {
		return err
	}
	force, err := forceParam(c)
	if err != nil {
		return err
	}
	if _, err := s.propose(c, &fsm.DeleteSchema{Stamp: stamp(c), CatalogName: parts[0], Name: parts[1], Force: force}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{})
}

func (s *Server) listTables(c echo.Context) error {
	catalog, schema := c.QueryParam("catalog_name"), c.QueryParam("schema_name")
	if catalog == "" {
		return invalid("catalog_name is required.")
	}
	if schema == "" {
		return invalid("schema_name is required.")
	}
	after, limit, err := page(c, 50)
	if err != nil {
		return err
	}
	st, err := s.readState(c)
	if err != nil {
		return err
	}
	if _, ok := st.Catalog(catalog); !ok {
		return fsm.Errf(fsm.CodeCatalogNotFound, "Catalog not found: %s", catalog)
	}
	if _, ok := st.Schema(catalog, schema); !ok {
		return fsm.Errf(fsm.CodeSchemaNotFound, "Schema not found: %s.%s", catalog, schema)
	}
	return c.JSON(http.StatusOK, listing("tables", st.Tables(catalog, schema, after, limit), limit,
		func(t *fsm.Table) string { return t.Name }, toTableInfo))
}

func (s *Server) getTable(c echo.Context) error {
	parts, err := splitFullName(c.Param("full_name"), 3, "table")
	if err != nil {
		return err
	}
	st, err := s.readState(c)
	if err != nil {
		return err
	}
	t, err := lookupTable(st, parts[0], parts[1], parts[2])
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toTableInfo(t))
}

func (s *Server) deleteTableUC(c echo.Context) error {
	parts, err := splitFullName(c.Param("full_name"), 3, "table")
	if err != nil {
		return err
	}
	if _, err := s.propose(c, &fsm.DeleteTable{Stamp: stamp(c), CatalogName: parts[0], SchemaName: parts[1], Name: parts[2]}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{})
}

// lookupTable resolves a three-part name with the 404 of the first
// missing level.
func lookupTable(st *fsm.State, catalog, schema, name string) (*fsm.Table, error) {
	if _, ok := st.Catalog(catalog); !ok {
		return nil, fsm.Errf(fsm.CodeCatalogNotFound, "Catalog not found: %s", catalog)
	}
	if _, ok := st.Schema(catalog, schema); !ok {
		return nil, fsm.Errf(fsm.CodeSchemaNotFound, "Schema not found: %s.%s", catalog, schema)
	}
	t, ok := st.Table(catalog, schema, name)
	if !ok {
		return nil, fsm.Errf(fsm.CodeTableNotFound, "Table not found: %s.%s.%s", catalog, schema, name)
	}
	return t, nil
}

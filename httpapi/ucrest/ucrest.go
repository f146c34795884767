// Package ucrest serves the Unity Catalog REST hierarchy (snake_case):
// metastore summary, catalogs, schemas and tables. It translates between
// that wire format and fsm commands and state; the httpapi core routes,
// reads, proposes and renders errors with this package's mapping.
package ucrest

import (
	"encoding/base64"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/deltaschema"
	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

// Prefix is the path UC REST is served under.
const Prefix = "/api/2.1/unity-catalog"

type server struct{ core *httpapi.Server }

// Register mounts UC REST on the core. Every request goes to the leader
// (stale reads excepted).
func Register(core *httpapi.Server) {
	s := &server{core: core}
	g := core.Mount(httpapi.Group{Name: "ucrest", Prefix: Prefix, Errors: errorMapping{}, ToLeader: true, Relay: true})
	g.GET("/metastore_summary", httpapi.AnyCaller(), s.metastoreSummary)
	g.POST("/catalogs", httpapi.NeedOn(fsm.PrivCreateCatalog, httpapi.Metastore), httpapi.Write(core, buildCreateCatalog, nil, catalogAnswer))
	g.GET("/catalogs", httpapi.AnyCaller(), s.listCatalogs)
	g.GET("/catalogs/:name", httpapi.NeedOn(fsm.PrivUseCatalog, httpapi.Params("name")), s.getCatalog)
	g.PATCH("/catalogs/:name", httpapi.NeedOwner(false, httpapi.Params("name")), httpapi.Write(core, buildUpdateCatalog, nil, catalogAnswer))
	g.DELETE("/catalogs/:name", httpapi.NeedOwner(false, httpapi.Params("name")), httpapi.Write(core, buildDeleteCatalog, nil, emptyAnswer))
	g.POST("/schemas", httpapi.NeedOn(fsm.PrivCreateSchema, bodyPath), httpapi.Write(core, buildCreateSchema, nil, schemaAnswer))
	g.GET("/schemas", httpapi.NeedOn(fsm.PrivUseCatalog, httpapi.Query("catalog_name")), s.listSchemas)
	g.GET("/schemas/:full_name", httpapi.NeedOn(fsm.PrivUseSchema, httpapi.FullName("full_name")), s.getSchema)
	g.PATCH("/schemas/:full_name", httpapi.NeedOwner(false, httpapi.FullName("full_name")), httpapi.Write(core, buildUpdateSchema, nil, schemaAnswer))
	g.DELETE("/schemas/:full_name", httpapi.NeedOwner(false, httpapi.FullName("full_name")), httpapi.Write(core, buildDeleteSchema, nil, emptyAnswer))
	g.POST("/tables", httpapi.NeedOn(fsm.PrivCreateTable, bodyPath), httpapi.Write(core, buildCreateTable, nil, tableAnswer))
	g.GET("/tables", httpapi.NeedOn(fsm.PrivUseSchema, httpapi.Query("catalog_name", "schema_name")), s.listTables)
	g.GET("/tables/:full_name", httpapi.NeedOnTable(fsm.PrivSelect, httpapi.FullName("full_name")), s.getTable)
	g.DELETE("/tables/:full_name", httpapi.NeedOwner(true, httpapi.FullName("full_name")), httpapi.Write(core, buildDeleteTable, nil, emptyAnswer))
	g.GET(permissionsPath, permissionsRule, s.getPermissions)
	g.PATCH(permissionsPath, permissionsRule, httpapi.Write(core, buildUpdatePermissions, nil, permissionsAnswer))
}

// bodyPath is the container a create names in its body: catalog_name,
// then schema_name.
func bodyPath(c echo.Context) ([]string, error) {
	var b struct {
		Catalog string `json:"catalog_name"`
		Schema  string `json:"schema_name"`
	}
	if err := httpapi.PeekBody(c, &b); err != nil {
		return nil, err
	}
	path := []string{b.Catalog}
	if b.Schema != "" {
		path = append(path, b.Schema)
	}
	return path, nil
}

func catalogAnswer(c echo.Context, res fsm.Result) error {
	return c.JSON(http.StatusOK, toCatalogInfo(res.Catalog))
}

func schemaAnswer(c echo.Context, res fsm.Result) error {
	return c.JSON(http.StatusOK, toSchemaInfo(res.Schema))
}

func tableAnswer(c echo.Context, res fsm.Result) error {
	return c.JSON(http.StatusOK, toTableInfo(res.Table))
}

func emptyAnswer(c echo.Context, _ fsm.Result) error { return c.JSON(http.StatusOK, map[string]any{}) }

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
	return catalogInfo{Name: c.Name, Comment: c.Comment, Properties: httpapi.NonNil(c.Properties), Owner: c.Owner,
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
	return schemaInfo{Name: s.Name, CatalogName: s.CatalogName, Comment: s.Comment, Properties: httpapi.NonNil(s.Properties),
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
	return tableInfoWith(t, cols)
}

// tableInfo is toTableInfo for a table of any format: the columns of a
// format whose schema lives outside the catalog's state (Iceberg's
// metadata file) come from its column source. A table whose schema
// cannot be read is shown without columns, and the failure logged.
func (s *server) tableInfo(c echo.Context, t *fsm.Table) tableInfo {
	src, ok := s.core.ColumnSource(t.Format)
	if !ok || t.IsView() {
		return toTableInfo(t)
	}
	st, err := src(c.Request().Context(), t)
	if err != nil {
		s.core.Logger().Warn("UC REST: the columns of a table could not be read", "table", t.FullName(), "err", err)
		return tableInfoWith(t, []deltaschema.ColumnInfo{})
	}
	return tableInfoWith(t, st.ColumnInfos(nil))
}

func tableInfoWith(t *fsm.Table, cols []deltaschema.ColumnInfo) tableInfo {
	return tableInfo{Name: t.Name, CatalogName: t.CatalogName, SchemaName: t.SchemaName, TableType: t.Type,
		DataSourceFormat: t.Format, Columns: cols, StorageLocation: t.Location, Comment: t.Comment,
		Properties: httpapi.NonNil(t.Properties), Owner: t.Owner, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy,
		UpdatedAt: t.UpdatedAt, UpdatedBy: t.UpdatedBy, TableID: t.ID}
}

func (s *server) metastoreSummary(c echo.Context) error {
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	ms := st.Metastore()
	if ms == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "the cluster is not initialised yet")
	}
	return c.JSON(http.StatusOK, map[string]string{"metastore_id": ms.ID})
}

type createContainerReq struct {
	Name        *string            `json:"name"`
	CatalogName *string            `json:"catalog_name"`
	Comment     string             `json:"comment"`
	Properties  map[string]*string `json:"properties"`
	StorageRoot string             `json:"storage_root"`
}

func normalizeRoot(root string) (string, error) {
	if root == "" {
		return "", nil
	}
	if err := httpapi.CheckSize("storage_root", root, httpapi.MaxLocationBytes); err != nil {
		return "", err
	}
	n, err := storage.Normalize(root)
	if err != nil {
		return "", httpapi.Invalid("Invalid storage_root: %v", err)
	}
	return n, nil
}

func buildCreateCatalog(in *httpapi.In[createContainerReq]) (*fsm.CreateCatalog, error) {
	name, root, props, err := containerParts(in)
	if err != nil {
		return nil, err
	}
	return &fsm.CreateCatalog{Stamp: in.Stamp, ID: uuid.NewString(), Name: name,
		Comment: in.Body.Comment, Properties: props, StorageRoot: root}, nil
}

// containerParts checks what creating a catalog or a schema shares: its
// name, storage root and properties.
func containerParts(in *httpapi.In[createContainerReq]) (name, root string, props map[string]string, err error) {
	if name, err = httpapi.RequiredName(in.Body.Name, "name"); err != nil {
		return "", "", nil, err
	}
	if err = httpapi.CheckComment("comment", &in.Body.Comment); err != nil {
		return "", "", nil, err
	}
	if root, err = normalizeRoot(in.Body.StorageRoot); err != nil {
		return "", "", nil, err
	}
	if err = in.CheckNotReserved("storage_root", root); err != nil {
		return "", "", nil, err
	}
	props, err = properties(in.Body.Properties)
	return name, root, props, err
}

// page reads max_results and page_token. Tokens are the last name returned.
func page(c echo.Context, maxAllowed int) (after string, limit int, err error) {
	limit = maxAllowed
	if v := c.QueryParam("max_results"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 0 {
			return "", 0, httpapi.Invalid("max_results must be a non-negative integer, got %q", v)
		}
		if n > 0 && n < limit {
			limit = n
		}
	}
	if tok := c.QueryParam("page_token"); tok != "" {
		b, derr := base64.RawURLEncoding.DecodeString(tok)
		if derr != nil {
			return "", 0, httpapi.Invalid("Invalid page_token.")
		}
		after = string(b)
	}
	return after, limit, nil
}

// listing renders one page: the items the caller may see, converted, and
// the token of the next page when the page read was full (the token is
// the last name read, so a page may hold fewer items than asked for).
func listing[T, O any](key string, items []T, limit int, name func(T) string, keep func(T) bool, conv func(T) O) map[string]any {
	out := make([]O, 0, len(items))
	for _, it := range items {
		if keep(it) {
			out = append(out, conv(it))
		}
	}
	var next *string
	if limit > 0 && len(items) >= limit {
		t := base64.RawURLEncoding.EncodeToString([]byte(name(items[len(items)-1])))
		next = &t
	}
	return map[string]any{key: out, "next_page_token": next}
}

const maxPage = 1000

func (s *server) listCatalogs(c echo.Context) error {
	after, limit, err := page(c, maxPage)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listing("catalogs", st.Catalogs(after, limit), limit,
		func(c *fsm.Catalog) string { return c.Name },
		func(cat *fsm.Catalog) bool { return s.core.Visible(c, st, false, cat.Name) }, toCatalogInfo))
}

func (s *server) getCatalog(c echo.Context) error {
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	cat, err := httpapi.LookupCatalog(st, c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toCatalogInfo(cat))
}

type updateContainerReq struct {
	Comment    *string             `json:"comment"`
	Properties *map[string]*string `json:"properties"`
	NewName    string              `json:"new_name"`
}

// checkUpdate checks an update request and returns its properties
// (nil when the request leaves them alone).
func checkUpdate(req updateContainerReq) (*map[string]string, error) {
	if req.NewName != "" {
		if err := httpapi.CheckName(req.NewName); err != nil {
			return nil, err
		}
	}
	if err := httpapi.CheckComment("comment", req.Comment); err != nil {
		return nil, err
	}
	if req.Properties == nil {
		return nil, nil
	}
	props, err := properties(*req.Properties)
	if err != nil {
		return nil, err
	}
	return &props, nil
}

// properties returns a request's properties, refusing JSON null values
// (a property's value is a string, and a null would otherwise be stored
// as "") and keys and values over their size limits.
func properties(in map[string]*string) (map[string]string, error) {
	if in == nil {
		return nil, nil
	}
	keys := slices.Sorted(maps.Keys(in))
	out := make(map[string]string, len(in))
	for _, k := range keys {
		if in[k] == nil {
			return nil, httpapi.Invalid("properties['%s'] must be a string, not null.", k)
		}
		out[k] = *in[k]
	}
	return out, httpapi.CheckProperties("properties", out)
}

func buildUpdateCatalog(in *httpapi.In[updateContainerReq]) (*fsm.UpdateCatalog, error) {
	props, err := checkUpdate(in.Body)
	if err != nil {
		return nil, err
	}
	return &fsm.UpdateCatalog{Stamp: in.Stamp, Name: in.Param("name"), NewName: in.Body.NewName,
		Comment: in.Body.Comment, Properties: props}, nil
}

func forceParam(c echo.Context) (bool, error) { return httpapi.BoolParam(c, "force", false) }

func buildDeleteCatalog(in *httpapi.In[httpapi.NoBody]) (*fsm.DeleteCatalog, error) {
	force, err := forceParam(in)
	if err != nil {
		return nil, err
	}
	return &fsm.DeleteCatalog{Stamp: in.Stamp, Name: in.Param("name"), Force: force}, nil
}

func buildCreateSchema(in *httpapi.In[createContainerReq]) (*fsm.CreateSchema, error) {
	if _, err := httpapi.RequiredName(in.Body.Name, "name"); err != nil {
		return nil, err
	}
	catalog, err := httpapi.RequiredName(in.Body.CatalogName, "catalog_name")
	if err != nil {
		return nil, err
	}
	name, root, props, err := containerParts(in)
	if err != nil {
		return nil, err
	}
	return &fsm.CreateSchema{Stamp: in.Stamp, ID: uuid.NewString(), CatalogName: catalog,
		Name: name, Comment: in.Body.Comment, Properties: props, StorageRoot: root}, nil
}

func (s *server) listSchemas(c echo.Context) error {
	catalog := c.QueryParam("catalog_name")
	if catalog == "" {
		return httpapi.Invalid("catalog_name is required.")
	}
	after, limit, err := page(c, maxPage)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	if _, err := httpapi.LookupCatalog(st, catalog); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listing("schemas", st.Schemas(catalog, after, limit), limit,
		func(s *fsm.Schema) string { return s.Name },
		func(sc *fsm.Schema) bool { return s.core.Visible(c, st, false, catalog, sc.Name) }, toSchemaInfo))
}

// splitFullName splits "a.b" or "a.b.c" into n parts.
func splitFullName(full string, n int, what string) ([]string, error) {
	parts := strings.Split(full, ".")
	if len(parts) != n {
		return nil, httpapi.Invalid("Invalid %s full name: %q", what, full)
	}
	for _, p := range parts {
		if p == "" {
			return nil, httpapi.Invalid("Invalid %s full name: %q", what, full)
		}
	}
	return parts, nil
}

func (s *server) getSchema(c echo.Context) error {
	parts, err := splitFullName(c.Param("full_name"), 2, "schema")
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	sc, err := httpapi.LookupSchema(st, parts[0], parts[1])
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toSchemaInfo(sc))
}

func buildUpdateSchema(in *httpapi.In[updateContainerReq]) (*fsm.UpdateSchema, error) {
	parts, err := splitFullName(in.Param("full_name"), 2, "schema")
	if err != nil {
		return nil, err
	}
	props, err := checkUpdate(in.Body)
	if err != nil {
		return nil, err
	}
	return &fsm.UpdateSchema{Stamp: in.Stamp, CatalogName: parts[0], Name: parts[1],
		NewName: in.Body.NewName, Comment: in.Body.Comment, Properties: props}, nil
}

func buildDeleteSchema(in *httpapi.In[httpapi.NoBody]) (*fsm.DeleteSchema, error) {
	parts, err := splitFullName(in.Param("full_name"), 2, "schema")
	if err != nil {
		return nil, err
	}
	force, err := forceParam(in)
	if err != nil {
		return nil, err
	}
	return &fsm.DeleteSchema{Stamp: in.Stamp, CatalogName: parts[0], Name: parts[1], Force: force}, nil
}

func (s *server) listTables(c echo.Context) error {
	catalog, schema := c.QueryParam("catalog_name"), c.QueryParam("schema_name")
	if catalog == "" {
		return httpapi.Invalid("catalog_name is required.")
	}
	if schema == "" {
		return httpapi.Invalid("schema_name is required.")
	}
	after, limit, err := page(c, 50)
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	if _, err := httpapi.LookupSchema(st, catalog, schema); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listing("tables", st.Tables(catalog, schema, after, limit), limit,
		func(t *fsm.Table) string { return t.Name },
		func(t *fsm.Table) bool { return s.core.Visible(c, st, true, catalog, schema, t.Name) },
		func(t *fsm.Table) tableInfo { return s.tableInfo(c, t) }))
}

func (s *server) getTable(c echo.Context) error {
	parts, err := splitFullName(c.Param("full_name"), 3, "table")
	if err != nil {
		return err
	}
	st, err := s.core.State(c)
	if err != nil {
		return err
	}
	t, err := httpapi.LookupTable(st, parts[0], parts[1], parts[2])
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.tableInfo(c, t))
}

func buildDeleteTable(in *httpapi.In[httpapi.NoBody]) (*fsm.DeleteTable, error) {
	parts, err := splitFullName(in.Param("full_name"), 3, "table")
	if err != nil {
		return nil, err
	}
	return &fsm.DeleteTable{Stamp: in.Stamp, CatalogName: parts[0], SchemaName: parts[1], Name: parts[2]}, nil
}

// Page reads a UC REST listing's max_results and page_token, for
// protocols that serve listings of their own below Prefix.
func Page(c echo.Context, maxAllowed int) (after string, limit int, err error) {
	return page(c, maxAllowed)
}

// Listing renders one page of a UC REST listing under key.
func Listing[T, O any](key string, items []T, limit int, name func(T) string, conv func(T) O) map[string]any {
	return listing(key, items, limit, name, func(T) bool { return true }, conv)
}

// ListingWhere is Listing showing only the items keep accepts (those the
// caller may see); paging goes on over the items read.
func ListingWhere[T, O any](key string, items []T, limit int, name func(T) string, keep func(T) bool, conv func(T) O) map[string]any {
	return listing(key, items, limit, name, keep, conv)
}

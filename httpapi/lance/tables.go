package lance

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
	"github.com/raftcat/raftcat/storage"
)

type declareBody struct {
	idBody
	Location        string            `json:"location"`
	Mode            string            `json:"mode"`
	Properties      map[string]string `json:"properties"`
	VendCredentials *bool             `json:"vend_credentials"`
}

// lookupTable resolves a table id to a Lance table, with the 404 of the
// first missing level.
func lookupTable(st *fsm.State, id []string, delim string) (*fsm.Table, error) {
	ns, name, err := tableRef(id, delim)
	if err != nil {
		return nil, err
	}
	if _, err := lookupNamespace(st, ns); err != nil {
		return nil, err
	}
	tb, ok := st.TableIn(ns, name)
	if !ok || tb.Format != fsm.FormatLance || tb.Lance == nil {
		return nil, lanceError(codeTableNotFound, "Table not found: %s", joinID(id, delim))
	}
	return tb, nil
}

func (s *Server) declareTable(c echo.Context) error {
	var b declareBody
	id, err := bindTarget(c, &b)
	if err != nil {
		return err
	}
	delim := delimiter(c)
	return s.write(c, func(p *httpapi.Plan) (httpapi.OpRender, error) {
		render, loc, err := s.planDeclare(p, id, delim, &b, false)
		if err != nil {
			return nil, err
		}
		// The caller owns the table it declares, to write it.
		opts, err := s.storageOptions(c.Request().Context(), loc, opReadWrite, b.VendCredentials)
		if err != nil || opts == nil {
			return render, err
		}
		return func(res *fsm.Result) any {
			out := render(res).(map[string]any)
			out["storage_options"] = opts
			return out
		}, nil
	})
}

// planDeclare plans a declare (or, registered, a register) of a table,
// and tells the table's location.
func (s *Server) planDeclare(p *httpapi.Plan, id []string, delim string, b *declareBody, registered bool) (httpapi.OpRender, string, error) {
	ns, name, err := tableRef(id, delim)
	if err != nil {
		return nil, "", err
	}
	if err := checkNames([]string{name}); err != nil {
		return nil, "", err
	}
	if _, err := lookupNamespace(p.State, ns); err != nil {
		return nil, "", err
	}
	tid := uuid.NewString()
	loc, tt, err := s.location(p, ns, b.Location, tid)
	if err != nil {
		return nil, "", err
	}
	cmd := &fsm.DeclareLanceTable{Stamp: p.Stamp, ID: tid, Namespace: ns, Name: name, TableType: tt, Location: loc,
		Properties: b.Properties, Registered: registered}
	if _, err := p.Add(cmd); err != nil {
		return nil, "", err
	}
	return func(*fsm.Result) any {
		out := map[string]any{"location": loc, "managed_versioning": true}
		if len(b.Properties) > 0 {
			out["properties"] = b.Properties
		}
		return out
	}, loc, nil
}

// location is the requested location, or the schema's managed root +
// /tables/<uuid>, with the table type it makes.
func (s *Server) location(p *httpapi.Plan, ns []string, requested, id string) (string, string, error) {
	if requested != "" {
		loc, err := storage.Normalize(requested)
		if err != nil {
			return "", "", invalid("Invalid table location: %v", err)
		}
		loc = strings.TrimRight(loc, "/")
		if err := httpapi.CheckExternalLocation(loc); err != nil {
			return "", "", err
		}
		return loc, fsm.TableExternal, s.core.CheckNotReserved("Table location", loc)
	}
	root := p.State.ManagedRoot(ns[0], ns[1])
	if root == "" {
		return "", "", invalid("No managed storage location is configured for %s; give the table a location", strings.Join(ns, "."))
	}
	return root + "/tables/" + id, fsm.TableManaged, nil
}

type describeBody struct {
	idBody
	Version         *int64 `json:"version"`
	Branch          string `json:"branch"`
	Tag             string `json:"tag"`
	VendCredentials *bool  `json:"vend_credentials"`
}

// readTable is the common start of the table reads.
func (s *Server) readTable(c echo.Context, b *describeBody) (*fsm.State, *fsm.Table, error) {
	if err := bind(c, b); err != nil {
		return nil, nil, err
	}
	if b.Branch != "" || b.Tag != "" {
		return nil, nil, unsupported("Branches and tags are not supported")
	}
	id, err := pathID(c, b.ID)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.state(c)
	if err != nil {
		return nil, nil, err
	}
	tb, err := lookupTable(st, id, delimiter(c))
	if err != nil {
		return nil, nil, err
	}
	if b.Version != nil {
		if _, ok := st.LanceVersion(tb, *b.Version); !ok {
			return nil, nil, lanceError(codeVersionNotFound, "Version %d of table %s not found", *b.Version, tb.FullName())
		}
	}
	return st, tb, nil
}

func (s *Server) describeTable(c echo.Context) error {
	var b describeBody
	st, tb, err := s.readTable(c, &b)
	if err != nil {
		return err
	}
	out := map[string]any{"location": tb.Location, "managed_versioning": true, "properties": httpapi.NonNil(tb.Properties)}
	opts, err := s.storageOptions(c.Request().Context(), tb.Location, s.readOperation(c, st, tb), b.VendCredentials)
	if err != nil {
		return err
	}
	if opts != nil {
		out["storage_options"] = opts
	}
	if c.QueryParam("with_table_uri") == "true" {
		out["table_uri"] = tb.Location
	}
	if c.QueryParam("check_declared") == "true" {
		out["is_only_declared"] = tb.Lance.OnlyDeclared
	}
	if b.Version != nil {
		out["version"] = *b.Version
	} else if tb.Lance.Count > 0 {
		out["version"] = tb.Lance.Latest
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) tableExists(c echo.Context) error {
	if _, _, err := s.readTable(c, &describeBody{}); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}

// includeDeclared reads ?include_declared= (default true).
func includeDeclared(c echo.Context) (bool, error) {
	raw := c.QueryParam("include_declared")
	if raw == "" {
		return true, nil
	}
	v, err := strconv.ParseBool(raw)
	if err != nil {
		return false, invalid("Invalid include_declared %q", httpapi.Clip(raw))
	}
	return v, nil
}

// listed reports whether a list shows a table: a Lance table (declared
// only, if asked for) that the caller may see.
func (s *Server) listed(c echo.Context, st *fsm.State, tb *fsm.Table, declared bool) bool {
	return tb.Format == fsm.FormatLance && tb.Lance != nil && (declared || !tb.Lance.OnlyDeclared) &&
		s.core.Visible(c, st, true, append(tb.NamespacePath(), tb.Name)...)
}

func (s *Server) listTables(c echo.Context) error {
	st, id, _, err := s.readNamespace(c)
	if err != nil {
		return err
	}
	limit, err := pageLimit(c)
	if err != nil {
		return err
	}
	declared, err := includeDeclared(c)
	if err != nil {
		return err
	}
	var names []string
	keep := func(tb *fsm.Table) bool { return s.listed(c, st, tb, declared) }
	for _, tb := range st.TablesInWhere(id, c.QueryParam("page_token"), limit+1, keep) {
		names = append(names, tb.Name)
	}
	return c.JSON(http.StatusOK, page("tables", names, limit, func(n string) string { return n }))
}

func (s *Server) listAllTables(c echo.Context) error {
	limit, err := pageLimit(c)
	if err != nil {
		return err
	}
	declared, err := includeDeclared(c)
	if err != nil {
		return err
	}
	after, err := decodeToken(c.QueryParam("page_token"))
	if err != nil {
		return err
	}
	st, err := s.state(c)
	if err != nil {
		return err
	}
	var ids [][]string
	for _, tb := range st.TablesWhere(after, limit+1, func(tb *fsm.Table) bool { return s.listed(c, st, tb, declared) }) {
		ids = append(ids, append(tb.NamespacePath(), tb.Name))
	}
	delim := delimiter(c)
	out := page("tables", ids, limit, encodeToken)
	names := []string{}
	for _, id := range out["tables"].([][]string) {
		names = append(names, joinID(id, delim))
	}
	out["tables"] = names
	return c.JSON(http.StatusOK, out)
}

// A page token of the list of all tables is the last table's id.
func encodeToken(id []string) string {
	b, _ := json.Marshal(id)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(tok string) ([]string, error) {
	if tok == "" {
		return nil, nil
	}
	var id []string
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil {
		err = json.Unmarshal(raw, &id)
	}
	if err != nil {
		return nil, invalid("Invalid page_token")
	}
	return id, nil
}

func (s *Server) registerTable(c echo.Context) error {
	var b declareBody
	id, err := bindTarget(c, &b)
	if err != nil {
		return err
	}
	m, err := mode(b.Mode, "create", "create", "overwrite")
	if err != nil {
		return err
	}
	if b.Location == "" {
		return invalid("Registering a table needs its location")
	}
	delim := delimiter(c)
	return s.write(c, func(p *httpapi.Plan) (httpapi.OpRender, error) {
		if _, err := lookupTable(p.State, id, delim); err == nil && m == "overwrite" {
			if _, err := s.planDrop(p, id, delim, false); err != nil {
				return nil, err
			}
		}
		render, _, err := s.planDeclare(p, id, delim, &b, true)
		if err != nil {
			return nil, err
		}
		return func(res *fsm.Result) any {
			out := render(res).(map[string]any)
			delete(out, "managed_versioning")
			return out
		}, nil
	})
}

func (s *Server) deregisterTable(c echo.Context) error { return s.removeTable(c, false) }

func (s *Server) dropTable(c echo.Context) error { return s.removeTable(c, true) }

func (s *Server) removeTable(c echo.Context, purge bool) error {
	var b idBody
	id, err := bindTarget(c, &b)
	if err != nil {
		return err
	}
	delim := delimiter(c)
	return s.write(c, func(p *httpapi.Plan) (httpapi.OpRender, error) { return s.planDrop(p, id, delim, purge) })
}

// planDrop plans a deregister, or a drop (purge) whose files are deleted
// once it applied.
func (s *Server) planDrop(p *httpapi.Plan, id []string, delim string, purge bool) (httpapi.OpRender, error) {
	tb, err := lookupTable(p.State, id, delim)
	if err != nil {
		return nil, err
	}
	if _, err := p.Add(&fsm.DropLanceTable{Stamp: p.Stamp, Namespace: tb.NamespacePath(), Name: tb.Name}); err != nil {
		return nil, err
	}
	if purge {
		p.OnCommit(func() { s.purge(p.Request().Context(), tb) })
	}
	return func(*fsm.Result) any {
		return map[string]any{"id": id, "location": tb.Location, "properties": httpapi.NonNil(tb.Properties)}
	}, nil
}

type renameBody struct {
	idBody
	NewTableName   string    `json:"new_table_name"`
	NewNamespaceID *[]string `json:"new_namespace_id"`
}

func (s *Server) renameTable(c echo.Context) error {
	var b renameBody
	id, err := bindTarget(c, &b)
	if err != nil {
		return err
	}
	if b.NewTableName == "" {
		return invalid("A rename needs new_table_name")
	}
	if err := checkNames([]string{b.NewTableName}); err != nil {
		return err
	}
	delim := delimiter(c)
	return s.write(c, func(p *httpapi.Plan) (httpapi.OpRender, error) {
		tb, err := lookupTable(p.State, id, delim)
		if err != nil {
			return nil, err
		}
		newNS := tb.NamespacePath()
		if b.NewNamespaceID != nil {
			newNS = *b.NewNamespaceID
		}
		_, err = p.Add(&fsm.RenameLanceTable{Stamp: p.Stamp, Namespace: tb.NamespacePath(), Name: tb.Name,
			NewNamespace: newNS, NewName: b.NewTableName})
		return empty, err
	})
}

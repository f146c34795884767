package sharing

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
)

// maxResultsLimit is the largest page of a listing, and its default.
const maxResultsLimit = 500

type shareItem struct {
	Name string `json:"name"`
	ID   string `json:"id,omitempty"`
}

type schemaItem struct {
	Name  string `json:"name"`
	Share string `json:"share"`
}

type tableItem struct {
	Name    string `json:"name"`
	Schema  string `json:"schema"`
	Share   string `json:"share"`
	ShareID string `json:"shareId,omitempty"`
	ID      string `json:"id,omitempty"`
}

// page is one page of a listing: items, and the token of the next page
// (omitted on the last one: a client loops while it is present).
type page[T any] struct {
	Items         []T    `json:"items,omitempty"`
	NextPageToken string `json:"nextPageToken,omitempty"`
}

// granted resolves a share the caller holds a grant on; any other share,
// existing or not, is the same 404.
func granted(c echo.Context, name string) (*fsm.Share, error) {
	p := principalOf(c)
	sh, ok := p.state.Share(name)
	if !ok || !sh.GrantedTo(p.recipient.Name) {
		return nil, notFound("share '%s' not found", name)
	}
	return sh, nil
}

// liveObjects are the share's objects whose table still exists as the
// table that was shared (same uuid, still Delta).
func liveObjects(st *fsm.State, sh *fsm.Share) []sharedTable {
	var out []sharedTable
	for i := range sh.Objects {
		if tb, ok := st.SharedTable(&sh.Objects[i]); ok {
			out = append(out, sharedTable{share: sh, obj: &sh.Objects[i], table: tb})
		}
	}
	return out
}

// sharedTable is a share's object with the table it names.
type sharedTable struct {
	share *fsm.Share
	obj   *fsm.SharedObject
	table *fsm.Table
}

func (s *Server) listShares(c echo.Context) error {
	p := principalOf(c)
	var names []shareItem
	for _, sh := range p.state.SharesGrantedTo(p.recipient.Name) {
		names = append(names, shareItem{Name: sh.Name, ID: sh.ID})
	}
	return paginate(c, "shares", names, func(i shareItem) string { return strings.ToLower(i.Name) })
}

func (s *Server) getShare(c echo.Context) error {
	sh, err := granted(c, c.Param("share"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]shareItem{"share": {Name: sh.Name, ID: sh.ID}})
}

func (s *Server) listSchemas(c echo.Context) error {
	sh, err := granted(c, c.Param("share"))
	if err != nil {
		return err
	}
	var items []schemaItem
	for _, t := range liveObjects(principalOf(c).state, sh) {
		name := t.obj.Schema()
		if !slices.ContainsFunc(items, func(i schemaItem) bool { return strings.EqualFold(i.Name, name) }) {
			items = append(items, schemaItem{Name: name, Share: sh.Name})
		}
	}
	slices.SortFunc(items, func(a, b schemaItem) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return paginate(c, "schemas:"+strings.ToLower(sh.Name), items, func(i schemaItem) string { return strings.ToLower(i.Name) })
}

func (s *Server) listTables(c echo.Context) error {
	sh, err := granted(c, c.Param("share"))
	if err != nil {
		return err
	}
	schema := c.Param("schema")
	items := tableItems(principalOf(c).state, sh, func(t sharedTable) bool { return strings.EqualFold(t.obj.Schema(), schema) })
	if len(items) == 0 {
		return notFound("schema '%s' not found", schema)
	}
	return paginate(c, "tables:"+strings.ToLower(sh.Name+"."+schema), items, tableKey)
}

func (s *Server) listAllTables(c echo.Context) error {
	sh, err := granted(c, c.Param("share"))
	if err != nil {
		return err
	}
	items := tableItems(principalOf(c).state, sh, func(sharedTable) bool { return true })
	return paginate(c, "all-tables:"+strings.ToLower(sh.Name), items, tableKey)
}

func tableItems(st *fsm.State, sh *fsm.Share, keep func(sharedTable) bool) []tableItem {
	var items []tableItem
	for _, t := range liveObjects(st, sh) {
		if keep(t) {
			items = append(items, tableItem{Name: t.obj.Table(), Schema: t.obj.Schema(), Share: sh.Name, ShareID: sh.ID, ID: t.table.ID})
		}
	}
	slices.SortFunc(items, func(a, b tableItem) int { return strings.Compare(tableKey(a), tableKey(b)) })
	return items
}

func tableKey(i tableItem) string { return strings.ToLower(i.Schema + "." + i.Name) }

// listCursor is a listing's page token: the listing it belongs to and
// the key of the last item returned. A cursor rather than an offset, so
// items created or dropped between pages are neither skipped nor
// repeated.
type listCursor struct {
	Scope string `json:"s"`
	After string `json:"a"`
}

// paginate answers one page of items (sorted by key) after the
// request's pageToken, at most maxResults of them.
func paginate[T any](c echo.Context, scope string, items []T, key func(T) string) error {
	limit, after, err := pageParams(c, scope)
	if err != nil {
		return err
	}
	start, _ := slices.BinarySearchFunc(items, after, func(it T, a string) int { return strings.Compare(key(it), a) })
	if after != "" && start < len(items) && key(items[start]) == after {
		start++
	}
	end := min(len(items), start+limit)
	out := page[T]{Items: items[start:end]}
	if end < len(items) {
		last := after
		if end > start {
			last = key(items[end-1])
		}
		out.NextPageToken = encodeCursor(listCursor{Scope: scope, After: last})
	}
	return c.JSON(http.StatusOK, out)
}

func pageParams(c echo.Context, scope string) (limit int, after string, err error) {
	limit = maxResultsLimit
	if v := c.QueryParam("maxResults"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 0 || n > maxResultsLimit {
			return 0, "", invalid("Acceptable values of 'maxResults' are 0 to %d, inclusive. (Default: %d)", maxResultsLimit, maxResultsLimit)
		}
		limit = n
	}
	if tok := c.QueryParam("pageToken"); tok != "" {
		cur, ok := decodeCursor(tok)
		if !ok || cur.Scope != scope {
			return 0, "", invalid("invalid 'nextPageToken'")
		}
		after = cur.After
	}
	return limit, after, nil
}

func encodeCursor(cur listCursor) string {
	raw, _ := json.Marshal(cur)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func decodeCursor(tok string) (listCursor, bool) {
	var cur listCursor
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || json.Unmarshal(raw, &cur) != nil || cur.Scope == "" {
		return listCursor{}, false
	}
	return cur, true
}

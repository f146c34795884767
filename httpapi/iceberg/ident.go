package iceberg

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/httpapi"
)

// nsSep joins the levels of a namespace in a path segment and in the
// parent query (0x1F, sent as %1F).
const nsSep = "\x1f"

// maxName bounds a namespace level or a table name.
const maxName = 255

// checkLevel refuses a namespace level or table name no catalog object
// could have: empty, over-long, or carrying control characters.
func checkLevel(what, name string) error {
	if name == "" {
		return httpapi.Invalid("%s must not be empty", what)
	}
	if len(name) > maxName {
		return httpapi.Invalid("%s cannot be longer than %d bytes: %s", what, maxName, httpapi.Clip(name))
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return httpapi.Invalid("%s cannot contain control characters: %q", what, httpapi.Clip(name))
	}
	return nil
}

// checkNamespace refuses an empty namespace or a bad level.
func checkNamespace(levels []string) error {
	if len(levels) == 0 {
		return httpapi.Invalid("Namespace must have at least one level")
	}
	for _, l := range levels {
		if err := checkLevel("Namespace level", l); err != nil {
			return err
		}
	}
	return nil
}

// splitNamespace parses a namespace joined by the separator.
func splitNamespace(joined string) ([]string, error) {
	levels := strings.Split(joined, nsSep)
	return levels, checkNamespace(levels)
}

// ref is a namespace or table as this protocol names it: the warehouse
// (the {prefix} segment) and the Iceberg namespace levels.
type ref struct {
	warehouse string
	levels    []string
	name      string // table name, "" for a namespace
}

// path is the fsm namespace path: [warehouse, levels...].
func (r ref) path() []string { return append([]string{r.warehouse}, r.levels...) }

// dotted names the namespace or table in messages.
func (r ref) dotted() string {
	parts := slices.Clone(r.levels)
	if r.name != "" {
		parts = append(parts, r.name)
	}
	return httpapi.Clip(strings.Join(parts, "."))
}

// warehouseParam reads the {prefix} segment.
func warehouseParam(c echo.Context) (string, error) {
	w := c.Param("prefix")
	return w, checkLevel("Warehouse", w)
}

// namespaceRef reads {prefix} and {namespace}.
func namespaceRef(c echo.Context) (ref, error) {
	w, err := warehouseParam(c)
	if err != nil {
		return ref{}, err
	}
	levels, err := splitNamespace(c.Param("namespace"))
	return ref{warehouse: w, levels: levels}, err
}

// tableRef reads {prefix}, {namespace} and {table}.
func tableRef(c echo.Context) (ref, error) {
	r, err := namespaceRef(c)
	if err != nil {
		return r, err
	}
	r.name = c.Param("table")
	return r, checkLevel("Table name", r.name)
}

// parentRef reads the parent query of a namespace listing: the levels
// joined by the separator, absent or empty for the warehouse's root.
func parentRef(c echo.Context) (ref, error) {
	w, err := warehouseParam(c)
	if err != nil {
		return ref{}, err
	}
	p := c.QueryParam("parent")
	if p == "" {
		return ref{warehouse: w}, nil
	}
	levels, err := splitNamespace(p)
	return ref{warehouse: w, levels: levels}, err
}

// page is a listing request: without a pageToken every result (the
// spec's rule for clients that do not paginate); with one (even empty),
// at most size results after the token's position.
type page struct {
	paged bool
	after string
	size  int
}

const defaultPageSize, maxPageSize = 100, 1000

func pageParams(c echo.Context) (page, error) {
	q := c.QueryParams()
	p := page{size: defaultPageSize}
	if raw := q.Get("pageSize"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return p, httpapi.Invalid("pageSize must be a positive integer, got %q", httpapi.Clip(raw))
		}
		p.size = min(n, maxPageSize)
	}
	if !q.Has("pageToken") {
		return page{}, nil
	}
	p.paged = true
	after, err := base64.RawURLEncoding.DecodeString(q.Get("pageToken"))
	if err != nil {
		return p, httpapi.Invalid("Invalid pageToken %q", httpapi.Clip(q.Get("pageToken")))
	}
	p.after = string(after)
	return p, nil
}

// limit is how many entries to fetch: one more than a page, to tell
// whether another follows (0: all).
func (p page) limit() int {
	if !p.paged {
		return 0
	}
	return p.size + 1
}

// cut trims a fetched listing to the page and returns the token of the
// next page (nil on the last), given each entry's name.
func cut[T any](p page, items []T, name func(T) string) ([]T, *string) {
	if !p.paged || len(items) <= p.size {
		return items, nil
	}
	items = items[:p.size]
	tok := base64.RawURLEncoding.EncodeToString([]byte(name(items[len(items)-1])))
	return items, &tok
}

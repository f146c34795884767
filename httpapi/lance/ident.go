package lance

import (
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/httpapi"
)

// An object id is a list of names; on the wire it is the names joined by
// the delimiter (?delimiter=, "$" by default). The root namespace is the
// empty id, spelled as the delimiter alone.
//
// The namespace tree is the catalog's: [catalog] and [catalog, schema,
// ...] are namespaces, and a table lives in a schema or below one, so a
// table id has at least three names.

const defaultDelimiter = "$"

func delimiter(c echo.Context) string {
	if d := c.QueryParam("delimiter"); d != "" {
		return d
	}
	return defaultDelimiter
}

// parseID splits a path id, dropping empty parts (so the delimiter alone
// is the root).
func parseID(raw, delim string) []string {
	return slices.DeleteFunc(strings.Split(raw, delim), func(s string) bool { return s == "" })
}

func joinID(id []string, delim string) string {
	if len(id) == 0 {
		return delim
	}
	return strings.Join(id, delim)
}

// pathID is the id a route names, checked against the body's own id when
// the body repeats one.
func pathID(c echo.Context, body *[]string) ([]string, error) {
	id := parseID(c.Param("id"), delimiter(c))
	if body != nil && !slices.Equal(*body, id) {
		return nil, invalid("The body's id %q differs from the path's %q", *body, id)
	}
	return id, nil
}

// idBody is the id a request body may repeat; every body embeds it.
type idBody struct {
	ID *[]string `json:"id"`
}

func (b *idBody) bodyID() *[]string { return b.ID }

// bindTarget decodes a request body into b and returns the id the route
// names, checked against the one the body repeats.
func bindTarget(c echo.Context, b interface{ bodyID() *[]string }) ([]string, error) {
	if err := bind(c, b); err != nil {
		return nil, err
	}
	return pathID(c, b.bodyID())
}

// bodyID is the id an operation of a batch names; it must give one.
func bodyID(id *[]string, what string) ([]string, error) {
	if id == nil || len(*id) == 0 {
		return nil, invalid("%s needs an id", what)
	}
	return *id, nil
}

// tableRef splits a table id into its namespace and name.
func tableRef(id []string, delim string) ([]string, string, error) {
	if len(id) < 3 {
		return nil, "", invalid("A table id needs a catalog, a schema and a table name (got %q); tables live in a schema or below one",
			joinID(id, delim))
	}
	for _, n := range id {
		if n == "" {
			return nil, "", invalid("A table id has an empty name: %q", id)
		}
	}
	return slices.Clone(id[:len(id)-1]), id[len(id)-1], nil
}

// checkNames refuses names the catalog cannot hold.
func checkNames(id []string) error {
	for _, n := range id {
		if err := httpapi.CheckName(n); err != nil {
			return invalid("Invalid name %q: %v", httpapi.Clip(n), err)
		}
	}
	return nil
}

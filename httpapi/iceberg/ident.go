package iceberg

import (
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/fsm"
	"github.com/raftcat/raftcat/httpapi"
)

// unitSeparator joins the levels of a namespace in a path segment.
const unitSeparator = "\x1f"

// namespacePath is the fsm path of the request's namespace: the warehouse
// (the prefix segment) and the levels of the namespace segment.
func namespacePath(c echo.Context) ([]string, error) {
	raw := c.Param("namespace")
	if raw == "" {
		return nil, httpapi.Invalid("A namespace is required.")
	}
	return levelsIn(c.Param("prefix"), strings.Split(raw, unitSeparator))
}

// levelsIn is the fsm path of a namespace of the warehouse.
func levelsIn(warehouse string, levels []string) ([]string, error) {
	if len(levels) == 0 || slices.Contains(levels, "") {
		return nil, httpapi.Invalid("A namespace needs non-empty levels: %q", levels)
	}
	for _, l := range append([]string{warehouse}, levels...) {
		if strings.ContainsAny(l, "\x00"+unitSeparator) {
			return nil, httpapi.Invalid("A namespace level cannot contain control characters: %q", httpapi.Clip(l))
		}
	}
	return append([]string{warehouse}, levels...), nil
}

// lookupNamespace answers the 404 of a missing warehouse or namespace.
func lookupNamespace(st *fsm.State, path []string) error {
	if _, err := httpapi.LookupCatalog(st, path[0]); err != nil {
		return err
	}
	for i := 2; i <= len(path); i++ {
		if _, ok := st.Namespace(path[:i]); !ok {
			return fsm.Errf(fsm.CodeSchemaNotFound, "Namespace does not exist: %s", httpapi.Clip(strings.Join(path[1:i], ".")))
		}
	}
	return nil
}

// page reads pageToken (the last name of the previous page) and pageSize
// (0: everything).
func page(c echo.Context) (after string, size int, err error) {
	if v := c.QueryParam("pageSize"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 1 {
			return "", 0, httpapi.Invalid("pageSize must be a positive integer, got '%s'.", httpapi.Clip(v))
		}
	}
	return c.QueryParam("pageToken"), size, nil
}

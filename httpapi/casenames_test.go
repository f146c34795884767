package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// A catalog, schema or table whose name differs only in case from a
// sibling's is refused, created or renamed, as already existing, on UC
// REST and on the Delta API; lookups stay exact.
func TestFastCaseTwinNames(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	const twin = "differs only in case"

	t.Run("uc catalogs and schemas", func(t *testing.T) {
		a := a.with(t)
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": "Sales"})
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": "sales"}), 400, "CATALOG_ALREADY_EXISTS",
			"Catalog already exists: sales "+twin+" from the existing catalog Sales")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": "other"})
		ucErr(t, a.do(http.MethodPatch, apiPrefix+"/catalogs/other", map[string]any{"new_name": "SALES"}), 400, "CATALOG_ALREADY_EXISTS", twin)
		ucErr(t, a.do(http.MethodGet, apiPrefix+"/catalogs/sales", nil), 404, "NOT_FOUND")

		ucErr(t, a.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "Default", "catalog_name": "unity"}), 400,
			"SCHEMA_ALREADY_EXISTS", "unity.Default "+twin+" from the existing schema unity.default")
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "x", "catalog_name": "unity"})
		ucErr(t, a.do(http.MethodPatch, apiPrefix+"/schemas/unity.x", map[string]any{"new_name": "DEFAULT"}), 400, "SCHEMA_ALREADY_EXISTS", twin)
		// The same name in another catalog is no twin, nor is another
		// spelling of a name for itself.
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": "Default", "catalog_name": "Sales"})
		a.ok(http.StatusOK, http.MethodPatch, apiPrefix+"/schemas/unity.x", map[string]any{"new_name": "X"})
	})

	t.Run("uc tables", func(t *testing.T) {
		a := a.with(t)
		_, sch := a.newSchema()
		a.ok(http.StatusOK, http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, "Events", "CSV", "/data/"+sch+"/a"))
		ucErr(t, a.do(http.MethodPost, apiPrefix+"/tables", ucTableBody(sch, "events", "CSV", "/data/"+sch+"/b")), 400,
			"TABLE_ALREADY_EXISTS", "unity."+sch+".events "+twin+" from the existing table unity."+sch+".Events")
	})

	t.Run("delta staging and rename", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		a.createManaged(cat, sch, "Events")
		r := a.do(http.MethodPost, stagingPath(cat, sch), map[string]any{"name": "EVENTS"})
		deltaErr(t, r, 409, "AlreadyExistsException", twin)
		a.createManaged(cat, sch, "other")
		r = a.do(http.MethodPost, tablePath(cat, sch, "other")+"/rename", map[string]any{"new-name": "events"})
		if msg := deltaErr(t, r, 409, "AlreadyExistsException", twin); !strings.Contains(msg, "Events") {
			t.Fatalf("message %q does not name the existing table", msg)
		}
		if r := a.do(http.MethodGet, tablePath(cat, sch, "events"), nil); r.status != http.StatusNotFound {
			t.Fatalf("GET events: status %d, want 404", r.status)
		}
		a.ok(http.StatusNoContent, http.MethodPost, tablePath(cat, sch, "Events")+"/rename", map[string]any{"new-name": "events"})
	})
}

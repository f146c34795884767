package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Unity Catalog accepts only names matching [a-zA-Z0-9_@-]+ (ValidationUtils
// VALID_FORMAT) and answers anything else with 400 "Name cannot contain a
// period, space, forward-slash, or control characters".
func TestFastNameCharacterWhitelist(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	const msg = "Name cannot contain a period, space, forward-slash, or control characters"
	bad := []string{"a#b", "a:b", "a*b", "a,b", "a'b", "a+b", "na\u00efve", "a\u00a0b"}

	t.Run("delta staging", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		for _, n := range bad {
			r := a.do(http.MethodPost, stagingPath(cat, sch), map[string]any{"name": n})
			if r.status != http.StatusBadRequest {
				t.Errorf("staging name %q: status %d, want 400", n, r.status)
				continue
			}
			deltaErr(t, r, 400, "InvalidParameterValueException", msg)
		}
	})

	t.Run("delta rename", func(t *testing.T) {
		a := a.with(t)
		cat, sch := a.newSchema()
		for i, n := range bad {
			src := "src" + strconv.Itoa(i)
			a.createManaged(cat, sch, src)
			r := a.do(http.MethodPost, tablePath(cat, sch, src)+"/rename", map[string]any{"new-name": n})
			if r.status != http.StatusBadRequest {
				t.Errorf("rename to %q: status %d, want 400", n, r.status)
				continue
			}
			deltaErr(t, r, 400, "InvalidParameterValueException", msg)
		}
	})

	t.Run("uc catalogs and schemas", func(t *testing.T) {
		a := a.with(t)
		for _, n := range bad {
			if r := a.do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": n}); r.status != http.StatusBadRequest {
				t.Errorf("catalog name %q: status %d, want 400", n, r.status)
			} else {
				ucErr(t, r, 400, "INVALID_ARGUMENT", msg)
			}
			if r := a.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": n, "catalog_name": "unity"}); r.status != http.StatusBadRequest {
				t.Errorf("schema name %q: status %d, want 400", n, r.status)
			} else {
				ucErr(t, r, 400, "INVALID_ARGUMENT", msg)
			}
		}
	})
}

// Path parameters arrive percent-encoded: a client may send "@" as %40
// (Java's URLEncoder does) or encode any unreserved character. RFC 3986
// makes those URLs equivalent to the decoded ones, so they must name the
// same catalog, schema and table.
func TestFastPercentEncodedPathParams(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	cat, sch := a.newSchema()
	created := a.createManaged(cat, sch, "a@b")
	id := str(t, dig(created, "metadata", "table-uuid"))

	t.Run("delta load", func(t *testing.T) {
		a := a.with(t)
		r := a.do(http.MethodGet, tablesPath(cat, sch)+"/a%40b", nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET .../tables/a%%40b: status %d, want 200: %s", r.status, r.raw)
		}
		if got := dig(r.body, "metadata", "table-uuid"); got != id {
			t.Fatalf("table-uuid %v, want %s", got, id)
		}
	})

	t.Run("delta head", func(t *testing.T) {
		a := a.with(t)
		if r := a.do(http.MethodHead, tablesPath(cat, sch)+"/a%40b", nil); r.status != http.StatusNoContent {
			t.Fatalf("HEAD .../tables/a%%40b: status %d, want 204", r.status)
		}
	})

	t.Run("delta commit", func(t *testing.T) {
		a := a.with(t)
		r := a.do(http.MethodPost, tablesPath(cat, sch)+"/a%40b", map[string]any{
			"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": id}}, "updates": []any{commit(1)}})
		if r.status != http.StatusOK {
			t.Fatalf("POST .../tables/a%%40b: status %d, want 200: %s", r.status, r.raw)
		}
	})

	t.Run("uc table", func(t *testing.T) {
		a := a.with(t)
		r := a.do(http.MethodGet, apiPrefix+"/tables/"+cat+"."+sch+".a%40b", nil)
		if r.status != http.StatusOK || dig(r.body, "table_id") != id {
			t.Fatalf("GET /tables/...a%%40b: status %d, want 200: %s", r.status, r.raw)
		}
	})

	t.Run("uc catalog", func(t *testing.T) {
		a := a.with(t)
		r := a.do(http.MethodGet, apiPrefix+"/catalogs/%75nity", nil)
		if r.status != http.StatusOK || dig(r.body, "name") != "unity" {
			t.Fatalf("GET /catalogs/%%75nity: status %d, want 200: %s", r.status, r.raw)
		}
	})
}

// Name rules are the same on every protocol (docs/compatibility.md,
// "Names"): at most 255 characters, and names are case-sensitive and kept
// as written, as in Unity Catalog's reference server: a lookup must spell
// the name as created, and "events" may not be created beside "Events".
func TestFastNameRulesSameOnEveryProtocol(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	const tooLong = "Name cannot be longer than 255 characters"
	long := strings.Repeat("n", 256)
	ucErr(t, a.do(http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": long}), 400, "INVALID_ARGUMENT", tooLong)
	ucErr(t, a.do(http.MethodPost, apiPrefix+"/schemas", map[string]any{"name": long, "catalog_name": "unity"}), 400, "INVALID_ARGUMENT", tooLong)
	deltaErr(t, a.do(http.MethodPost, stagingPath("unity", "default"), map[string]any{"name": long}), 400, "InvalidParameterValueException", tooLong)
	a.ok(200, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": strings.Repeat("n", 255)})

	cat, sch := a.newSchema()
	mixed := "Mixed_" + sch
	a.createManaged(cat, sch, mixed)
	if r := a.do(http.MethodGet, apiPrefix+"/tables/"+cat+"."+sch+"."+mixed, nil); r.status != 200 || dig(r.body, "name") != mixed {
		t.Fatalf("UC REST GET %s: status %d, name %v: %s", mixed, r.status, dig(r.body, "name"), r.raw)
	}
	lower := strings.ToLower(mixed)
	ucErr(t, a.do(http.MethodGet, apiPrefix+"/tables/"+cat+"."+sch+"."+lower, nil), 404, "NOT_FOUND")
	deltaErr(t, a.do(http.MethodGet, tablePath(cat, sch, lower), nil), 404, "NoSuchTableException")
	// The other spelling is not another name to create beside it: a name
	// differing only in case from a sibling's is refused.
	deltaErr(t, a.do(http.MethodPost, stagingPath(cat, sch), map[string]any{"name": lower}), 409, "AlreadyExistsException",
		"differs only in case")
	upperCat := "Cat_" + sch
	a.ok(200, http.MethodPost, apiPrefix+"/catalogs", map[string]any{"name": upperCat})
	if r := a.do(http.MethodGet, apiPrefix+"/catalogs/"+upperCat, nil); dig(r.body, "name") != upperCat {
		t.Fatalf("catalog name not kept as written: %s", r.raw)
	}
	deltaErr(t, a.do(http.MethodPost, stagingPath(strings.ToLower(upperCat), "default"), map[string]any{"name": "t"}), 404, "NoSuchCatalogException")
}
